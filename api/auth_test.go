package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
)

const unauthorizedBody = `{"error":"Missing or invalid Authorization header"}`

func TestAuthFailures(t *testing.T) {
	e := newEnv(t)
	u := e.fx.User(domain.PlanStandard, true)
	disabledID, disabled := e.fx.KeyWithID(u.ID, nil, nil)
	if err := e.fx.St.DisableCredential(t.Context(), disabledID); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Minute)
	_, expired := e.fx.KeyWithID(u.ID, nil, &past)
	tests := map[string]string{
		"no header":         "",
		"malformed":         "not-a-key",
		"wrong prefix":      "sk_live_0123456789abcdefghijABCDEFGHIJ0123",
		"unknown key":       "fin_0123456789abcdefghijABCDEFGHIJ0123456789",
		"disabled key":      disabled,
		"expired key":       expired,
		"key with symbols!": "fin_0123456789abcdefghij!BCDEFGHIJ0123456789",
	}
	for name, key := range tests {
		t.Run(name, func(t *testing.T) {
			r := e.get("/v2/me", key)
			if r.status != http.StatusUnauthorized || string(r.body) != unauthorizedBody {
				t.Fatalf("got %d %s", r.status, r.body)
			}
			if _, err := uuid.Parse(r.header.Get("x-request-id")); err != nil {
				t.Fatalf("x-request-id %q", r.header.Get("x-request-id"))
			}
		})
	}
	t.Run("basic scheme", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/v2/me", nil)
		req.SetBasicAuth("fin_x", "y")
		resp, err := e.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
}

func TestDisabledKeyStopsWithinASecond(t *testing.T) {
	e := newEnv(t)
	u := e.fx.User(domain.PlanPro, true)
	id, key := e.fx.KeyWithID(u.ID, nil, nil)
	e.expect(e.get("/v2/me", key), http.StatusOK, "")
	e.expect(e.get("/v2/me", key), http.StatusOK, "") // now cached
	if err := e.fx.St.DisableCredential(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Second)
	for {
		r := e.get("/v2/me", key)
		if r.status == http.StatusUnauthorized {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("disabled key still works after 1s: %d", r.status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestOAuthToken(t *testing.T) {
	e := newEnv(t)
	u := e.fx.User(domain.PlanPro, true)
	ic, err := e.fx.St.IssueCredential(t.Context(), storage.NewCredential{UserID: u.ID, Kind: storage.CredentialOAuthToken, AppName: "budget app"})
	if err != nil {
		t.Fatal(err)
	}
	r := e.get("/v2/me", ic.Secret)
	e.expect(r, http.StatusOK, "")
	if r.json(t)["userId"] != u.ID.String() {
		t.Fatalf("me: %s", r.body)
	}
}

func TestPlanAndStorageModeGates(t *testing.T) {
	e := newEnv(t)
	keyFor := func(plan string, active, storageMode bool) string {
		u := e.fx.User(plan, false)
		key := e.fx.Key(u.ID, nil) // issuing turns storage mode on
		if _, err := e.fx.St.UpdateUser(t.Context(), u.ID, storage.UserUpdate{PlanActive: &active, StorageMode: &storageMode}); err != nil {
			t.Fatal(err)
		}
		return key
	}
	tests := []struct {
		name                string
		plan                string
		active, storageMode bool
		status              int
		code                string
	}{
		{"standard", domain.PlanStandard, true, true, 200, ""},
		{"pro", domain.PlanPro, true, true, 200, ""},
		{"no plan", domain.PlanNone, true, true, 403, "SUBSCRIPTION_REQUIRED"},
		{"trial is not enough for v2", domain.PlanTrial, true, true, 403, "SUBSCRIPTION_REQUIRED"},
		{"canceled standard", domain.PlanStandard, false, true, 403, "SUBSCRIPTION_REQUIRED"},
		{"storage mode off", domain.PlanStandard, true, false, 403, "STORAGE_MODE_REQUIRED"},
		{"subscription checked before storage mode", domain.PlanNone, true, false, 403, "SUBSCRIPTION_REQUIRED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := keyFor(tt.plan, tt.active, tt.storageMode)
			for _, path := range []string{"/v2/me", "/v2/accounts", "/v2/transactions"} {
				e.expect(e.get(path, key), tt.status, tt.code)
			}
		})
	}
}

func TestIssuingAKeyEnablesStorageMode(t *testing.T) {
	e := newEnv(t)
	u := e.fx.User(domain.PlanStandard, false)
	key := e.fx.Key(u.ID, nil)
	r := e.get("/v2/me", key)
	e.expect(r, http.StatusOK, "")
	if r.json(t)["storageMode"] != true {
		t.Fatalf("storage mode: %s", r.body)
	}
}
