package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/api/openapi/openapitest"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/storage/storagetest"
)

func TestParseLimit(t *testing.T) {
	tests := []struct {
		in      string
		want    int
		wantErr bool
	}{
		{"", 50, false},
		{"1", 1, false},
		{"250", 250, false},
		{"0", 0, true},
		{"251", 0, true},
		{"-3", 0, true},
		{"ten", 0, true},
	}
	for _, tt := range tests {
		got, err := parseLimit(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseLimit(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

// page is the part of a listing body the tests compare.
type page struct {
	Transactions []map[string]any `json:"transactions"`
	PageInfo     struct {
		NextCursor *string `json:"nextCursor"`
		HasMore    bool    `json:"hasMore"`
	} `json:"pageInfo"`
}

func get(t *testing.T, h http.Handler, v *openapitest.Validator, key, target string) (int, page) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body, _ := io.ReadAll(rec.Result().Body)
	if v != nil {
		// The baseline has no request ids or rate limits: supply their
		// headers so that the check is about the status and body.
		h := rec.Header().Clone()
		h.Set("X-Request-Id", "00000000-0000-4000-8000-000000000000")
		h.Set("X-RateLimit-Limit", "1000")
		h.Set("X-RateLimit-Remaining", "999")
		h.Set("X-RateLimit-Reset", "60")
		if err := v.Validate(req, rec.Code, h, body); err != nil {
			t.Errorf("%s: %v", target, err)
		}
	}
	var p page
	if rec.Code == http.StatusOK {
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatalf("%s: %v in %s", target, err, body)
		}
	}
	return rec.Code, p
}

func ids(p page) []string {
	out := make([]string, len(p.Transactions))
	for i, tx := range p.Transactions {
		out[i], _ = tx["id"].(string)
	}
	return out
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestNaiveMatchesRealServer checks that the baseline answers the default
// listing with the real server's rows, order, fields and page flags, and
// refuses what the real server refuses.
func TestNaiveMatchesRealServer(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	f := storagetest.NewFixtures(t, pool)
	u := f.User(domain.PlanPro, true)
	conn := f.Connection(u.ID, "plaid", "active")
	acct := f.Account(u.ID, conn, "plaid", "Checking")
	day := func(d int) time.Time { return time.Date(2026, 3, d, 0, 0, 0, 0, time.UTC) }
	f.Transactions(u.ID, conn, acct, "plaid", []storagetest.Tx{
		{Date: day(1)}, {Date: day(2)}, {Date: day(3), Status: domain.TxPending}, {Date: day(4), Hidden: true},
		{Date: day(5)}, {Date: day(5)}, {Date: day(6), Amount: "1500.05"},
	})
	key := f.Key(u.ID, nil)
	unpaid := f.User(domain.PlanNone, true)
	unpaidKey := f.Key(unpaid.ID, nil)

	naive := &handler{pool: pool}
	provs := all.NewRegistry().Profiles()
	real := api.MustNew(api.Config{Providers: provs, Store: f.St, Log: slog.New(slog.DiscardHandler), CursorKey: []byte("0123456789abcdef0123456789abcdef")}).Handler
	v := openapitest.New(t, openapitest.V2(t, provs))

	tests := []struct {
		name, key, target string
		status            int
		rows              int
		hasMore           bool
	}{
		{"first page", key, "/v2/transactions?limit=2", http.StatusOK, 2, true},
		{"whole listing", key, "/v2/transactions", http.StatusOK, 5, false},
		{"exact page", key, "/v2/transactions?limit=5", http.StatusOK, 5, false},
		{"no key", "", "/v2/transactions", http.StatusUnauthorized, 0, false},
		{"unknown key", "fin_0123456789abcdefghijklmnopqrstuvwxyzABCD", "/v2/transactions", http.StatusUnauthorized, 0, false},
		{"no plan", unpaidKey, "/v2/transactions", http.StatusForbidden, 0, false},
		{"bad limit", key, "/v2/transactions?limit=251", http.StatusBadRequest, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			realStatus, realPage := get(t, real, nil, tt.key, tt.target)
			status, p := get(t, naive, v, tt.key, tt.target)
			if status != tt.status || realStatus != tt.status {
				t.Fatalf("status naive %d, real %d; want %d", status, realStatus, tt.status)
			}
			if len(p.Transactions) != tt.rows || p.PageInfo.HasMore != tt.hasMore || (p.PageInfo.NextCursor != nil) != tt.hasMore {
				t.Errorf("naive: %d rows, hasMore %v, cursor %v; want %d rows, hasMore %v", len(p.Transactions), p.PageInfo.HasMore, p.PageInfo.NextCursor, tt.rows, tt.hasMore)
			}
			if !slices.Equal(ids(p), ids(realPage)) || p.PageInfo.HasMore != realPage.PageInfo.HasMore {
				t.Errorf("naive rows %v (more %v), real rows %v (more %v)", ids(p), p.PageInfo.HasMore, ids(realPage), realPage.PageInfo.HasMore)
			}
			for i := range p.Transactions {
				if got, want := keys(p.Transactions[i]), keys(realPage.Transactions[i]); !slices.Equal(got, want) {
					t.Errorf("row %d fields %v, real server's %v", i, got, want)
				}
			}
		})
	}
}
