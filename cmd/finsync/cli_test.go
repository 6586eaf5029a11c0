package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/storage/storagetest"
)

// run executes one finsync command and decodes its --json output.
func run(t *testing.T, dbURL string, args ...string) map[string]any {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRoot(&out, &errOut)
	root.SetArgs(append([]string{"--database-url", dbURL, "--json"}, args...))
	if err := root.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("finsync %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatalf("finsync %s printed %q: %v", strings.Join(args, " "), out.String(), err)
	}
	return m
}

func TestOperatorCommands(t *testing.T) {
	t.Setenv("FINSYNC_ENCRYPTION_KEY", strings.Repeat("0a", 32))
	_, dbURL := storagetest.NewDB(t)
	s := httptest.NewServer(allsim.New(sim.Options{Seed: 3}))
	defer s.Close()

	u := run(t, dbURL, "users", "create", "--email", "ops@example.com", "--plan", "standard")
	uid := u["id"].(string)
	if u["storageMode"] != false || u["plan"] != "standard" {
		t.Fatalf("user %v", u)
	}
	if d := run(t, dbURL, "users", "create", "--email", "default-plan@example.com"); d["plan"] != "standard" {
		t.Fatalf("a user created without --plan: %v, want the standard plan", d)
	}
	k := run(t, dbURL, "keys", "create", "--user", uid, "--name", "ci")
	if key, _ := k["key"].(string); !strings.HasPrefix(key, "fin_") || len(key) < 36 {
		t.Fatalf("key %v", k)
	}
	up := run(t, dbURL, "users", "update", uid, "--plan", "pro")
	if up["plan"] != "pro" || up["storageMode"] != true {
		t.Fatalf("after update (a key turns storage mode on): %v", up)
	}
	if d := run(t, dbURL, "keys", "disable", k["id"].(string)); d["enabled"] != false {
		t.Fatalf("disable %v", d)
	}
	tok := run(t, dbURL, "oauth-tokens", "issue", "--user", uid, "--app", "budgets")
	if token, _ := tok["token"].(string); !strings.HasPrefix(token, "fino_") {
		t.Fatalf("token %v", tok)
	}
	c := run(t, dbURL, "connections", "add", "--user", uid, "--provider", "mercury", "--sim", "--sim-url", s.URL)
	cid := c["id"].(string)
	if c["baseUrl"] != s.URL+"/api/v1" || c["status"] != "active" {
		t.Fatalf("connection %v", c)
	}
	if d := run(t, dbURL, "connections", "disable", cid); d["status"] != "disabled" {
		t.Fatalf("disable connection %v", d)
	}
	list := run(t, dbURL, "connections", "list", "--user", uid)
	if conns := list["connections"].([]any); len(conns) != 1 || conns[0].(map[string]any)["status"] != "disabled" {
		t.Fatalf("list %v", list)
	}
	if e := run(t, dbURL, "connections", "enable", cid); e["status"] != "active" {
		t.Fatalf("enable connection %v", e)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
// startWorker runs `finsync worker` in this process against dbURL, with
// args after the subcommand, until the test ends; it returns the worker's
// standard error, for failure messages.
func startWorker(t *testing.T, dbURL string, args ...string) *syncBuffer {
	t.Helper()
	var wOut, wErr syncBuffer
	wroot := newRoot(&wOut, &wErr)
	wroot.SetArgs(append([]string{"--database-url", dbURL, "worker", "--metrics-addr", ""}, args...))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- wroot.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(40 * time.Second):
			t.Error("worker did not stop")
		}
	})
	return &wErr
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestDevServesTheDemoUsersData runs `finsync dev` and follows the curl
// line it prints.
// devDemo is what `finsync dev --json` prints.
type devDemo struct {
	BaseURL     string   `json:"baseUrl"`
	Key         string   `json:"key"`
	Connections []string `json:"connections"`
	SimURL      string   `json:"simulatorUrl"`
	OpsURL      string   `json:"opsUrl"`
	OpsToken    string   `json:"opsToken"`
}

// startDev runs `finsync dev` with its key kept in dir until the test ends
// or stop is called, and returns what it printed.
func startDev(t *testing.T, dir string) (devDemo, func()) {
	t.Helper()
	addr, simAddr := freeAddr(t), freeAddr(t)
	var out, errOut syncBuffer
	root := newRoot(&out, &errOut)
	root.SetArgs([]string{"--json", "dev", "--addr", addr, "--sim-addr", simAddr, "--metrics-addr", freeAddr(t), "--dir", dir})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("dev did not stop")
		}
	}
	t.Cleanup(stop)
	var demo devDemo
	deadline := time.Now().Add(90 * time.Second)
	for json.Unmarshal([]byte(out.String()), &demo) != nil || demo.Key == "" {
		if time.Now().After(deadline) {
			t.Fatalf("dev printed no demo within 90s; stderr:\n%s", errOut.String())
		}
		select {
		case err := <-done:
			t.Fatalf("dev stopped: %v\n%s", err, errOut.String())
		case <-time.After(200 * time.Millisecond):
		}
	}
	return demo, stop
}

