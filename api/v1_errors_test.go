package api_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/api/middleware"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

func TestV1BadRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := seedWorld(e.fx)
	stripe := e.fx.Connection(w.a.ID, "stripe", "active")
	key := e.fx.Key(w.a.ID, nil)
	conn := "bankConnectionId=" + w.connA1.String()
	tx := "/v1/transactions?" + conn + "&startDate=2026-03-01&endDate=2026-03-31"
	stripeTx := "/v1/transactions?bankConnectionId=" + stripe.String() + "&startDate=2026-03-01&endDate=2026-03-31"
	tests := []struct{ path, message string }{
		{"/v1/transactions?startDate=2026-03-01&endDate=2026-03-31", "bankConnectionId: is required"},
		{"/v1/transactions?bankConnectionId=123&startDate=2026-03-01&endDate=2026-03-31", "bankConnectionId: must be a UUID"},
		{"/v1/transactions?" + conn + "&endDate=2026-03-31", "startDate: is required"},
		{"/v1/transactions?" + conn + "&startDate=2026-03-01", "endDate: is required"},
		{"/v1/transactions?" + conn + "&startDate=2026-13-01&endDate=2026-03-31", "startDate: must be YYYY-MM-DD"},
		{"/v1/transactions?" + conn + "&startDate=2026-03-01&endDate=03/31/2026", "endDate: must be YYYY-MM-DD"},
		{"/v1/transactions?" + conn + "&startDate=2026-03-02&endDate=2026-03-01", "endDate: must not be before startDate"},
		{tx + "&limit=251", "limit: must be an integer between 1 and 250"},
		{tx + "&limit=0", "limit: must be an integer between 1 and 250"},
		{tx + "&limit=ten", "limit: must be an integer between 1 and 250"},
		{tx + "&limit=1&limit=2", "limit: must be given at most once"},
		{tx + "&accountIds=abc", "accountIds: must be a comma-separated list of account ids"},
		{tx + "&accountIds=" + w.acctA1.String() + ",", "accountIds: must be a comma-separated list of account ids"},
		{tx + "&cursor=abc", "cursor: must be a non-negative integer offset taken from meta.nextPage"},
		{tx + "&cursor=-5", "cursor: must be a non-negative integer offset taken from meta.nextPage"},
		{stripeTx + "&cursor=25", "cursor: must be a transaction id taken from meta.nextPage"},
		{stripeTx + "&cursor=" + w.txA1[0].String(), "cursor: is not a transaction of this bank connection"},
		{"/v1/holdings", "bankConnectionId: is required"},
		{"/v1/holdings?bankConnectionId=nope", "bankConnectionId: must be a UUID"},
		{"/v1/holdings?" + conn + "&limit=1000", "limit: must be an integer between 1 and 250"},
		{"/v1/holdings?" + conn + "&cursor=1.5", "cursor: must be a non-negative integer offset taken from meta.nextPage"},
		{"/v1/investment-transactions?" + conn + "&startDate=yesterday", "startDate: must be YYYY-MM-DD"},
		{"/v1/investment-transactions?" + conn + "&endDate=2026-02-30", "endDate: must be YYYY-MM-DD"},
		{"/v1/investment-transactions", "bankConnectionId: is required"},
		{"/v1/accounts?connectionId=42", "connectionId: must be a UUID"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			r := e.get(tt.path, key)
			e.expect(r, http.StatusBadRequest, "BAD_REQUEST")
			if _, msg := v1Error(t, r); msg != tt.message {
				t.Fatalf("message %q, want %q", msg, tt.message)
			}
		})
	}
}

