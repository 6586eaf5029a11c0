package api_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/api/middleware"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// fleet is several API processes (separate memory) on one database.
type fleet struct {
	t    *testing.T
	pool *pgxpool.Pool
	fx   *storagetest.Fixtures
}

func newFleet(t *testing.T) *fleet {
	t.Helper()
	pool, _ := storagetest.NewDB(t)
	return &fleet{t: t, pool: pool, fx: storagetest.NewFixtures(t, pool)}
}

// instance starts one more API process over the fleet's database; stop
// ends its background work (a process stopping), as its cleanup does.
func (f *fleet) instance() (url string, stop func()) {
	f.t.Helper()
	a := api.MustNew(api.Config{Providers: all.NewRegistry().Profiles(),
		Store:     storage.New(f.pool),
		Log:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		CursorKey: []byte("test cursor key, 32 bytes long!!"),
		Auth:      middleware.DefaultAuthConfig(),
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.Run(ctx) }()
	srv := httptest.NewServer(a.Handler)
	var once sync.Once
	stop = func() { once.Do(func() { srv.Close(); cancel(); <-done }) }
	f.t.Cleanup(stop)
	return srv.URL, stop
}

// hammer sends n requests with key from workers goroutines, spread over
// the servers in turn, and counts the 200s and 429s.
func hammer(t *testing.T, urls []string, path, key string, n, workers int) (ok, limited int) {
	t.Helper()
	var next, okN, limN, other atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				req, _ := http.NewRequest(http.MethodGet, urls[int(i)%len(urls)]+path, nil)
				req.Header.Set("Authorization", "Bearer "+key)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					other.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusOK:
					okN.Add(1)
				case http.StatusTooManyRequests:
					limN.Add(1)
				default:
					other.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if other.Load() != 0 {
		t.Fatalf("%d requests answered neither 200 nor 429", other.Load())
	}
	return int(okN.Load()), int(limN.Load())
}

// within asserts a count allowed by one limit of count per period over
// elapsed: never above what one token bucket allows (the count plus its
// refill), and at least 95% of the count.
func within(t *testing.T, what string, allowed, count int, period, elapsed time.Duration) {
	t.Helper()
	ceiling := count + int(float64(count)*elapsed.Seconds()/period.Seconds())
	floor := count * 95 / 100
	t.Logf("%s: %d allowed in %v (limit %d, ceiling with refill %d)", what, allowed, elapsed.Round(time.Millisecond), count, ceiling)
	if allowed > ceiling || allowed < floor {
		t.Fatalf("%s: %d allowed, want %d..%d", what, allowed, floor, ceiling)
	}
}

// TestSharedLimitsAcrossInstances: two API processes share one key's
// budget (standard 200 per minute) within 5% and never above it, and a
// process started afterwards (a restart) does not reset it.
func TestSharedLimitsAcrossInstances(t *testing.T) {
	f := newFleet(t)
	u := f.fx.User(domain.PlanStandard, true)
	key := f.fx.Key(u.ID, nil)
	a, _ := f.instance()
	b, _ := f.instance()
	start := time.Now()
	ok, limited := hammer(t, []string{a, b}, "/v2/me", key, 400, 8)
	within(t, "two instances", ok, 200, time.Minute, time.Since(start))
	if limited == 0 {
		t.Fatal("no request limited")
	}
	pro := f.fx.User(domain.PlanPro, true)
	proStart := time.Now()
	proOK, _ := hammer(t, []string{a, b}, "/v2/me", f.fx.Key(pro.ID, nil), 1300, 8)
	within(t, "two instances, pro", proOK, 1000, time.Minute, time.Since(proStart))

	// A fresh process (a restart of either) finds the budget spent.
	c, _ := f.instance()
	refill := int(200 * time.Since(start).Seconds() / 60)
	ok, _ = hammer(t, []string{c}, "/v2/me", key, 20, 2)
	if ok > refill+1 {
		t.Fatalf("a new instance allowed %d requests, the refill since the start is %d", ok, refill)
	}
}

// TestSharedLimitsV1HourlyBudgetSurvivesRestart: v1's 50 per hour per data
// endpoint holds across two processes and a restart.
func TestSharedLimitsV1HourlyBudgetSurvivesRestart(t *testing.T) {
	f := newFleet(t)
	u := f.fx.User(domain.PlanTrial, true)
	conn := f.fx.Connection(u.ID, "plaid", "active")
	key := f.fx.Key(u.ID, nil)
	path := "/v1/holdings?bankConnectionId=" + conn.String()
	a, stopA := f.instance()
	b, stopB := f.instance()
	ok, _ := hammer(t, []string{a, b}, path, key, 70, 4)
	if ok != 50 {
		t.Fatalf("two instances allowed %d of 50 per hour", ok)
	}
	stopA()
	stopB()
	c, _ := f.instance()
	if ok, limited := hammer(t, []string{c}, path, key, 5, 1); ok != 0 || limited != 5 {
		t.Fatalf("after a restart: %d allowed, %d limited", ok, limited)
	}
	// Another endpoint's hourly budget is its own.
	if ok, _ := hammer(t, []string{c}, "/v1/investment-transactions?bankConnectionId="+conn.String(), key, 1, 1); ok != 1 {
		t.Fatal("investment transactions limited by the holdings budget")
	}
}

// TestSharedLimitsIdleLeaseComesBack: tokens leased by a process whose
// traffic moved elsewhere go back to the shared budget.
func TestSharedLimitsIdleLeaseComesBack(t *testing.T) {
	f := newFleet(t)
	u := f.fx.User(domain.PlanPro, true)
	key := f.fx.Key(u.ID, nil)
	a, _ := f.instance()
	b, _ := f.instance()
	if ok, _ := hammer(t, []string{a}, "/v2/me", key, 1, 1); ok != 1 {
		t.Fatal("first request refused")
	}
	var leased int
	if err := f.pool.QueryRow(context.Background(), `SELECT COALESCE(sum(tokens), 0) FROM rate_limit_leases WHERE user_id = $1`, u.ID).Scan(&leased); err != nil {
		t.Fatal(err)
	}
	if leased < 2 || leased > 20 {
		t.Fatalf("one request leased %d tokens of 1,000, want a block of at most 2%%", leased)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := f.pool.QueryRow(context.Background(), `SELECT COALESCE(sum(tokens), 0) FROM rate_limit_leases WHERE user_id = $1`, u.ID).Scan(&leased); err != nil {
			t.Fatal(err)
		}
		if leased == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("idle lease of %d tokens never given back", leased)
		}
		time.Sleep(200 * time.Millisecond)
	}
	start := time.Now()
	ok, _ := hammer(t, []string{b}, "/v2/me", key, 1100, 8)
	within(t, "after an idle lease came back", ok, 1000, time.Minute, time.Since(start))
}

