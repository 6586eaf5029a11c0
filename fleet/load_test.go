//go:build fleet

package fleet

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/finsync/finsync/providers/all/allsim"
)

// fleetRows is the size of the large first sync (FINSYNC_FLEET_ROWS,
// default 200,000; BENCHMARKS.md quotes runs at 1,000,000).
func fleetRows(t *testing.T) int {
	n := 200_000
	if s := os.Getenv("FINSYNC_FLEET_ROWS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			t.Fatalf("FINSYNC_FLEET_ROWS: %q is not a positive number", s)
		}
		n = v
	}
	return n
}

// bigConnection makes the simulator hold rows transactions for the Plaid
// connection named name and registers it for the user, which enqueues its
// first sync.
func (h *harness) bigConnection(userID, name string, rows int) {
	h.t.Helper()
	var creds struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(allsim.Credentials("plaid", name), &creds); err != nil {
		h.t.Fatalf("simulated credentials: %v", err)
	}
	body, _ := json.Marshal(map[string]any{"provider": "plaid", "credential": creds.AccessToken, "transactions": rows, "historyDays": 365})
	resp, err := http.Post("http://"+h.simAddr()+"/_sim/connections", "application/json", bytes.NewReader(body))
	if err != nil {
		h.t.Fatalf("size the simulated connection: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		h.t.Fatalf("size the simulated connection: status %d", resp.StatusCode)
	}
	h.CLI("connections", "add", "--user", userID, "--provider", "plaid", "--sim", "--sim-name", name)
}

func (h *harness) simAddr() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.procs["sim"].addr
}

// latencies reads GET /v2/transactions?limit=50 with each client at rate
// requests per second (spread over the processes) until stop closes, and
// returns the latencies of the 200s, by client, and the count of other
// answers.
func latencies(cs []*client, ps []*process, rate int, stop <-chan struct{}) (ok [][]time.Duration, bad int) {
	ok = make([][]time.Duration, len(cs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-stop:
			wg.Wait()
			return ok, bad
		case <-tick.C:
		}
		ci := i % len(cs)
		c, p := cs[ci], ps[(i/len(cs))%len(ps)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			code, _, _, err := c.Do(p, "GET", "/v2/transactions?limit=50", nil)
			took := time.Since(start)
			mu.Lock()
			defer mu.Unlock()
			if err != nil || code != http.StatusOK {
				bad++
				return
			}
			ok[ci] = append(ok[ci], took)
		}()
	}
}

func p99(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)*99/100]
}

// testReadsDuringLargeSync measures read latency at a fixed rate while idle
// and while a large first sync runs, the syncing user's own reads included.
func testReadsDuringLargeSync(t *testing.T, h *harness, ps []*process) {
	const rate = 20
	otherUser, otherKey, _ := h.User("bystander@example.com", "pro")
	other := newClient(t, otherKey)
	h.CLI("connections", "add", "--user", otherUser, "--provider", "plaid", "--sim", "--sim-name", "bystander")
	awaitConnections(t, other, ps[0], 1)
	syncUser, syncKey, _ := h.User("bigsync@example.com", "pro")
	own := newClient(t, syncKey)
	h.CLI("connections", "add", "--user", syncUser, "--provider", "mercury", "--sim", "--sim-name", "bigsync-small")
	awaitConnections(t, own, ps[0], 1)
	clients := []*client{other, own}

	stop := make(chan struct{})
	time.AfterFunc(30*time.Second, func() { close(stop) })
	idle, idleBad := latencies(clients, ps, rate, stop)

	rows := fleetRows(t)
	h.bigConnection(syncUser, "bigsync", rows)
	started := time.Now()
	stop = make(chan struct{})
	done := make(chan struct{})
	var synced bool
	go func() { synced = largeSyncDone(own, ps[0], 2); close(done) }()
	var busy [][]time.Duration
	var busyBad int
	go func() { <-done; close(stop) }()
	busy, busyBad = latencies(clients, ps, rate, stop)
	took := time.Since(started)
	if !synced {
		t.Fatalf("the %d-transaction first sync did not finish within %v", rows, took.Round(time.Second))
	}

	all := func(ds [][]time.Duration) []time.Duration { return slices.Concat(ds...) }
	t.Logf("GET /v2/transactions?limit=50 at %d req/s over 2 replicas, idle, then during a %d-transaction first sync (%v):", rate, rows, took.Round(time.Second))
	for i, who := range []string{"another user", "the syncing user", "both"} {
		in, dur := all(idle), all(busy)
		if i < 2 {
			in, dur = idle[i], busy[i]
		}
		t.Logf("  %s: idle p99 %v (%d reads), during the sync p99 %v (%d reads): %.1fx", who,
			p99(in).Round(100*time.Microsecond), len(in), p99(dur).Round(100*time.Microsecond), len(dur), float64(p99(dur))/float64(max(p99(in), 1)))
	}
	if idleBad+busyBad > 0 {
		t.Fatalf("%d reads idle and %d during the sync did not answer 200", idleBad, busyBad)
	}
}