func TestV1ConnectionNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := seedWorld(e.fx)
	scoped := e.fx.Key(w.a.ID, []uuid.UUID{w.acctA1})
	dates := "&startDate=2026-03-01&endDate=2026-03-31"
	var bodies []string
	for _, conn := range []uuid.UUID{w.connB, w.connA2, uuid.New()} {
		for _, path := range []string{
			"/v1/transactions?bankConnectionId=" + conn.String() + dates,
			"/v1/holdings?bankConnectionId=" + conn.String(),
			"/v1/investment-transactions?bankConnectionId=" + conn.String(),
			"/v1/accounts?connectionId=" + conn.String(),
		} {
			r := e.get(path, scoped)
			e.expect(r, http.StatusNotFound, "NOT_FOUND")
			if _, msg := v1Error(t, r); msg != "Bank connection not found" {
				t.Fatalf("%s: message %q", path, msg)
			}
			bodies = append(bodies, string(r.body))
		}
	}
	for _, b := range bodies {
		if b != bodies[0] {
			t.Fatalf("404 bodies differ: %s vs %s", b, bodies[0])
		}
	}
	// The connection the scoped key reaches is served.
	e.expect(e.get("/v1/transactions?bankConnectionId="+w.connA1.String()+dates, scoped), http.StatusOK, "")
}

func TestV1ProviderServiceUnavailable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	u := e.fx.User(domain.PlanPro, true)
	conn := e.fx.Connection(u.ID, "plaid", "error")
	acct := e.fx.Account(u.ID, conn, "plaid", "brokerage")
	key := e.fx.Key(u.ID, nil)
	holdings := "/v1/holdings?bankConnectionId=" + conn.String()
	invest := "/v1/investment-transactions?bankConnectionId=" + conn.String()
	e.fx.Dataset(conn, "holdings", false, "unavailable")
	e.fx.Dataset(conn, "investment_transactions", false, "unavailable")
	e.expect(e.get(holdings, key), http.StatusBadGateway, "PROVIDER_SERVICE_UNAVAILABLE")
	e.expect(e.get(invest, key), http.StatusBadGateway, "PROVIDER_SERVICE_UNAVAILABLE")
	// A failure of another kind, or data stored once, serves what is stored.
	e.fx.Dataset(conn, "investment_transactions", false, "reauth_required")
	e.expect(e.get(invest, key), http.StatusOK, "")
	e.fx.Holding(u.ID, conn, acct, "AAPL")
	e.fx.Dataset(conn, "holdings", false, "unavailable")
	r := e.get(holdings, key)
	e.expect(r, http.StatusOK, "")
	if len(v1Rows(t, r, "holdings")) != 1 {
		t.Fatalf("stale holdings not served: %s", r.body)
	}
}

func TestV1InternalErrorInsideEndpoint(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := seedWorld(e.fx)
	key := e.fx.Key(w.a.ID, nil)
	if _, err := e.fx.Pool.Exec(t.Context(), `ALTER TABLE holdings RENAME TO holdings_gone`); err != nil {
		t.Fatal(err)
	}
	r := e.get("/v1/holdings?bankConnectionId="+w.connA1.String(), key)
	e.expect(r, http.StatusInternalServerError, "INTERNAL_ERROR")
	if _, msg := v1Error(t, r); msg != "Internal server error" {
		t.Fatalf("message %q leaks internals?", msg)
	}
	if r.header.Get("X-RateLimit-Limit") != "50" {
		t.Fatalf("rate-limit headers on an endpoint failure: %v", r.header)
	}
}

// middlewareBody is the {error, requestId, retryAfter} body.
type middlewareBody struct {
	Error      string `json:"error"`
	RequestID  string `json:"requestId"`
	RetryAfter *int64 `json:"retryAfter"`
}

// expectMiddlewareError checks a failure raised before the endpoint: the
// status, the exact error string, and a requestId equal to x-request-id.
func expectMiddlewareError(t *testing.T, r response, status int, message string) middlewareBody {
	t.Helper()
	var b middlewareBody
	if err := json.Unmarshal(r.body, &b); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
	if r.status != status || b.Error != message {
		t.Fatalf("got %d %s, want %d %q", r.status, r.body, status, message)
	}
	if _, err := uuid.Parse(b.RequestID); err != nil || b.RequestID != r.header.Get("x-request-id") {
		t.Fatalf("requestId %q, x-request-id %q", b.RequestID, r.header.Get("x-request-id"))
	}
	return b
}