// TestAuthFailureThrottleHoldsAcrossProcesses sends bad credentials from
// one address to two API processes in turn: the failure budget
// (FailureBurst) holds for both together, give or take the one attempt
// each process lets through before it learns of the refusal, instead of a
// whole budget per process.
func TestAuthFailureThrottleHoldsAcrossProcesses(t *testing.T) {
	f := newFleet(t)
	a, _ := f.instance()
	b, _ := f.instance()
	burst := middleware.DefaultAuthConfig().FailureBurst
	unauthorized, limited := 0, 0
	for i := 0; i < 4*burst; i++ {
		req, _ := http.NewRequest(http.MethodGet, []string{a, b}[i%2]+"/v2/me", nil)
		req.Header.Set("Authorization", "Bearer fin_not_a_key_"+strconv.Itoa(i))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusUnauthorized:
			unauthorized++
		case http.StatusTooManyRequests:
			limited++
		default:
			t.Fatalf("attempt %d: status %d", i, resp.StatusCode)
		}
	}
	if unauthorized > burst+2 || unauthorized < burst {
		t.Fatalf("%d failures reached the database across two processes (and %d were refused), want %d to %d", unauthorized, limited, burst, burst+2)
	}
}

// authAttempt sends GET /v2/me with the key to url and returns the status
// and the Retry-After header.
func authAttempt(t *testing.T, url, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url+"/v2/me", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

// wrongKey is the i-th of many different well-formed keys that match none.
func wrongKey(i int) string {
	return "fin_" + strconv.Itoa(1_000_000+i) + "abcdefghijABCDEFGHIJ0123456789ab"
}

// TestAuthFailureThrottleSparesValidKeys: from one address, brute force
// of keys (a different wrong key each time) against two API processes is
// throttled for both together (429 with Retry-After on each, after about
// one burst of 401s), while a valid key sent from the same address, in
// between, keeps answering 200 on both.
func TestAuthFailureThrottleSparesValidKeys(t *testing.T) {
	f := newFleet(t)
	a, _ := f.instance()
	b, _ := f.instance()
	urls := []string{a, b}
	valid := f.fx.Key(f.fx.User(domain.PlanPro, true).ID, nil)
	for _, u := range urls {
		if st, _ := authAttempt(t, u, valid); st != http.StatusOK {
			t.Fatalf("valid key before the attack: %d", st)
		}
	}
	burst := middleware.DefaultAuthConfig().FailureBurst
	unauthorized := 0
	limitedOn := map[string]bool{}
	began := time.Now()
	for i := 0; i < 4*burst; i++ {
		u := urls[i%2]
		st, retry := authAttempt(t, u, wrongKey(i))
		switch st {
		case http.StatusUnauthorized:
			unauthorized++
		case http.StatusTooManyRequests:
			if retry == "" {
				t.Fatalf("attempt %d: 429 without Retry-After", i)
			}
			limitedOn[u] = true
		default:
			t.Fatalf("wrong key %d: status %d", i, st)
		}
		if st, _ := authAttempt(t, urls[(i+1)%2], valid); st != http.StatusOK {
			t.Fatalf("valid key after %d wrong keys from its address: %d, want 200", i+1, st)
		}
	}
	if unauthorized > burst+2+refilled(began) || unauthorized < burst {
		t.Fatalf("%d wrong keys reached the database, want %d to %d", unauthorized, burst, burst+2)
	}
	if len(limitedOn) != 2 {
		t.Fatalf("brute force throttled on %d of 2 processes", len(limitedOn))
	}
	// A process that never saw the valid key (a restart, a new replica),
	// and a key never used anywhere, from the same blocked address: both
	// still authenticate, while wrong keys stay refused with 429 (after the
	// one attempt a process lets through before it learns of the refusal).
	c, _ := f.instance()
	fresh := f.fx.Key(f.fx.User(domain.PlanPro, true).ID, nil)
	for _, u := range []string{c, a} {
		for _, k := range []string{valid, fresh} {
			if st, _ := authAttempt(t, u, k); st != http.StatusOK {
				t.Fatalf("valid key unseen by the process, from the blocked address: %d, want 200", st)
			}
		}
		// A process learns of the shared refusal on its first failure there.
		authAttempt(t, u, wrongKey(10_000))
		if st, retry := authAttempt(t, u, wrongKey(10_001)); st != http.StatusTooManyRequests || retry == "" {
			t.Fatalf("wrong key from the blocked address: %d (Retry-After %q), want 429", st, retry)
		}
	}
}

// TestAuthFailureThrottleRevokedKeyOnItsOwn: a key disabled after use and
// retried in a loop from one address is throttled (429 with Retry-After on
// both processes, after about one burst), while another valid key and a
// key never used before, from the same address, keep answering 200: the
// revoked key spent its own budget, not its address's.
func TestAuthFailureThrottleRevokedKeyOnItsOwn(t *testing.T) {
	f := newFleet(t)
	a, _ := f.instance()
	b, _ := f.instance()
	urls := []string{a, b}
	user := f.fx.User(domain.PlanPro, true).ID
	revokedID, revoked := f.fx.KeyWithID(user, nil, nil)
	other := f.fx.Key(user, nil)
	for _, u := range urls {
		if st, _ := authAttempt(t, u, revoked); st != http.StatusOK {
			t.Fatalf("key before revocation: %d", st)
		}
	}
	if err := f.fx.St.DisableCredential(context.Background(), revokedID); err != nil {
		t.Fatal(err)
	}
	burst := middleware.DefaultAuthConfig().FailureBurst
	unauthorized := 0
	limitedOn := map[string]bool{}
	began := time.Now()
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; i < 4*burst; i++ {
		u := urls[i%2]
		st, retry := authAttempt(t, u, revoked)
		switch {
		case st == http.StatusOK && time.Now().Before(deadline):
			// Not yet seen by this process (within 2 s of the change).
			i--
			time.Sleep(20 * time.Millisecond)
			continue
		case st == http.StatusUnauthorized:
			unauthorized++
		case st == http.StatusTooManyRequests && retry != "":
			limitedOn[u] = true
		default:
			t.Fatalf("revoked key, attempt %d: status %d, Retry-After %q", i, st, retry)
		}
		if st, _ := authAttempt(t, urls[(i+1)%2], other); st != http.StatusOK {
			t.Fatalf("another key after %d attempts of a revoked one: %d, want 200", i+1, st)
		}
	}
	if unauthorized > burst+2+refilled(began) || unauthorized < burst {
		t.Fatalf("the revoked key failed %d times before being throttled, want %d to %d", unauthorized, burst, burst+2)
	}
	if len(limitedOn) != 2 {
		t.Fatalf("the revoked key was throttled on %d of 2 processes", len(limitedOn))
	}
	fresh := f.fx.Key(user, nil)
	for _, u := range urls {
		if st, _ := authAttempt(t, u, fresh); st != http.StatusOK {
			t.Fatalf("a key never used before, from the revoked key's address: %d, want 200", st)
		}
	}
}

// refilled is how many tokens a failure budget (one a second) has earned
// back since began: on a loaded machine a test's attempts take seconds.
func refilled(began time.Time) int {
	return int(time.Since(began) / time.Second)
}
