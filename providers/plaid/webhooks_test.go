package plaid_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/plaid"
	"github.com/finsync/finsync/providers/providertest"
	"github.com/finsync/finsync/providers/sim"
)

// TestReadWebhookKinds: what each Plaid webhook asks of finsync, from its
// body alone; a PENDING_DISCONNECT or PENDING_EXPIRATION without a time
// is taken to end seven days on, as Plaid sends them seven days ahead.
func TestReadWebhookKinds(t *testing.T) {
	a := plaid.New(nil).(providers.WebhookReceiver)
	for _, c := range []struct {
		body string
		kind domain.NoticeKind
		ends string
	}{
		{`{"webhook_type":"TRANSACTIONS","webhook_code":"SYNC_UPDATES_AVAILABLE","item_id":"it"}`, domain.NoticeSync, ""},
		{`{"webhook_type":"ITEM","webhook_code":"PENDING_EXPIRATION","item_id":"it","consent_expiration_time":"2026-12-01T10:00:00Z"}`, domain.NoticeConsent, "2026-12-01T10:00:00Z"},
		{`{"webhook_type":"ITEM","webhook_code":"PENDING_DISCONNECT","item_id":"it","reason":"INSTITUTION_MIGRATION","disconnect_time":"2026-12-02T10:00:00Z"}`, domain.NoticeConsent, "2026-12-02T10:00:00Z"},
		{`{"webhook_type":"ITEM","webhook_code":"PENDING_DISCONNECT","item_id":"it","reason":"INSTITUTION_MIGRATION"}`, domain.NoticeConsent, "week"},
		{`{"webhook_type":"ITEM","webhook_code":"ERROR","item_id":"it","error":{"error_code":"ITEM_LOGIN_REQUIRED","error_message":"m"}}`, domain.NoticeReauth, ""},
		{`{"webhook_type":"ITEM","webhook_code":"ERROR","item_id":"it","error":{"error_code":"INSTITUTION_DOWN","error_message":"m"}}`, domain.NoticeIgnored, ""},
		{`{"webhook_type":"ITEM","webhook_code":"USER_PERMISSION_REVOKED","item_id":"it"}`, domain.NoticeReauth, ""},
		{`{"webhook_type":"ITEM","webhook_code":"LOGIN_REPAIRED","item_id":"it"}`, domain.NoticeRepaired, ""},
		{`{"webhook_type":"HOLDINGS","webhook_code":"DEFAULT_UPDATE","item_id":"it"}`, domain.NoticeIgnored, ""},
	} {
		n, err := a.ReadWebhook(nil, []byte(c.body))
		if err != nil || n.Kind != c.kind || n.LinkID != "it" {
			t.Errorf("%s: %+v %v, want kind %s", c.body, n, err, c.kind)
			continue
		}
		switch c.ends {
		case "":
		case "week":
			if d := time.Until(n.ConsentExpiresAt); d < 6*24*time.Hour || d > 8*24*time.Hour {
				t.Errorf("%s: ends %v, want about a week on", c.body, n.ConsentExpiresAt)
			}
		default:
			if n.ConsentExpiresAt.UTC().Format(time.RFC3339) != c.ends {
				t.Errorf("%s: ends %v, want %s", c.body, n.ConsentExpiresAt, c.ends)
			}
		}
	}
	for _, bad := range []string{`not json`, `{}`, `{"webhook_type":"ITEM"}`, `{"webhook_type":"ITEM","webhook_code":"PENDING_EXPIRATION","item_id":"it","consent_expiration_time":"soon"}`} {
		if _, err := a.ReadWebhook(nil, []byte(bad)); !errors.Is(err, domain.ErrNoticeRefused) {
			t.Errorf("%s: %v, want a refusal", bad, err)
		}
	}
}

// TestKeyFetchFailureIsNotRemembered: a connection whose API keys Plaid
// refuses cannot check a notification (an error that is no refusal), and
// leaves nothing behind: a healthy connection checks the same key id
// right after.
func TestKeyFetchFailureIsNotRemembered(t *testing.T) {
	sm := allsim.New(sim.Options{Seed: 3, Start: providertest.Start})
	srv := httptest.NewServer(sm)
	defer srv.Close()
	var mu sync.Mutex
	var got []http.Header
	var bodies [][]byte
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, bodies = append(got, r.Header.Clone()), append(bodies, b)
		mu.Unlock()
	}))
	defer hook.Close()
	if err := sm.SetWebhookURL("plaid", hook.URL); err != nil {
		t.Fatal(err)
	}
	creds := allsim.Credentials("plaid", "keys")
	var c map[string]string
	_ = json.Unmarshal(creds, &c)
	body, _ := json.Marshal(map[string]string{"client_id": c["client_id"], "secret": c["secret"], "access_token": c["access_token"], "webhook_code": "SYNC_UPDATES_AVAILABLE"})
	resp, err := http.Post(srv.URL+"/sandbox/item/fire_webhook", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no webhook sent")
		}
		time.Sleep(20 * time.Millisecond)
	}
	a := plaid.New(nil).(providers.WebhookReceiver)
	ctx := context.Background()
	broken := providers.Connection{Provider: "plaid", BaseURL: srv.URL,
		Credentials: json.RawMessage(`{"client_id":"` + c["client_id"] + `","secret":"x","access_token":"` + c["access_token"] + `"}`)}
	err = a.VerifyWebhook(ctx, broken, got[0], bodies[0], time.Now())
	if err == nil || errors.Is(err, domain.ErrNoticeRefused) {
		t.Fatalf("check with refused API keys: %v, want an error that is no refusal", err)
	}
	healthy := providers.Connection{Provider: "plaid", BaseURL: srv.URL, Credentials: creds}
	if err := a.VerifyWebhook(ctx, healthy, got[0], bodies[0], time.Now()); err != nil {
		t.Fatalf("a healthy connection's check after the broken one's: %v", err)
	}
}
