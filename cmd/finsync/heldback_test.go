package main

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/storage/storagetest"
	"github.com/finsync/finsync/syncwait"
)

// heldBackLine is what `sync --wait` prints for a sync held back by a spent
// provider quota.
var heldBackLine = regexp.MustCompile(`held back until (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ): provider_quota`)

// TestSyncWaitOnASpentQuotaExitsHeldBack: a worker with the providers'
// declared limits syncs a SimpleFIN connection until its daily request
// quota is spent. Then `finsync sync --connection ID --wait`, run as a
// process, prints that the sync is held back, until when and why, and
// exits with status 3 within 10 s; `sync --all --wait` completes the other
// connection's sync and exits 3 without waiting for the held-back one.
func TestSyncWaitOnASpentQuotaExitsHeldBack(t *testing.T) {
	encKey, cursorKey := strings.Repeat("0a", 32), strings.Repeat("0b", 32)
	t.Setenv("FINSYNC_ENCRYPTION_KEY", encKey)
	t.Setenv("FINSYNC_CURSOR_KEY", cursorKey)
	bin := filepath.Join(t.TempDir(), "finsync")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	_, dbURL := storagetest.NewDB(t)
	s := httptest.NewServer(allsim.New(sim.Options{Seed: 3}))
	defer s.Close()
	uid := run(t, dbURL, "users", "create", "--email", "quota@example.com", "--plan", "pro")["id"].(string)
	run(t, dbURL, "users", "update", uid, "--storage-mode")
	sf := run(t, dbURL, "connections", "add", "--user", uid, "--provider", "simplefin", "--sim", "--sim-url", s.URL)["id"].(string)
	other := run(t, dbURL, "connections", "add", "--user", uid, "--provider", "mercury", "--sim", "--sim-url", s.URL)["id"].(string)

	// A worker with the providers' limits, counted in PostgreSQL.
	wErr := startWorker(t, dbURL)

	// SimpleFIN allows bursts of 6 requests; a sync spends 2.
	for i := 0; i < 3; i++ {
		var out, errOut syncBuffer
		root := newRoot(&out, &errOut)
		root.SetArgs([]string{"--database-url", dbURL, "sync", "--connection", sf, "--wait", "--timeout", "2m"})
		if err := root.ExecuteContext(context.Background()); err != nil {
			t.Fatalf("sync %d within the quota: %v\n%s\nworker: %s", i, err, errOut.String(), wErr.String())
		}
	}

	// The quota is spent: the wait says so and ends with status 3.
	stderr, status, took := runProcess(t, bin, dbURL, "sync", "--connection", sf, "--wait", "--timeout", "2m")
	t.Logf("sync --connection --wait on a spent quota: status %d after %s; printed:\n%s", status, took.Round(time.Millisecond), stderr)
	if status != syncwait.ExitHeldBack {
		t.Fatalf("exit status %d, want %d", status, syncwait.ExitHeldBack)
	}
	if took > 10*time.Second {
		t.Fatalf("took %s, want at most 10 s", took)
	}
	m := heldBackLine.FindStringSubmatch(stderr)
	if m == nil || !strings.Contains(stderr, sf+"  held back until ") {
		t.Fatalf("no held-back line for %s:\n%s", sf, stderr)
	}
	until, err := time.Parse(time.RFC3339, m[1])
	if err != nil || !until.After(time.Now()) || until.After(time.Now().Add(time.Hour+time.Minute)) {
		t.Fatalf("held back until %s (%v), want within the hour to come", m[1], err)
	}

	// --all: the other connection's sync completes; the held-back one does
	// not keep the wait.
	stderr, status, took = runProcess(t, bin, dbURL, "sync", "--all", "--wait", "--timeout", "2m")
	t.Logf("sync --all --wait: status %d after %s; printed:\n%s", status, took.Round(time.Millisecond), stderr)
	if status != syncwait.ExitHeldBack {
		t.Fatalf("exit status %d, want %d", status, syncwait.ExitHeldBack)
	}
	if !regexp.MustCompile(regexp.QuoteMeta(other) + `  completed \(pages [1-9]`).MatchString(stderr) {
		t.Fatalf("the other connection's sync did not complete:\n%s", stderr)
	}
	if !strings.Contains(stderr, sf+"  held back until ") || !heldBackLine.MatchString(stderr) {
		t.Fatalf("no held-back line for %s:\n%s", sf, stderr)
	}
	if took > 60*time.Second {
		t.Fatalf("sync --all --wait took %s", took)
	}
}

// runProcess runs the finsync binary with args against dbURL and returns
// its standard error, exit status and run time.
func runProcess(t *testing.T, bin, dbURL string, args ...string) (string, int, time.Duration) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--database-url", dbURL}, args...)...)
	cmd.Env = os.Environ()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	var ee *exec.ExitError
	switch {
	case err == nil:
		return stderr.String(), 0, took
	case errors.As(err, &ee):
		return stderr.String(), ee.ExitCode(), took
	}
	t.Fatalf("finsync %s: %v", strings.Join(args, " "), err)
	return "", 0, 0
}
