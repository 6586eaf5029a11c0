package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/api/middleware"
	v2 "github.com/finsync/finsync/api/v2"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// FuzzV2Writes sends arbitrary bodies to every v2 operation that takes one,
// through the real router over HTTP against real PostgreSQL: the answer is
// a success or a 4xx following the document, never a 5xx or a panic. Its
// seed corpus (valid bodies and the hostile values of hostile_cases_test.go)
// runs with every `go test`; `go test -fuzz FuzzV2Writes ./api` explores.
func FuzzV2Writes(f *testing.F) {
	srv, own, key, logs := newFuzzServer(f)
	targets := []struct{ method, path string }{
		{http.MethodPost, "/v2/accounts"},
		{http.MethodPatch, "/v2/accounts/" + own.manualAccount.String()},
		{http.MethodPost, "/v2/categories"},
		{http.MethodPatch, "/v2/categories/" + own.category.String()},
		{http.MethodPatch, "/v2/transactions/" + own.transaction.String()},
		{http.MethodPost, "/v2/rules"},
		{http.MethodPatch, "/v2/rules/" + own.rule.String()},
	}
	seeds := []string{
		`{"name":"Cash","type":"cash","currency":"USD","currentBalance":12.5}`,
		`{"name":"Loan","type":"loan","currency":"EUR","liability":{"type":"student","aprs":[{"aprType":"p","aprPercentage":4.5}]}}`,
		`{"name":"Tea","group":"Food","description":"d"}`,
		`{"categoryId":"` + own.category.String() + `"}`,
		`{"priority":5,"conditions":[{"field":"Amount","operator":"between","value":[-10.5,20]}],` +
			`"outcomes":[{"action":"updateTransaction","field":"MerchantName","value":"x"}]}`,
	}
	for _, v := range hostileJSONValues() {
		seeds = append(seeds, `{"name":`+v+`,"type":"cash","currency":"USD"}`, `{"currentBalance":`+v+`}`,
			`{"priority":1,"conditions":[{"field":"Summary","operator":"contains","value":`+v+`}],`+
				`"outcomes":[{"action":"hideTransaction","value":true}]}`)
	}
	seeds = append(seeds, wholeBodies([]byte(seeds[0]))...)
	for i, s := range seeds {
		f.Add(uint8(i), []byte(s))
	}
	v1doc, v2doc := registryValidators(f)
	f.Fuzz(func(t *testing.T, target uint8, body []byte) {
		tg := targets[int(target)%len(targets)]
		client := &http.Client{Transport: versionTransport{
			v1: v1doc.Transport(t, http.DefaultTransport), v2: v2doc.Transport(t, http.DefaultTransport),
		}}
		req, err := http.NewRequestWithContext(context.Background(), tg.method, srv.URL+tg.path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 500 {
			t.Fatalf("%s %s with %q: status %d", tg.method, tg.path, short(string(body)), resp.StatusCode)
		}
		if n := logs.count("panic"); n > 0 {
			t.Fatalf("%d handler panics", n)
		}
	})
}

// newFuzzServer is a real API over a fresh database for a fuzz target,
// with a caller whose own ids the targets use.
func newFuzzServer(f *testing.F) (*httptest.Server, ownIDs, string, *logCounter) {
	f.Helper()
	pool, _ := storagetest.NewDB(f)
	logs := &logCounter{}
	a := api.MustNew(api.Config{Providers: all.NewRegistry().Profiles(),
		Store:     storage.New(pool),
		Log:       slog.New(logs),
		CursorKey: []byte("test cursor key, 32 bytes long!!"),
		Auth:      middleware.DefaultAuthConfig(),
		Plans:     v2.PlanLimits{domain.PlanPro: 1 << 30},
	})
	ctx, cancel := context.WithCancel(context.Background())
	go a.Run(ctx)
	srv := httptest.NewServer(a.Handler)
	f.Cleanup(func() { srv.Close(); cancel() })

	fx := storagetest.NewFixtures(f, pool)
	u := fx.User(domain.PlanPro, true)
	key := fx.Key(u.ID, nil)
	var own ownIDs
	own.connection = fx.Connection(u.ID, "plaid", "active")
	own.account = fx.Account(u.ID, own.connection, "plaid", "Checking")
	own.category = fx.Category(u.ID, "Coffee", "Food")
	own.transaction = fx.Transactions(u.ID, own.connection, own.account, "plaid",
		[]storagetest.Tx{{Date: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}})[0]
	own.manualAccount = createForFuzz(f, srv, key, "/v2/accounts", `{"name":"Cash","type":"cash","currency":"USD"}`, "account")
	own.rule = createForFuzz(f, srv, key, "/v2/rules", `{"priority":1,"conditions":[{"field":"Summary",`+
		`"operator":"contains","value":"tea"}],"outcomes":[{"action":"hideTransaction","value":true}]}`, "")
	return srv, own, key, logs
}

// createForFuzz posts a body and returns the id of the created object (in
// the named member of the response, or the response itself).
func createForFuzz(f *testing.F, srv *httptest.Server, key, path, body, member string) uuid.UUID {
	f.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		f.Fatalf("POST %s: %d %s", path, resp.StatusCode, raw)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		f.Fatalf("POST %s: %v", path, err)
	}
	if member != "" {
		m, _ = m[member].(map[string]any)
	}
	return mustUUID(f, m["id"])
}
