//go:build fleet

package fleet

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/finsync/finsync/internal/pgcluster"
)

// TestFleet runs two serve and two worker processes on one database, with
// a streaming standby for reads, and checks, from the outside, what an
// operator of a fleet relies on.
func TestFleet(t *testing.T) {
	h := newHarness(t)
	standby := h.db.Replica(context.Background(), t)
	// The serve processes read from the standby; the bound is wide so that
	// the replica test's paused replay does not send every read back to the
	// primary on a loaded machine.
	h.env = append(h.env, "FINSYNC_READ_DATABASE_URL="+standby.URL("postgres"), "FINSYNC_READ_MAX_LAG=60s")
	a, b := h.Serve("serve-a"), h.Serve("serve-b")
	h.Worker("worker-a")
	h.Worker("worker-b")
	replicas := []*process{a, b}

	userID, key, keyID := h.User("fleet@example.com", "standard")
	c := newClient(t, key)
	h.CLI("connections", "add", "--user", userID, "--provider", "plaid", "--sim", "--sim-name", "fleet-plaid")
	awaitTransactions(t, c, a)

	t.Run("a cursor from one replica pages on the other", func(t *testing.T) {
		var first page
		c.MustJSON(a, "GET", "/v2/transactions?limit=5", nil, http.StatusOK, &first)
		if !first.PageInfo.HasMore || first.PageInfo.NextCursor == "" {
			t.Fatalf("first page has no next page: %+v", first.PageInfo)
		}
		var second page
		c.MustJSON(b, "GET", "/v2/transactions?limit=5&cursor="+first.PageInfo.NextCursor, nil, http.StatusOK, &second)
		if len(second.Transactions) == 0 || second.Transactions[0].ID == first.Transactions[0].ID {
			t.Fatalf("second page from the other replica does not follow the first: %v", second.Transactions)
		}
	})

	t.Run("a key disabled through the CLI is refused by every replica within 2 s", func(t *testing.T) {
		_, victimKey, victimID := h.User("revoked@example.com", "standard")
		v := newClient(t, victimKey)
		for _, p := range replicas {
			v.MustJSON(p, "GET", "/v2/me", nil, http.StatusOK, nil)
		}
		h.CLI("keys", "disable", victimID)
		for _, p := range replicas {
			took, ok := eventually(2*time.Second, func() bool {
				code, _, _, err := v.Do(p, "GET", "/v2/me", nil)
				return err == nil && code == http.StatusUnauthorized
			})
			if !ok {
				t.Fatalf("%s still accepts the disabled key after %v", p.name, took)
			}
			t.Logf("%s refuses the disabled key after %v", p.name, took.Round(time.Millisecond))
		}
	})

	t.Run("a scoped key's write is visible on the other replica at once", func(t *testing.T) {
		testScopedReadYourWrites(t, h, replicas)
	})

	t.Run("reads on the replica see the caller's own writes", func(t *testing.T) {
		testReadsOnReplica(t, h, replicas[0], replicas[1], standby)
	})

	t.Run("a spent GoCardless quota keeps the last balances", func(t *testing.T) {
		testSpentQuotaKeepsBalances(t, h)
	})

	t.Run("the plan limit holds across replicas and a restart", func(t *testing.T) {
		_, limitedKey, _ := h.User("limited@example.com", "standard")
		lc := newClient(t, limitedKey)
		const limit = 200
		spent := time.Now()
		ok, limited := spread(lc, replicas, 300)
		t.Logf("plan limit %d/min over 2 replicas: %d allowed, %d answered 429", limit, ok, limited)
		if ok < limit*95/100 || ok > limit*105/100 {
			t.Fatalf("allowed %d requests in a minute over two replicas; the plan allows %d (within 5%%)", ok, limit)
		}
		h.Kill("serve-a", syscall.SIGTERM, 30*time.Second)
		a = h.Serve("serve-a")
		replicas[0] = a
		more, _ := spread(lc, replicas, 40)
		// The budget refills at limit per minute: what the elapsed time
		// earned is allowed; a budget reset by the restart would give a
		// whole limit more.
		earned := int(float64(limit) * time.Since(spent).Minutes())
		t.Logf("after restarting serve-a: %d more allowed (%d earned by the %v elapsed)", more, earned, time.Since(spent).Round(100*time.Millisecond))
		if ok+more > limit*105/100+earned {
			t.Fatalf("a restart gave the key a new budget: %d allowed in all, %d earned since the start", ok+more, earned)
		}
	})

	t.Run("hostile requests answer 4xx on every replica", func(t *testing.T) {
		big := `{"name":"` + strings.Repeat("x", 2<<20) + `"}`
		cases := []struct {
			method, path string
			body         any
			want         int
		}{
			{"POST", "/v2/accounts", []byte(`{"name":"a\u0000b","type":"depository","currency":"USD"}`), 400},
			{"POST", "/v2/accounts", []byte(`{"name":"a","type":"depository","currency":"USD","currentBalance":1000000000000000}`), 400},
			{"POST", "/v2/categories", []byte(big), 413},
			{"GET", "/v2/transactions?categoryId=%zz", nil, 400},
			{"GET", "/v2/transactions?limit=100000", nil, 400},
		}
		for _, p := range replicas {
			for _, tc := range cases {
				code, _, body, err := c.Do(p, tc.method, tc.path, tc.body)
				if err != nil {
					t.Fatalf("%s %s on %s: %v", tc.method, tc.path, p.name, err)
				}
				if code != tc.want {
					t.Errorf("%s %s on %s: %d, want %d: %.200s", tc.method, tc.path, p.name, code, tc.want, body)
				}
			}
		}
	})

	t.Run("reads while a large first sync runs", func(t *testing.T) {
		testReadsDuringLargeSync(t, h, replicas)
	})

	t.Run("a sync killed with its worker resumes on another", func(t *testing.T) {
		testKilledWorker(t, h)
	})

	t.Run("a database outage answers 503 and heals by itself", func(t *testing.T) {
		outage := 45 * time.Second
		if s := os.Getenv("FINSYNC_FLEET_OUTAGE"); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil {
				t.Fatalf("FINSYNC_FLEET_OUTAGE: %v", err)
			}
			outage = d
		}
		counts := &statusCounts{}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		_, probeKey, _ := h.User("outage@example.com", "standard")
		probe := newClient(t, probeKey)
		for _, p := range replicas {
			wg.Add(1)
			go func(p *process) {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					case <-time.After(200 * time.Millisecond):
					}
					code, hdr, body, err := probe.Do(p, "GET", "/v2/me", nil)
					counts.add(code, hdr, body, err)
				}
			}(p)
		}
		ctx := context.Background()
		if err := h.db.Stop(ctx, pgcluster.Fast); err != nil {
			t.Fatalf("stop the database: %v", err)
		}
		time.Sleep(outage)
		if err := h.db.StartAgain(ctx); err != nil {
			t.Fatalf("start the database again: %v", err)
		}
		back := time.Now()
		for _, p := range replicas {
			took, ok := eventually(10*time.Second, func() bool {
				code, _, _, err := probe.Do(p, "GET", "/v2/me", nil)
				return err == nil && code == http.StatusOK
			})
			if !ok {
				t.Fatalf("%s does not answer 200 10 s after the database returned", p.name)
			}
			t.Logf("%s answers 200 %v after the database returned", p.name, took.Round(time.Millisecond))
		}
		close(stop)
		wg.Wait()
		t.Logf("during a %v outage: %s; healed %v after the database returned", outage, counts, time.Since(back).Round(time.Millisecond))
		if counts.fivexx != counts.by[http.StatusServiceUnavailable] || counts.noRetryAfter > 0 || counts.errors > 0 {
			t.Fatalf("an outage must answer only 503 with Retry-After: %s", counts)
		}
		if counts.by[http.StatusServiceUnavailable] == 0 {
			t.Fatalf("no 503 during the outage: %s", counts)
		}
		// The workers recover too: a new connection syncs after the outage.
		h.CLI("connections", "add", "--user", userID, "--provider", "mercury", "--sim", "--sim-name", "fleet-after-outage")
		awaitConnections(t, c, a, 2)
	})
	_ = keyID
}

