package worker_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/gocardless"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/resilience"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// TestProviderRateLimitSharedByWorkers: two workers' guards of one
// provider (separate memory, one database) share its client-wide and
// per-credential limits, and a guard built afterwards (a restarted worker)
// finds them spent.
func TestProviderRateLimitSharedByWorkers(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	st := storage.New(pool)
	ctx := context.Background()
	newGuard := func(limits resilience.Limits) *resilience.Guard {
		return resilience.NewGuard("plaid", resilience.Config{
			Limits: &limits, Store: st, Retries: -1, MaxLimiterWait: time.Millisecond,
		})
	}
	// Six a minute (one token every 10 s), bursts of 5.
	cases := []struct {
		name   string
		limits resilience.Limits
		key    resilience.GuardKey
	}{
		{"provider", resilience.Limits{Provider: resilience.PerMinute(6, 5)}, resilience.GuardKey{}},
		{"credential", resilience.Limits{Credential: resilience.PerMinute(6, 5)}, resilience.GuardKey{Credential: "item-1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			guards := []*resilience.Guard{newGuard(c.limits), newGuard(c.limits)}
			var mu sync.Mutex
			ran, limited := 0, 0
			var wg sync.WaitGroup
			for i := 0; i < 12; i++ {
				wg.Add(1)
				go func(g *resilience.Guard) {
					defer wg.Done()
					err := g.Do(ctx, c.key, func(context.Context) error { return nil })
					mu.Lock()
					defer mu.Unlock()
					if pe := resilience.AsError(err); pe != nil && pe.Class == resilience.RateLimited && pe.RetryAfter > 0 {
						limited++
					} else if err == nil {
						ran++
					} else {
						t.Errorf("call: %v", err)
					}
				}(guards[i%2])
			}
			wg.Wait()
			if ran != 5 || limited != 7 {
				t.Fatalf("two guards: %d calls ran, %d limited; want the burst of 5 for both together", ran, limited)
			}
			restarted := newGuard(c.limits)
			err := restarted.Do(ctx, c.key, func(context.Context) error { return nil })
			if pe := resilience.AsError(err); pe == nil || pe.Class != resilience.RateLimited {
				t.Fatalf("a restarted worker's call: %v, want rate limited", err)
			}
			// Another credential has its own budget.
			if c.key.Credential != "" {
				if err := restarted.Do(ctx, resilience.GuardKey{Credential: "item-2"}, func(context.Context) error { return nil }); err != nil {
					t.Fatalf("another credential: %v", err)
				}
			}
		})
	}
}

// statusCounter counts a handler's answers by path kind and status.
type statusCounter struct {
	h     http.Handler
	mu    sync.Mutex
	calls map[string]int
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(s int) { w.status = s; w.ResponseWriter.WriteHeader(s) }

func (c *statusCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	c.h.ServeHTTP(sw, r)
	kind := "other"
	for _, k := range []string{"transactions", "balances", "details"} {
		if strings.Contains(r.URL.Path, "/"+k+"/") {
			kind = k
		}
	}
	c.mu.Lock()
	c.calls[kind+" "+http.StatusText(sw.status)]++
	c.mu.Unlock()
}

func (c *statusCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls = map[string]int{}
	return out
}

// TestGoCardlessQuotaSharedByWorkers: the daily per-account quotas one
// worker spends are seen by another worker's adapter and by an adapter
// built after a restart: neither spends a call the bank would refuse.
// An adapter keeping quotas in its own memory does, which shows what the
// shared store prevents.
func TestGoCardlessQuotaSharedByWorkers(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	st := storage.New(pool)
	ctx := context.Background()
	sm := allsim.New(sim.Options{Seed: 7, Start: time.Date(2026, 6, 15, 0, 0, 0, 0, time.UTC), HistoryTransactions: 20})
	counter := &statusCounter{h: sm, calls: map[string]int{}}
	srv := httptest.NewServer(counter)
	t.Cleanup(srv.Close)
	conn := providers.Connection{
		Provider: "gocardless", BaseURL: srv.URL + "/api/v2",
		Credentials: allsim.Credentials("gocardless", "quota"),
	}
	today, err := domain.ParseDate(sm.State().Today)
	if err != nil {
		t.Fatal(err)
	}
	syncOnce := func(p providers.Provider) providers.TransactionPage {
		t.Helper()
		if _, err := p.Accounts(ctx, conn); err != nil {
			t.Fatalf("accounts: %v", err)
		}
		cursor := ""
		for {
			page, err := p.Transactions(ctx, conn, providers.TransactionRequest{Cursor: cursor, Today: today})
			if err != nil {
				t.Fatalf("transactions: %v", err)
			}
			if page.Done {
				return page
			}
			cursor = page.Next
		}
	}
	refused := func(calls map[string]int) int {
		return calls["transactions Too Many Requests"] + calls["balances Too Many Requests"] + calls["details Too Many Requests"]
	}

	// Worker A syncs until the bank's daily transactions quota is spent.
	a := gocardless.New(srv.Client(), gocardless.WithQuotas(st))
	var last providers.TransactionPage
	for i := 0; i < 6; i++ {
		last = syncOnce(a)
	}
	calls := counter.take()
	if calls["transactions OK"] == 0 || refused(calls) != 0 {
		t.Fatalf("worker A: %v", calls)
	}
	if last.NextAllowedAt.IsZero() {
		t.Fatalf("worker A spent no quota: %v", calls)
	}

	// Worker B, and a worker started after a restart, see it spent.
	for _, name := range []string{"worker B", "restarted worker"} {
		p := gocardless.New(srv.Client(), gocardless.WithQuotas(st))
		page := syncOnce(p)
		calls := counter.take()
		if calls["transactions OK"] != 0 || refused(calls) != 0 {
			t.Fatalf("%s called the bank past the quota: %v", name, calls)
		}
		if !page.NextAllowedAt.Equal(last.NextAllowedAt) {
			t.Fatalf("%s: next allowed at %v, want the quota reset %v", name, page.NextAllowedAt, last.NextAllowedAt)
		}
	}

	// Quotas in one adapter's memory: a second worker spends refused calls.
	alone := gocardless.New(srv.Client())
	_, _ = alone.Accounts(ctx, conn) // refused by the bank: an error here
	if calls := counter.take(); refused(calls) == 0 {
		t.Fatalf("an adapter without the shared store made no refused call: %v", calls)
	}
	var rows int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM provider_quotas WHERE provider = 'gocardless' AND remaining = 0`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows == 0 {
		t.Fatal("no spent quota stored")
	}
}
