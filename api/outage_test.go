package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/api/middleware"
	"github.com/finsync/finsync/api/openapi/openapitest"
	v2 "github.com/finsync/finsync/api/v2"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/internal/pgcluster"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
	"github.com/finsync/finsync/worker"
)

// recoveryBound is how soon after the database returns every request must
// succeed again.
const recoveryBound = 10 * time.Second

// outageRequest is one request of the set sent while the database is down.
type outageRequest struct {
	method, path string
	body         func() string // nil for no body
}

func (r outageRequest) String() string { return r.method + " " + r.path }

// outageEnv is the real API over a private PostgreSQL cluster the test
// stops and starts, reached over HTTP with every response checked against
// the OpenAPI documents.
type outageEnv struct {
	*env
	cluster *pgcluster.Cluster
	key     string
	set     []outageRequest
	// reads are the version 2 reads of the set (no hourly budget to
	// spend); reads[0] is GET /v2/me, which needs only authentication.
	reads []outageRequest
}

func newOutageEnv(t *testing.T, opts ...envOption) *outageEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cluster := pgcluster.Start(ctx, t)
	pool, err := storage.Open(ctx, cluster.URL("postgres"), storage.Options{MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := storage.New(pool).Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	jobs, err := worker.NewInsertClient(storage.New(pool))
	if err != nil {
		t.Fatal(err)
	}
	cfg := api.Config{
		Providers: all.NewRegistry().Profiles(),
		Jobs:      jobs,
		Store:     storage.New(pool),
		Log:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		CursorKey: []byte("test cursor key, 32 bytes long!!"),
		Auth:      middleware.DefaultAuthConfig(),
		Plans:     v2.PlanLimits{domain.PlanPro: 1_000_000},
	}
	for _, o := range opts {
		o(&cfg)
	}
	a := api.MustNew(cfg)
	runCtx, stop := context.WithCancel(context.Background())
	go a.Run(runCtx)
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(func() { srv.Close(); stop() })
	v2doc, v1doc := openapitest.New(t, openapitest.V2(t, cfg.Providers)), openapitest.New(t, openapitest.V1(t, cfg.Providers))
	e := &outageEnv{
		env: &env{
			t:      t,
			fx:     storagetest.NewFixtures(t, pool),
			srv:    srv,
			client: &http.Client{Transport: versionTransport{v2: v2doc.Transport(t, http.DefaultTransport), v1: v1doc.Transport(t, http.DefaultTransport)}},
		},
		cluster: cluster,
	}
	user := e.fx.User(domain.PlanPro, true)
	e.key = e.fx.Key(user.ID, nil)
	conn := e.fx.Connection(user.ID, "plaid", "active")
	acct := e.fx.Account(user.ID, conn, "plaid", "Checking")
	txs := e.fx.Transactions(user.ID, conn, acct, "plaid", make([]storagetest.Tx, 5))
	category := e.fx.Category(user.ID, "Coffee", "Food")
	var n atomic.Int64
	newCategory := func() string { return fmt.Sprintf(`{"name":"Outage %d"}`, n.Add(1)) }
	e.set = []outageRequest{
		{"GET", "/v1/accounts", nil},
		{"GET", "/v1/bank-connections", nil},
		{"GET", "/v1/transactions?bankConnectionId=" + conn.String() + "&startDate=2026-01-01&endDate=2026-12-31", nil},
		{"GET", "/v2/me", nil},
		{"GET", "/v2/accounts", nil},
		{"GET", "/v2/accounts/" + acct.String(), nil},
		{"GET", "/v2/transactions?limit=50", nil},
		{"GET", "/v2/bank-connections", nil},
		{"GET", "/v2/categories", nil},
		{"GET", "/v2/rules", nil},
		{"POST", "/v2/categories", newCategory},
		{"PATCH", "/v2/transactions/" + txs[0].String(), func() string { return `{"categoryId":null}` }},
		{"POST", "/v2/rules", func() string { return categoryRule("Summary", "contains", `"coffee"`, category, 10) }},
	}
	e.reads = e.set[3:10]
	return e
}

// send sends one request of the set with the test key.
func (e *outageEnv) send(r outageRequest) response {
	e.t.Helper()
	var body io.Reader
	if r.body != nil {
		body = strings.NewReader(r.body())
	}
	return e.do(r.method, r.path, e.key, body)
}

// expectUnavailable asserts a 503 SERVICE_UNAVAILABLE in the endpoint
// envelope with a positive Retry-After.
func expectUnavailable(t *testing.T, what string, r response) {
	t.Helper()
	if r.status != http.StatusServiceUnavailable {
		t.Errorf("%s while the database is down: status %d, want 503: %s", what, r.status, r.body)
		return
	}
	if secs, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || secs <= 0 {
		t.Errorf("%s: Retry-After %q, want a positive number of seconds", what, r.header.Get("Retry-After"))
	}
	var body struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil || body.Error.Code != "SERVICE_UNAVAILABLE" || body.Error.Message == "" {
		t.Errorf("%s: body %s, want {error: {code: SERVICE_UNAVAILABLE, message}}", what, r.body)
	}
}

// expectDown sends the whole set, both health checks and an
// unauthenticated-path probe while the database is down.
func (e *outageEnv) expectDown() {
	t := e.t
	t.Helper()
	// The credential cache is trusted only while its change listener is
	// connected; wait until the listener has seen the outage, so that
	// every request needs the database.
	waitFor(t, 5*time.Second, "the credential cache to be bypassed", func() bool {
		return e.send(e.reads[0]).status == http.StatusServiceUnavailable
	})
	for _, r := range e.set {
		expectUnavailable(t, r.String(), e.send(r))
	}
	expectUnavailable(t, "GET /v1/health", e.get("/v1/health", ""))
	h := e.get("/v2/health", "")
	if h.status != http.StatusServiceUnavailable || h.header.Get("Retry-After") == "" || !strings.Contains(string(h.body), `"degraded"`) {
		t.Errorf("GET /v2/health while the database is down: %d %v %s", h.status, h.header, h.body)
	}
}

// expectRecovered polls the whole set until every request succeeds, failing
// on any answer other than a success or a 503, or after recoveryBound.
func (e *outageEnv) expectRecovered(since time.Time) time.Duration {
	t := e.t
	t.Helper()
	for {
		ok := true
		for _, r := range append(e.set, outageRequest{"GET", "/v1/health", nil}, outageRequest{"GET", "/v2/health", nil}) {
			resp := e.send(r)
			switch {
			case resp.status < 300:
			case resp.status == http.StatusServiceUnavailable:
				ok = false
			default:
				t.Fatalf("%s after the database returned: %d %s", r, resp.status, resp.body)
			}
		}
		if ok {
			return time.Since(since)
		}
		if time.Since(since) > recoveryBound {
			t.Fatalf("requests still fail %s after the database returned", recoveryBound)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func waitFor(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", limit, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// statusCounts counts the statuses a background load saw.
type statusCounts struct {
	mu sync.Mutex
	m  map[int]int
}

func (s *statusCounts) add(status int) {
	s.mu.Lock()
	s.m[status]++
	s.mu.Unlock()
}

// load sends GET requests of the set in a loop from two goroutines until
// the returned stop function is called (at the latest when the test ends),
// so that requests are in flight as the database goes down and comes back.
func (e *outageEnv) load() (*statusCounts, func()) {
	counts := &statusCounts{m: map[int]int{}}
	var wg sync.WaitGroup
	done := make(chan struct{})
	stop := sync.OnceFunc(func() { close(done); wg.Wait() })
	e.t.Cleanup(stop)
	for g := range 2 {
		wg.Go(func() {
			for i := g; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				r := e.reads[i%len(e.reads)]
				req, _ := http.NewRequest(r.method, e.srv.URL+r.path, nil)
				req.Header.Set("Authorization", "Bearer "+e.key)
				resp, err := e.client.Do(req)
				if err != nil {
					e.t.Errorf("%s: %v", r, err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				counts.add(resp.StatusCode)
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	return counts, stop
}

// TestDatabaseOutageAnswers503AndRecovers stops the database (fast, then
// immediate, as a crash would) under a background load: every request
// answers 503 SERVICE_UNAVAILABLE with Retry-After in its version's
// envelope, none 500, and within recoveryBound of the database returning
// every request succeeds again.
func TestDatabaseOutageAnswers503AndRecovers(t *testing.T) {
	e := newOutageEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, r := range e.set {
		if resp := e.send(r); resp.status >= 300 {
			t.Fatalf("%s before the outage: %d %s", r, resp.status, resp.body)
		}
	}
	counts, stopLoad := e.load()
	for _, mode := range []pgcluster.StopMode{pgcluster.Fast, pgcluster.Immediate} {
		time.Sleep(300 * time.Millisecond) // let the load reach the database
		if err := e.cluster.Stop(ctx, mode); err != nil {
			t.Fatal(err)
		}
		e.expectDown()
		time.Sleep(time.Second) // an outage longer than the listener's backoff cap
		if err := e.cluster.StartAgain(ctx); err != nil {
			t.Fatal(err)
		}
		took := e.expectRecovered(time.Now())
		t.Logf("%s stop: every request succeeded again %s after the database returned", mode, took.Round(time.Millisecond))
	}
	stopLoad()
	t.Logf("background load statuses: %v", counts.m)
	for status, n := range counts.m {
		if status >= 300 && status != http.StatusServiceUnavailable {
			t.Errorf("background load: %d × %d", n, status)
		}
	}
	if counts.m[http.StatusServiceUnavailable] == 0 || counts.m[http.StatusOK] == 0 {
		t.Errorf("background load saw no outage or no service: %v", counts.m)
	}
}

// sendConcurrently sends the requests at once and returns their responses
// and how long the slowest took.
func (e *outageEnv) sendConcurrently(reqs []outageRequest) ([]response, time.Duration) {
	out := make([]response, len(reqs))
	start := time.Now()
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Go(func() {
			var body io.Reader
			if r.body != nil {
				body = strings.NewReader(r.body())
			}
			req, err := http.NewRequest(r.method, e.srv.URL+r.path, body)
			if err != nil {
				e.t.Error(err)
				return
			}
			req.Header.Set("Authorization", "Bearer "+e.key)
			if body != nil {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := e.client.Do(req)
			if err != nil {
				e.t.Errorf("%s: %v", r, err)
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				e.t.Errorf("%s: %v", r, err)
				return
			}
			out[i] = response{status: resp.StatusCode, header: resp.Header, body: b}
		})
	}
	wg.Wait()
	return out, time.Since(start)
}

// TestHungDatabaseAnswers503 freezes the database, so that connections and
// queries hang instead of failing (a hung server, a network partition):
// every request that needs the database answers 503 with Retry-After once
// its deadline passes, none hangs or answers 500, and all succeed again
// within recoveryBound of the database resuming.
func TestHungDatabaseAnswers503(t *testing.T) {
	const deadline = 2 * time.Second
	e := newOutageEnv(t, func(c *api.Config) { c.RequestDeadline = deadline })
	for _, r := range e.set {
		if resp := e.send(r); resp.status >= 300 {
			t.Fatalf("%s before the outage: %d %s", r, resp.status, resp.body)
		}
	}
	if err := e.cluster.Freeze(); err != nil {
		t.Fatal(err)
	}
	thawed := false
	t.Cleanup(func() {
		if !thawed {
			_ = e.cluster.Thaw()
		}
	})
	reqs := append(e.set, outageRequest{"GET", "/v1/health", nil}, outageRequest{"GET", "/v2/health", nil})
	resps, took := e.sendConcurrently(reqs)
	for i, r := range reqs {
		switch {
		case r.path == "/v2/me" && resps[i].status == http.StatusOK:
			// Served from the credential cache alone: the change listener
			// of a hung database has not failed, and /me needs nothing else.
		case r.path == "/v2/health":
			if resps[i].status != http.StatusServiceUnavailable || resps[i].header.Get("Retry-After") == "" {
				t.Errorf("GET /v2/health on a hung database: %d %s", resps[i].status, resps[i].body)
			}
		default:
			expectUnavailable(t, r.String(), resps[i])
		}
	}
	if bound := deadline + 3*time.Second; took > bound {
		t.Errorf("requests to a hung database took %s, over %s", took, bound)
	}
	if err := e.cluster.Thaw(); err != nil {
		t.Fatal(err)
	}
	thawed = true
	t.Logf("hung database: %d requests answered within %s; all succeeded again %s after it resumed",
		len(reqs), took.Round(time.Millisecond), e.expectRecovered(time.Now()).Round(time.Millisecond))
}