// page is a page of GET /v2/transactions.
type page struct {
	Transactions []struct {
		ID string `json:"id"`
	} `json:"transactions"`
	PageInfo struct {
		NextCursor string `json:"nextCursor"`
		HasMore    bool   `json:"hasMore"`
	} `json:"pageInfo"`
}

// awaitTransactions waits until the key's user has transactions.
func awaitTransactions(t *testing.T, c *client, p *process) {
	t.Helper()
	took, ok := eventually(2*time.Minute, func() bool {
		var pg page
		code, _, body, err := c.Do(p, "GET", "/v2/transactions?limit=1", nil)
		return err == nil && code == http.StatusOK && json.Unmarshal(body, &pg) == nil && len(pg.Transactions) > 0
	})
	if !ok {
		t.Fatalf("no transactions %v after adding a connection", took)
	}
}

// awaitConnections waits until n of the user's connections have synced.
func awaitConnections(t *testing.T, c *client, p *process, n int) {
	t.Helper()
	if took, ok := connectionsSynced(c, p, n, 2*time.Minute); !ok {
		t.Fatalf("%d connections not synced after %v", n, took)
	}
}

// awaitLargeSync is awaitConnections for a sync that may take many
// minutes (a paced 1,000,000-row first sync takes over two): it checks once
// a second, since each check counts against the user's plan limit.
func awaitLargeSync(t *testing.T, c *client, p *process, n int) {
	t.Helper()
	if !largeSyncDone(c, p, n) {
		t.Fatalf("%d connections not synced after %v", n, largeSyncLimit)
	}
}