func TestV1AuthenticationAndPlanErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pro := e.fx.User(domain.PlanPro, true)
	disabledID, disabled := e.fx.KeyWithID(pro.ID, nil, nil)
	if err := e.fx.St.DisableCredential(t.Context(), disabledID); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Minute)
	_, expired := e.fx.KeyWithID(pro.ID, nil, &past)
	keyFor := func(plan string, active bool) string {
		u := e.fx.User(plan, true)
		if _, err := e.fx.St.UpdateUser(t.Context(), u.ID, storage.UserUpdate{PlanActive: &active}); err != nil {
			t.Fatal(err)
		}
		return e.fx.Key(u.ID, nil)
	}
	tests := []struct {
		name, key string
		status    int
		message   string
	}{
		{"no header", "", 401, "Missing or invalid Authorization header"},
		{"malformed key", "not-a-key", 401, "Invalid API key"},
		{"unknown key", "fin_0123456789abcdefghijABCDEFGHIJ0123456789", 401, "Invalid API key"},
		{"disabled key", disabled, 401, "API key has been disabled"},
		{"expired key", expired, 401, "API key has expired"},
		{"no plan", keyFor(domain.PlanNone, true), 403, "API access requires active pro subscription or trial"},
		{"standard plan", keyFor(domain.PlanStandard, true), 403, "API access requires active pro subscription or trial"},
		{"canceled pro", keyFor(domain.PlanPro, false), 403, "API access requires active pro subscription or trial"},
		{"expired trial", keyFor(domain.PlanTrial, false), 403, "API access requires active pro subscription or trial"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, path := range []string{"/v1/accounts", "/v1/bank-connections", "/v1/transactions", "/v1/holdings"} {
				expectMiddlewareError(t, e.get(path, tt.key), tt.status, tt.message)
			}
		})
	}
	t.Run("basic scheme", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/v1/accounts", nil)
		req.SetBasicAuth("fin_x", "y")
		resp, err := e.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		expectMiddlewareError(t, response{resp.StatusCode, resp.Header, body}, 401, "Missing or invalid Authorization header")
	})
	for _, plan := range []string{domain.PlanPro, domain.PlanTrial} {
		t.Run("active "+plan, func(t *testing.T) {
			e.expect(e.get("/v1/accounts", keyFor(plan, true)), http.StatusOK, "")
		})
	}
}

func TestV1RoutingErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.get("/v1/nothing-here", "")
	e.expect(r, http.StatusNotFound, "NOT_FOUND")
	r = e.do(http.MethodPost, "/v1/accounts", "", nil)
	e.expect(r, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
	// Version 2 keeps its own envelopes.
	e.expect(e.get("/v2/nothing-here", ""), http.StatusNotFound, "NOT_FOUND")
}

// downEnv is the API over a database that has gone away.
type downEnv struct {
	srv    *httptest.Server
	client *http.Client
	key    string
}

func newDownEnv(t *testing.T) downEnv {
	t.Helper()
	pool, _ := storagetest.NewDB(t)
	fx := storagetest.NewFixtures(t, pool)
	key := fx.Key(fx.User(domain.PlanPro, true).ID, nil)
	pool.Close()
	a := api.MustNew(api.Config{Providers: all.NewRegistry().Profiles(),
		Store:     storage.New(pool),
		Log:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		CursorKey: []byte("test cursor key, 32 bytes long!!"),
		Auth:      middleware.DefaultAuthConfig(),
	})
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(srv.Close)
	v, _ := registryValidators(t)
	return downEnv{srv: srv, client: &http.Client{Transport: v.Transport(t, http.DefaultTransport)}, key: key}
}

func (d downEnv) get(t *testing.T, path, key string) response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, d.srv.URL+path, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, body}
}

func TestV1DatabaseDown(t *testing.T) {
	t.Parallel()
	d := newDownEnv(t)
	r := d.get(t, "/v1/health", "")
	if code, _ := v1Error(t, r); r.status != http.StatusServiceUnavailable || code != "SERVICE_UNAVAILABLE" {
		t.Fatalf("health with the database down: %d %s", r.status, r.body)
	}
	// Authentication cannot look the key up: shape 2 with "Internal error".
	expectMiddlewareError(t, d.get(t, "/v1/accounts", d.key), http.StatusInternalServerError, "Internal error")
}