// TestDevServesTheDemoUsersData runs `finsync dev` and follows the curl
// lines it prints.
func TestDevServesTheDemoUsersData(t *testing.T) {
	_, dbURL := storagetest.NewDB(t)
	t.Setenv("DATABASE_URL", dbURL)
	demo, _ := startDev(t, t.TempDir())
	if len(demo.Connections) != len(all.NewRegistry().Names()) {
		t.Fatalf("demo connections %v", demo.Connections)
	}
	for _, path := range []string{"/v2/accounts", "/v2/transactions?limit=5", "/v2/bank-connections"} {
		req, _ := http.NewRequest(http.MethodGet, demo.BaseURL+path, nil)
		req.Header.Set("Authorization", "Bearer "+demo.Key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"id"`)) {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
		}
	}
	// The ops console is on, with the token it printed, and lists the demo
	// connections.
	for token, want := range map[string]int{"": http.StatusUnauthorized, demo.Key: http.StatusUnauthorized, demo.OpsToken: http.StatusOK} {
		req, _ := http.NewRequest(http.MethodGet, demo.OpsURL, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("GET %s with %q: %d, want %d", demo.OpsURL, token, resp.StatusCode, want)
		}
		if want == http.StatusOK {
			for _, id := range demo.Connections {
				if !bytes.Contains(body, []byte(id)) {
					t.Fatalf("ops page lacks demo connection %s", id)
				}
			}
		}
	}
}

// TestDevFromAnotherCheckoutSyncsAgain runs the demo twice against one
// database with different demo keys (as a second clone would): the second
// run must still sync the demo connections.
func TestDevFromAnotherCheckoutSyncsAgain(t *testing.T) {
	pool, dbURL := storagetest.NewDB(t)
	t.Setenv("DATABASE_URL", dbURL)
	demo, stop := startDev(t, t.TempDir())
	// The first run's simulator moves a day on, and its notifications sync
	// the demo again: the stored cursors are then ahead of the next run's
	// simulator, which starts at its first day again.
	advanced := time.Now()
	resp, err := http.Post(demo.SimURL+"/_sim/advance", "application/json", strings.NewReader(`{"days": 1}`))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("advance the simulator: %v, %v", resp, err)
	}
	resp.Body.Close()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		var n int
		err := pool.QueryRow(context.Background(), `SELECT count(*) FROM bank_connections
			WHERE provider = 'plaid' AND last_synced_at > $1`, advanced).Scan(&n)
		if err == nil && n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Plaid demo did not sync after the simulator's day moved on: %v", err)
		}
	}
	stop()
	second := time.Now()
	startDev(t, t.TempDir())
	var synced int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM bank_connections
		WHERE status = 'active' AND last_synced_at > $1`, second).Scan(&synced); err != nil {
		t.Fatal(err)
	}
	if want := len(all.NewRegistry().Names()); synced != want {
		var errs []string
		rows, _ := pool.Query(context.Background(), `SELECT provider || ': ' || COALESCE(last_provider_error_message, status) FROM bank_connections`)
		for rows.Next() {
			var e string
			_ = rows.Scan(&e)
			errs = append(errs, e)
		}
		t.Fatalf("%d of %d demo connections synced on the second run: %v", synced, want, errs)
	}
}

// TestSyncRunsAWaitingRetryNow asks for a sync while an earlier one waits
// to retry: the waiting job is made available at once rather than skipped.
func TestSyncRunsAWaitingRetryNow(t *testing.T) {
	t.Setenv("FINSYNC_ENCRYPTION_KEY", strings.Repeat("0b", 32))
	pool, dbURL := storagetest.NewDB(t)
	s := httptest.NewServer(allsim.New(sim.Options{Seed: 4}))
	defer s.Close()
	uid := run(t, dbURL, "users", "create", "--email", "retry@example.com", "--plan", "pro")["id"].(string)
	cid := run(t, dbURL, "connections", "add", "--user", uid, "--provider", "stripe", "--sim", "--sim-url", s.URL)["id"].(string)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `UPDATE river_job SET state = 'retryable', attempt = 1, scheduled_at = now() + interval '1 hour'
		WHERE kind = 'sync_connection' AND args->>'connection_id' = $1`, cid); err != nil {
		t.Fatal(err)
	}
	if got := run(t, dbURL, "sync", "--connection", cid); got["enqueued"] != float64(1) {
		t.Fatalf("sync: %v", got)
	}
	var state string
	var jobs int
	if err := pool.QueryRow(ctx, `SELECT min(state::text), count(*) FROM river_job
		WHERE kind = 'sync_connection' AND args->>'connection_id' = $1 AND scheduled_at <= now()`, cid).Scan(&state, &jobs); err != nil {
		t.Fatal(err)
	}
	if jobs != 1 || state != "available" {
		t.Fatalf("%d due sync jobs in state %q, want 1 available", jobs, state)
	}
}

// TestDevSaysWhenItsSimulatorPortIsTaken runs `finsync dev` with its
// simulator's port held by another server that answers every request (as a
// second demo's simulator would): dev must fail, naming the port and why,
// rather than sync against the other process's simulator.
func TestDevSaysWhenItsSimulatorPortIsTaken(t *testing.T) {
	_, dbURL := storagetest.NewDB(t)
	t.Setenv("DATABASE_URL", dbURL)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer other.Close()
	simAddr := strings.TrimPrefix(other.URL, "http://")
	var out, errOut syncBuffer
	root := newRoot(&out, &errOut)
	root.SetArgs([]string{"--json", "dev", "--addr", freeAddr(t), "--sim-addr", simAddr, "--metrics-addr", freeAddr(t), "--dir", t.TempDir()})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := root.ExecuteContext(ctx)
	if err == nil || !strings.Contains(err.Error(), simAddr) || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("dev with its simulator's port taken: %v", err)
	}
}
