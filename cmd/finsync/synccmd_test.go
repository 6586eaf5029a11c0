package main

import (
	"context"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/storage/storagetest"
)

// TestSyncWaitWithoutWorkerFailsFast: `sync --wait` with no worker running
// says so and exits non-zero within 30 s instead of waiting out --timeout.
// With a worker running, it follows the sync to its end and shows the pages
// and transactions it stored.
func TestSyncWaitWithoutWorkerFailsFast(t *testing.T) {
	t.Setenv("FINSYNC_ENCRYPTION_KEY", strings.Repeat("0a", 32))
	t.Setenv("FINSYNC_CURSOR_KEY", strings.Repeat("0b", 32))
	_, dbURL := storagetest.NewDB(t)
	s := httptest.NewServer(allsim.New(sim.Options{Seed: 3}))
	defer s.Close()
	uid := run(t, dbURL, "users", "create", "--email", "wait@example.com", "--plan", "pro")["id"].(string)
	run(t, dbURL, "users", "update", uid, "--storage-mode")
	cid := run(t, dbURL, "connections", "add", "--user", uid, "--provider", "mercury", "--sim", "--sim-url", s.URL)["id"].(string)

	var out, errOut syncBuffer
	root := newRoot(&out, &errOut)
	root.SetArgs([]string{"--database-url", dbURL, "sync", "--connection", cid, "--wait"})
	start := time.Now()
	err := root.ExecuteContext(context.Background())
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "no finsync worker is running") {
		t.Fatalf("sync --wait without a worker: %v\n%s", err, errOut.String())
	}
	if took > 30*time.Second {
		t.Fatalf("sync --wait took %s to notice that no worker runs", took)
	}
	t.Logf("no worker noticed after %s; printed:\n%s", took.Round(time.Millisecond), errOut.String())

	// With a worker: the enqueued syncs run, and the wait shows progress.
	wErr := startWorker(t, dbURL, "--no-provider-rate-limits")
	var out2, errOut2 syncBuffer
	root = newRoot(&out2, &errOut2)
	root.SetArgs([]string{"--database-url", dbURL, "sync", "--connection", cid, "--wait", "--timeout", "2m"})
	if err := root.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("sync --wait with a worker: %v\n%s\nworker: %s", err, errOut2.String(), wErr.String())
	}
	t.Logf("with a worker, printed:\n%s", errOut2.String())
	m := regexp.MustCompile(`completed \(pages ([1-9][0-9]*), transactions ([1-9][0-9]*)\)`).FindStringSubmatch(errOut2.String())
	if m == nil {
		t.Fatalf("no progress shown:\n%s", errOut2.String())
	}
}
