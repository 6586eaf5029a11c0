package main

import (
	"context"
	"strings"
	"testing"
)

// TestWorkerRefusesABadWriteRate: an invalid FINSYNC_SYNC_WRITE_RATE stops
// the worker before it connects to anything, with a message naming it.
func TestWorkerRefusesABadWriteRate(t *testing.T) {
	t.Setenv("FINSYNC_ENCRYPTION_KEY", strings.Repeat("0a", 32))
	t.Setenv("FINSYNC_CURSOR_KEY", strings.Repeat("0b", 32))
	for _, bad := range []string{"-1", "fast", "1.5"} {
		t.Setenv("FINSYNC_SYNC_WRITE_RATE", bad)
		var out, errOut syncBuffer
		root := newRoot(&out, &errOut)
		root.SetArgs([]string{"--database-url", "postgres://nobody@127.0.0.1:1/none", "worker", "--metrics-addr", ""})
		if err := root.ExecuteContext(context.Background()); err == nil || !strings.Contains(err.Error(), "FINSYNC_SYNC_WRITE_RATE") {
			t.Fatalf("worker with FINSYNC_SYNC_WRITE_RATE=%s: %v, want a refusal naming it", bad, err)
		}
	}
	for _, good := range []string{"", "0", "5000"} {
		t.Setenv("FINSYNC_SYNC_WRITE_RATE", good)
		if _, err := configFromEnv().syncWriteRate(); err != nil {
			t.Fatalf("FINSYNC_SYNC_WRITE_RATE=%q: %v", good, err)
		}
	}
}

// TestServeRefusesAWeakOpsToken: a FINSYNC_OPS_TOKEN that is too short or
// trivial stops serve before it connects to anything, naming the variable.
func TestServeRefusesAWeakOpsToken(t *testing.T) {
	t.Setenv("FINSYNC_ENCRYPTION_KEY", strings.Repeat("0a", 32))
	t.Setenv("FINSYNC_CURSOR_KEY", strings.Repeat("0b", 32))
	for _, bad := range []string{"short", strings.Repeat("a", 40), "a token with spaces in it, long enough"} {
		t.Setenv("FINSYNC_OPS_TOKEN", bad)
		var out, errOut syncBuffer
		root := newRoot(&out, &errOut)
		root.SetArgs([]string{"--database-url", "postgres://nobody@127.0.0.1:1/none", "serve", "--metrics-addr", ""})
		if err := root.ExecuteContext(context.Background()); err == nil || !strings.Contains(err.Error(), "FINSYNC_OPS_TOKEN") {
			t.Fatalf("serve with FINSYNC_OPS_TOKEN=%q: %v, want a refusal naming it", bad, err)
		}
	}
	for _, good := range []string{"", strings.Repeat("5f", 16)} {
		t.Setenv("FINSYNC_OPS_TOKEN", good)
		if _, err := configFromEnv().opsToken(); err != nil {
			t.Fatalf("FINSYNC_OPS_TOKEN=%q: %v", good, err)
		}
	}
}