func TestV1RateLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := seedWorld(e.fx)
	key := e.fx.Key(w.a.ID, nil)
	tx := "/v1/transactions?bankConnectionId=" + w.connA1.String() + "&startDate=2026-03-01&endDate=2026-03-31"
	start := time.Now()
	for i := 0; i < 50; i++ {
		r := e.get(tx, key)
		e.expect(r, http.StatusOK, "")
		if r.header.Get("X-RateLimit-Limit") != "50" || r.header.Get("X-RateLimit-Remaining") != strconv.Itoa(49-i) {
			t.Fatalf("request %d headers: %v", i, r.header)
		}
		reset, err := strconv.ParseInt(r.header.Get("X-RateLimit-Reset"), 10, 64)
		if err != nil || reset < start.Unix() || reset > time.Now().Add(time.Hour).Unix()+1 {
			t.Fatalf("X-RateLimit-Reset %q", r.header.Get("X-RateLimit-Reset"))
		}
	}
	r := e.get(tx, key)
	b := expectMiddlewareError(t, r, http.StatusTooManyRequests, "Rate limit exceeded")
	// One request comes back every 72 s (50 per hour); retryAfter is epoch ms.
	now := time.Now().UnixMilli()
	if b.RetryAfter == nil || *b.RetryAfter < now+60_000 || *b.RetryAfter > now+73_000 {
		t.Fatalf("retryAfter %v, now %d", b.RetryAfter, now)
	}
	if r.header.Get("X-RateLimit-Remaining") != "0" || r.header.Get("X-RateLimit-Limit") != "50" {
		t.Fatalf("429 headers %v", r.header)
	}

	// Each data endpoint has its own hourly budget; the rest use the plan's per-minute one.
	r = e.get("/v1/holdings?bankConnectionId="+w.connA1.String(), key)
	e.expect(r, http.StatusOK, "")
	if r.header.Get("X-RateLimit-Limit") != "50" || r.header.Get("X-RateLimit-Remaining") != "49" {
		t.Fatalf("holdings budget %v", r.header)
	}
	r = e.get("/v1/investment-transactions?bankConnectionId="+w.connA1.String(), key)
	if r.header.Get("X-RateLimit-Remaining") != "49" {
		t.Fatalf("investment transactions budget %v", r.header)
	}
	r = e.get("/v1/accounts", key)
	e.expect(r, http.StatusOK, "")
	if r.header.Get("X-RateLimit-Limit") != "1000" {
		t.Fatalf("pro general budget %v", r.header)
	}
	trial := e.fx.User(domain.PlanTrial, true)
	r = e.get("/v1/bank-connections", e.fx.Key(trial.ID, nil))
	e.expect(r, http.StatusOK, "")
	if r.header.Get("X-RateLimit-Limit") != "200" || r.header.Get("X-RateLimit-Remaining") != "199" {
		t.Fatalf("trial general budget %v", r.header)
	}
	// Another user's hourly budget is untouched.
	other := e.fx.Key(w.b.ID, nil)
	r = e.get("/v1/transactions?bankConnectionId="+w.connB.String()+"&startDate=2026-03-01&endDate=2026-03-31", other)
	e.expect(r, http.StatusOK, "")
	// Health is public: no rate-limit headers; every response has a request id.
	r = e.get("/v1/health", "")
	if r.header.Get("X-RateLimit-Limit") != "" {
		t.Fatalf("health has rate-limit headers %v", r.header)
	}
	if _, err := uuid.Parse(r.header.Get("x-request-id")); err != nil {
		t.Fatalf("x-request-id %q", r.header.Get("x-request-id"))
	}
}

func TestV1FailedAuthenticationThrottle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	bad := "fin_0123456789abcdefghijABCDEFGHIJ0123456789"
	for i := 0; i < middleware.DefaultAuthConfig().FailureBurst; i++ {
		expectMiddlewareError(t, e.get("/v1/accounts", bad), http.StatusUnauthorized, "Invalid API key")
	}
	r := e.get("/v1/accounts", bad)
	b := expectMiddlewareError(t, r, http.StatusTooManyRequests, "Rate limit exceeded")
	if b.RetryAfter == nil || *b.RetryAfter <= time.Now().UnixMilli() {
		t.Fatalf("retryAfter %v", b.RetryAfter)
	}
}
