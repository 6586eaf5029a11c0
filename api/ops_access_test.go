package api_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/api/middleware"
	"github.com/finsync/finsync/api/ops"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// otherOpsToken is a second operator token (32 random bytes in hex), for
// a rotation.
const otherOpsToken = "f0f3c5223fa8507e1505f322ce856866007a6d5548237e71e9c127baebfa444d"

// opsFleet is several serve processes (separate memory) with the ops
// console on one database, behind a trusted proxy (the loopback address
// the tests connect from), so that X-Forwarded-For names the client.
type opsFleet struct {
	t    *testing.T
	pool *pgxpool.Pool
}

func newOpsFleet(t *testing.T) *opsFleet {
	t.Helper()
	pool, _ := storagetest.NewDB(t)
	return &opsFleet{t: t, pool: pool}
}

// instance starts one more serve process with the console built from cfg
// (Token defaults to testOpsToken) and returns its URL.
func (f *opsFleet) instance(cfg ops.Config) string {
	f.t.Helper()
	if cfg.Token == "" {
		cfg.Token = testOpsToken
	}
	st := storage.New(f.pool)
	a := api.MustNew(api.Config{Providers: all.NewRegistry().Profiles(),
		Store:          st,
		Log:            slog.New(slog.NewTextHandler(io.Discard, nil)),
		CursorKey:      []byte("test cursor key, 32 bytes long!!"),
		Auth:           middleware.DefaultAuthConfig(),
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		Ops:            newConsole(f.t, st, cfg),
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.Run(ctx) }()
	srv := httptest.NewServer(a.Handler)
	f.t.Cleanup(func() { srv.Close(); cancel(); <-done })
	return srv.URL
}

// opsReply is an answer of the console.
type opsReply struct {
	status int
	header http.Header
	body   string
}

// retryAfter is the answer's Retry-After in seconds, 0 when absent or not
// a number.
func (r opsReply) retryAfter() int {
	n, _ := strconv.Atoi(r.header.Get("Retry-After"))
	return n
}

// opsSend sends a request to the console at base without following
// redirects; each opt sets something on it.
func opsSend(t *testing.T, base, method, path string, form url.Values, opts ...func(*http.Request)) opsReply {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, o := range opts {
		o(req)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return opsReply{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// from makes the request come from a client address, as the trusted proxy
// reports it.
func from(addr string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("X-Forwarded-For", addr) }
}

// signIn signs in at base from addr and returns the session cookie value.
func signIn(t *testing.T, base, addr, token string) string {
	t.Helper()
	r := opsSend(t, base, http.MethodPost, "/ops/sign-in", url.Values{"token": {token}}, from(addr))
	if r.status != http.StatusSeeOther {
		t.Fatalf("sign in at %s from %s: %d %.200s", base, addr, r.status, r.body)
	}
	return strings.TrimPrefix(strings.Split(r.header.Get("Set-Cookie"), ";")[0], "finsync_ops=")
}

// slowRefill is a refill so slow that no failure budget comes back during
// a test.
const slowRefill = 0.01

// TestOpsFailuresThrottledPerAddressAcrossInstances: wrong tokens from one
// address, as bearer tokens and at sign-in, on two serve processes add up:
// past the address's budget both answer 429 with Retry-After, without
// comparing the token (the right one gets 429 too), while the right token
// from another address works on both.
func TestOpsFailuresThrottledPerAddressAcrossInstances(t *testing.T) {
	f := newOpsFleet(t)
	cfg := ops.Config{Throttle: ops.Throttle{PerAddressBurst: 4, PerAddressPerMinute: slowRefill, GlobalBurst: 1000, GlobalPerMinute: slowRefill}}
	a, b := f.instance(cfg), f.instance(cfg)
	const guesser, operator = "203.0.113.7", "198.51.100.20"
	wrong := testOpsToken[:60] + "0000"
	for i, base := range []string{a, b, a, b} {
		var r opsReply
		if i%2 == 0 {
			r = opsSend(t, base, http.MethodGet, "/ops", nil, from(guesser), bearer(wrong))
		} else {
			r = opsSend(t, base, http.MethodPost, "/ops/sign-in", url.Values{"token": {wrong}}, from(guesser))
		}
		if r.status != http.StatusUnauthorized {
			t.Fatalf("wrong token %d (instance %d): %d %.200s, want 401 within the budget", i+1, i%2+1, r.status, r.body)
		}
	}
	for name, base := range map[string]string{"instance 1": a, "instance 2": b} {
		for what, r := range map[string]opsReply{
			"a wrong bearer token": opsSend(t, base, http.MethodGet, "/ops/jobs/api/jobs", nil, from(guesser), bearer(wrong)),
			"a wrong sign-in":      opsSend(t, base, http.MethodPost, "/ops/sign-in", url.Values{"token": {wrong}}, from(guesser)),
			"the right token":      opsSend(t, base, http.MethodGet, "/ops", nil, from(guesser), bearer(testOpsToken)),
			"the right sign-in":    opsSend(t, base, http.MethodPost, "/ops/sign-in", url.Values{"token": {testOpsToken}}, from(guesser)),
		} {
			if r.status != http.StatusTooManyRequests || r.retryAfter() < 1 {
				t.Errorf("%s from the throttled address on %s: %d, Retry-After %q; want 429 with Retry-After", what, name, r.status, r.header.Get("Retry-After"))
			}
			if r.header.Get("Set-Cookie") != "" {
				t.Errorf("%s from the throttled address on %s set a cookie", what, name)
			}
		}
		if r := opsSend(t, base, http.MethodPost, "/ops/sign-in", url.Values{"token": {wrong}}, from(guesser)); !strings.Contains(r.body, `name="token"`) ||
			!strings.Contains(r.body, "Too many failed attempts") {
			t.Errorf("throttled sign-in on %s is not the sign-in form saying why: %.300s", name, r.body)
		}
		if r := opsSend(t, base, http.MethodGet, "/ops", nil, from(operator), bearer(testOpsToken)); r.status != http.StatusOK {
			t.Errorf("the right bearer token from another address on %s: %d %.200s", name, r.status, r.body)
		}
		signIn(t, base, operator, testOpsToken)
	}
	// Without a trusted proxy's header the peer itself is the address: the
	// test's loopback address has failed nothing.
	if r := opsSend(t, a, http.MethodGet, "/ops", nil, bearer(testOpsToken)); r.status != http.StatusOK {
		t.Fatalf("the right token from the peer's own address: %d", r.status)
	}
}

// TestOpsIPv6AddressesThrottledPerNetwork: IPv6 clients are budgeted per
// /64 (a guesser holding one has 2^64 addresses), and an IPv4-mapped IPv6
// address counts as its IPv4 address.
func TestOpsIPv6AddressesThrottledPerNetwork(t *testing.T) {
	f := newOpsFleet(t)
	base := f.instance(ops.Config{Throttle: ops.Throttle{PerAddressBurst: 2, PerAddressPerMinute: slowRefill, GlobalBurst: 1000, GlobalPerMinute: slowRefill}})
	try := func(addr, token string) int {
		return opsSend(t, base, http.MethodGet, "/ops", nil, from(addr), bearer(token)).status
	}
	for _, c := range []struct {
		addr, token string
		want        int
	}{
		{"2001:db8:1:2::1", otherOpsToken, http.StatusUnauthorized},
		{"2001:db8:1:2:ffff:ffff:ffff:fffe", otherOpsToken, http.StatusUnauthorized},
		{"2001:db8:1:2::77", testOpsToken, http.StatusTooManyRequests},
		{"2001:db8:1:3::1", testOpsToken, http.StatusOK},
		{"203.0.113.50", otherOpsToken, http.StatusUnauthorized},
		{"::ffff:203.0.113.50", otherOpsToken, http.StatusUnauthorized},
		{"203.0.113.50", testOpsToken, http.StatusTooManyRequests},
		{"203.0.113.51", testOpsToken, http.StatusOK},
	} {
		if got := try(c.addr, c.token); got != c.want {
			t.Errorf("from %s: %d, want %d", c.addr, got, c.want)
		}
	}
}

// TestOpsGlobalThrottleHoldsForManyAddresses: wrong tokens spread over
// many addresses, each far below its own budget, exhaust the global
// budget on both instances: then every token check answers 429, from any
// address, while a session made before keeps working.
func TestOpsGlobalThrottleHoldsForManyAddresses(t *testing.T) {
	f := newOpsFleet(t)
	cfg := ops.Config{Throttle: ops.Throttle{PerAddressBurst: 5, PerAddressPerMinute: slowRefill, GlobalBurst: 12, GlobalPerMinute: slowRefill}}
	a, b := f.instance(cfg), f.instance(cfg)
	session := signIn(t, a, "198.51.100.20", testOpsToken)
	wrong := otherOpsToken
	unauthorized := 0
	for i := 0; i < 40; i++ {
		base := []string{a, b}[i%2]
		r := opsSend(t, base, http.MethodGet, "/ops", nil, from("10.9."+strconv.Itoa(i/200)+"."+strconv.Itoa(i%200+1)), bearer(wrong))
		switch r.status {
		case http.StatusUnauthorized:
			unauthorized++
		case http.StatusTooManyRequests:
			if r.retryAfter() < 1 {
				t.Fatalf("429 without Retry-After: %v", r.header)
			}
		default:
			t.Fatalf("wrong token from address %d: %d", i, r.status)
		}
	}
	if unauthorized != 12 {
		t.Fatalf("%d of 40 wrong tokens from 40 addresses were compared, want the global budget's 12", unauthorized)
	}
	for name, base := range map[string]string{"instance 1": a, "instance 2": b} {
		if r := opsSend(t, base, http.MethodGet, "/ops", nil, from("192.0.2.99"), bearer(testOpsToken)); r.status != http.StatusTooManyRequests || r.retryAfter() < 1 {
			t.Errorf("a token check from a fresh address on %s while the global budget is spent: %d, want 429 with Retry-After", name, r.status)
		}
		if r := opsSend(t, base, http.MethodGet, "/ops", nil, from("192.0.2.99"), cookie(session)); r.status != http.StatusOK {
			t.Errorf("the session made before the flood on %s: %d", name, r.status)
		}
	}
}

// TestOpsSignOutEndsTheSessionEverywhere: a session made on one instance
// works on both; signing out on the other ends it on both for good, even
// though the browser (or a thief) keeps the cookie.
func TestOpsSignOutEndsTheSessionEverywhere(t *testing.T) {
	f := newOpsFleet(t)
	a, b := f.instance(ops.Config{}), f.instance(ops.Config{})
	session := signIn(t, a, "198.51.100.20", testOpsToken)
	other := signIn(t, b, "198.51.100.20", testOpsToken)
	var csrf string
	for _, base := range []string{a, b} {
		r := opsSend(t, base, http.MethodGet, "/ops", nil, cookie(session))
		m := csrfInput.FindStringSubmatch(r.body)
		if r.status != http.StatusOK || m == nil {
			t.Fatalf("the session on %s: %d", base, r.status)
		}
		csrf = m[1]
	}
	r := opsSend(t, b, http.MethodPost, "/ops/sign-out", url.Values{"csrf": {csrf}}, sameSiteCookie(session))
	if r.status != http.StatusSeeOther || !strings.Contains(r.header.Get("Set-Cookie"), "Max-Age=0") {
		t.Fatalf("sign out: %d %s", r.status, r.header.Get("Set-Cookie"))
	}
	for _, base := range []string{a, b} {
		for _, req := range []struct{ method, path string }{{http.MethodGet, "/ops"}, {http.MethodGet, "/ops/jobs/api/jobs"}, {http.MethodPost, "/ops/sign-out"}} {
			var form url.Values
			if req.method == http.MethodPost {
				form = url.Values{"csrf": {csrf}}
			}
			if r := opsSend(t, base, req.method, req.path, form, sameSiteCookie(session)); r.status != http.StatusUnauthorized {
				t.Errorf("%s %s on %s with the signed-out cookie: %d, want 401", req.method, req.path, base, r.status)
			}
		}
		if r := opsSend(t, base, http.MethodGet, "/ops", nil, cookie(other)); r.status != http.StatusOK {
			t.Errorf("another session on %s after the sign-out: %d", base, r.status)
		}
	}
	var revoked int
	if err := f.pool.QueryRow(context.Background(), `SELECT count(*) FROM ops_sessions WHERE revoked_at IS NOT NULL`).Scan(&revoked); err != nil || revoked != 1 {
		t.Fatalf("%d revoked session rows (%v), want 1", revoked, err)
	}
}

// TestOpsNewTokenEndsEverySession: an instance started with another token
// on the same database accepts none of the old token's sessions, nor the
// old token; an instance still on the old token keeps them (a rolling
// rotation), and the new token's sessions are not the old instance's.
func TestOpsNewTokenEndsEverySession(t *testing.T) {
	f := newOpsFleet(t)
	old := f.instance(ops.Config{})
	session := signIn(t, old, "198.51.100.20", testOpsToken)
	rotated := f.instance(ops.Config{Token: otherOpsToken})
	if r := opsSend(t, rotated, http.MethodGet, "/ops", nil, cookie(session)); r.status != http.StatusUnauthorized {
		t.Fatalf("the old token's session after the rotation: %d, want 401", r.status)
	}
	if r := opsSend(t, rotated, http.MethodGet, "/ops", nil, bearer(testOpsToken)); r.status != http.StatusUnauthorized {
		t.Fatalf("the old token after the rotation: %d, want 401", r.status)
	}
	fresh := signIn(t, rotated, "198.51.100.20", otherOpsToken)
	if r := opsSend(t, rotated, http.MethodGet, "/ops", nil, cookie(fresh)); r.status != http.StatusOK {
		t.Fatalf("a session of the new token: %d", r.status)
	}
	if r := opsSend(t, old, http.MethodGet, "/ops", nil, cookie(fresh)); r.status != http.StatusUnauthorized {
		t.Fatalf("the new token's session on an instance of the old token: %d, want 401", r.status)
	}
	if r := opsSend(t, old, http.MethodGet, "/ops", nil, cookie(session)); r.status != http.StatusOK {
		t.Fatalf("the old session on an instance still on the old token: %d", r.status)
	}
}

// TestOpsExpiredSessionsPurged: a session past its 12 hours is refused,
// and its row deleted by the console's purge, like failure budgets idle
// for longer than their refill.
func TestOpsExpiredSessionsPurged(t *testing.T) {
	f := newOpsFleet(t)
	var skew atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	// Budgets full again 0.1 s (per address) and 1 s (global) after a failure.
	base := f.instance(ops.Config{Now: now, PurgeEvery: 50 * time.Millisecond,
		Throttle: ops.Throttle{PerAddressBurst: 1, PerAddressPerMinute: 600, GlobalBurst: 1000, GlobalPerMinute: 60_000}})
	if r := opsSend(t, base, http.MethodGet, "/ops", nil, bearer(otherOpsToken)); r.status != http.StatusUnauthorized {
		t.Fatalf("a wrong token: %d", r.status)
	}
	waitRows(t, f.pool, `SELECT count(*) FROM provider_rate_buckets WHERE service = 'ops.auth-failures'`, "failure budgets")
	session := signIn(t, base, "198.51.100.20", testOpsToken)
	if r := opsSend(t, base, http.MethodGet, "/ops", nil, cookie(session)); r.status != http.StatusOK {
		t.Fatalf("a fresh session: %d", r.status)
	}
	skew.Store(int64(12*time.Hour + time.Minute))
	if r := opsSend(t, base, http.MethodGet, "/ops", nil, cookie(session)); r.status != http.StatusUnauthorized {
		t.Fatalf("a session past 12 hours: %d, want 401", r.status)
	}
	waitRows(t, f.pool, `SELECT count(*) FROM ops_sessions`, "sessions")
}

// waitRows waits up to 10 s for a count query to read 0.
func waitRows(t *testing.T, pool *pgxpool.Pool, count, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var n int
		if err := pool.QueryRow(context.Background(), count).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d rows of %s left 10 s after they could go", n, what)
		}
	}
}

// TestOpsDefaultThrottleStopsTheReviewsGuessing: the review's 80 wrong
// tokens from one address, with the production budgets, get 10 answers
// of 401 and then 429s.
func TestOpsDefaultThrottleStopsTheReviewsGuessing(t *testing.T) {
	f := newOpsFleet(t)
	a, b := f.instance(ops.Config{}), f.instance(ops.Config{})
	counts := map[int]int{}
	for i := 0; i < 80; i++ {
		r := opsSend(t, []string{a, b}[i%2], http.MethodPost, "/ops/sign-in", url.Values{"token": {otherOpsToken}}, from("203.0.113.80"))
		counts[r.status]++
	}
	if counts[http.StatusUnauthorized] != ops.DefaultThrottle().PerAddressBurst || counts[http.StatusTooManyRequests] != 80-ops.DefaultThrottle().PerAddressBurst {
		t.Fatalf("80 wrong tokens answered %v, want %d × 401 then 429s", counts, ops.DefaultThrottle().PerAddressBurst)
	}
}

var riverScript = regexp.MustCompile(`src="(/ops/jobs/assets/[^"]+\.js)"`)

// TestOpsSecurityHeaders: every answer under /ops — the console's pages,
// its refusals (401, 403, 404, 429), River's UI, its assets and its API —
// forbids framing (X-Frame-Options: DENY and frame-ancestors 'none') and
// carries a CSP; River's UI's may load only its own scripts.
func TestOpsSecurityHeaders(t *testing.T) {
	f := newOpsFleet(t)
	base := f.instance(ops.Config{Throttle: ops.Throttle{PerAddressBurst: 1, PerAddressPerMinute: slowRefill, GlobalBurst: 100, GlobalPerMinute: slowRefill}})
	page := opsSend(t, base, http.MethodGet, "/ops/jobs/", nil, bearer(testOpsToken), func(r *http.Request) { r.Header.Set("Accept", "text/html") })
	m := riverScript.FindStringSubmatch(page.body)
	if page.status != http.StatusOK || m == nil {
		t.Fatalf("River's UI page: %d %.300s", page.status, page.body)
	}
	session := signIn(t, base, "198.51.100.20", testOpsToken)
	opsSend(t, base, http.MethodGet, "/ops", nil, from("203.0.113.9"), bearer(otherOpsToken))
	cases := []struct {
		name         string
		method, path string
		auth         func(*http.Request)
		status       int
		jobs         bool
	}{
		{"sign-in form", http.MethodGet, "/ops", nil, http.StatusUnauthorized, false},
		{"page", http.MethodGet, "/ops", bearer(testOpsToken), http.StatusOK, false},
		{"page by session", http.MethodGet, "/ops", cookie(session), http.StatusOK, false},
		{"throttled", http.MethodGet, "/ops", func(r *http.Request) { from("203.0.113.9")(r); bearer(otherOpsToken)(r) }, http.StatusTooManyRequests, false},
		{"cross-site write", http.MethodPost, "/ops/connections/x/sync", func(r *http.Request) { cookie(session)(r); r.Header.Set("Sec-Fetch-Site", "cross-site") }, http.StatusForbidden, false},
		{"unknown path", http.MethodGet, "/ops/nothing", bearer(testOpsToken), http.StatusNotFound, false},
		{"unknown path unauthenticated", http.MethodGet, "/ops/nothing", nil, http.StatusUnauthorized, false},
		{"River's UI redirect", http.MethodGet, "/ops/jobs", bearer(testOpsToken), http.StatusMovedPermanently, true},
		{"River's UI", http.MethodGet, "/ops/jobs/", bearer(testOpsToken), http.StatusOK, true},
		{"River's UI unauthenticated", http.MethodGet, "/ops/jobs/", nil, http.StatusUnauthorized, true},
		{"River's script", http.MethodGet, m[1], cookie(session), http.StatusOK, true},
		{"River's API", http.MethodGet, "/ops/jobs/api/jobs?state=available", bearer(testOpsToken), http.StatusOK, true},
		{"River's icon", http.MethodGet, "/ops/jobs/favicon.ico", bearer(testOpsToken), http.StatusOK, true},
	}
	for _, c := range cases {
		opts := []func(*http.Request){func(r *http.Request) { r.Header.Set("Accept", "text/html") }}
		if c.auth != nil {
			opts = append(opts, c.auth)
		}
		r := opsSend(t, base, c.method, c.path, nil, opts...)
		if r.status != c.status {
			t.Errorf("%s (%s %s): %d, want %d", c.name, c.method, c.path, r.status, c.status)
		}
		csp := r.header.Get("Content-Security-Policy")
		if r.header.Get("X-Frame-Options") != "DENY" || !strings.Contains(csp, "frame-ancestors 'none'") ||
			r.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s (%s %s): X-Frame-Options %q, CSP %q, X-Content-Type-Options %q", c.name, c.method, c.path,
				r.header.Get("X-Frame-Options"), csp, r.header.Get("X-Content-Type-Options"))
		}
		if c.jobs && (!strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "script-src 'self' 'unsafe")) {
			t.Errorf("%s: CSP %q, want scripts from the console's origin only", c.name, csp)
		}
		if !c.jobs && !strings.Contains(csp, "default-src 'none'") {
			t.Errorf("%s: CSP %q, want default-src 'none'", c.name, csp)
		}
	}
}