// largeSyncLimit bounds the wait for a large sync.
const largeSyncLimit = 15 * time.Minute

// largeSyncDone checks once a second, up to largeSyncLimit, whether n of
// the client's connections have synced. It may be called from any
// goroutine.
func largeSyncDone(c *client, p *process, n int) bool {
	for deadline := time.Now().Add(largeSyncLimit); time.Now().Before(deadline); time.Sleep(time.Second) {
		if _, ok := connectionsSynced(c, p, n, 0); ok {
			return true
		}
	}
	return false
}

// connectionsSynced waits up to limit until n of the client's connections
// have synced, and reports how long it waited and whether they did. Unlike
// awaitConnections it may be called from any goroutine.
func connectionsSynced(c *client, p *process, n int, limit time.Duration) (time.Duration, bool) {
	return eventually(limit, func() bool {
		var out struct {
			BankConnections []struct {
				LastSyncedAt *string `json:"lastSyncedAt"`
			} `json:"bankConnections"`
		}
		code, _, body, err := c.Do(p, "GET", "/v2/bank-connections", nil)
		if err != nil || code != http.StatusOK || json.Unmarshal(body, &out) != nil {
			return false
		}
		synced := 0
		for _, bc := range out.BankConnections {
			if bc.LastSyncedAt != nil {
				synced++
			}
		}
		return synced >= n
	})
}

// spread sends n requests with the client, alternating between the
// processes from 4 goroutines, and counts 200s and 429s.
func spread(c *client, ps []*process, n int) (ok, limited int) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := 0
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= n {
					return
				}
				code, _, _, err := c.Do(ps[i%len(ps)], "GET", "/v2/me", nil)
				mu.Lock()
				switch {
				case err != nil:
				case code == http.StatusOK:
					ok++
				case code == http.StatusTooManyRequests:
					limited++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return ok, limited
}

// statusCounts tallies the answers seen during an outage.
type statusCounts struct {
	mu           sync.Mutex
	by           map[int]int
	fivexx       int
	noRetryAfter int
	errors       int
}

func (s *statusCounts) add(code int, hdr http.Header, body []byte, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.by == nil {
		s.by = map[int]int{}
	}
	if err != nil {
		s.errors++
		return
	}
	s.by[code]++
	if code >= 500 {
		s.fivexx++
	}
	if code == http.StatusServiceUnavailable && (hdr.Get("Retry-After") == "" || !strings.Contains(string(body), "SERVICE_UNAVAILABLE")) {
		s.noRetryAfter++
	}
}

func (s *statusCounts) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"byStatus": s.by, "transportErrors": s.errors, "503WithoutRetryAfter": s.noRetryAfter})
	return string(b)
}
