package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/finsync/finsync/config"
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
		if _, err := config.Load(os.Getenv); err != nil {
			t.Fatalf("FINSYNC_SYNC_WRITE_RATE=%q: %v", good, err)
		}
	}
}

// TestServeAndWorkerRefuseInvalidSettings: each invalid setting stops serve
// and worker before they connect to anything, with a message naming the
// variable and what it holds; nothing falls back to a default silently.
func TestServeAndWorkerRefuseInvalidSettings(t *testing.T) {
	t.Setenv("FINSYNC_ENCRYPTION_KEY", strings.Repeat("0a", 32))
	t.Setenv("FINSYNC_CURSOR_KEY", strings.Repeat("0b", 32))
	cases := []struct{ name, value string }{
		{"FINSYNC_LOG_LEVEL", "verbose"},
		{"FINSYNC_LOG_LEVEL", "inf"},
		{"FINSYNC_READ_MAX_LAG", "5"},
		{"FINSYNC_READ_MAX_LAG", "-1s"},
		{"FINSYNC_SYNC_WRITE_RATE", "lots"},
		{"FINSYNC_TRUSTED_PROXIES", "10.0.0.0/33"},
		{"FINSYNC_SIM_URL", "127.0.0.1:8090"},
		{"FINSYNC_RECONNECT_URL", "/reconnect/{connection_id}"},
		{"FINSYNC_RECONNECT_URL", "ftp://example.com/{connection_id}"},
		{"FINSYNC_READ_DATABASE_URL", "postgres://host:port/db"},
		{"DATABASE_URL", "postgres://host:notaport/db"},
		{"GOGC", "fast"},
		{"FINSYNC_PG_BINDIR", "/nonexistent/bin"},
		{"FINSYNC_WEBHOOK_ALLOW_PRIVATE", "yes"},
	}
	for _, cmd := range []string{"serve", "worker"} {
		for _, c := range cases {
			t.Run(cmd+" "+c.name+"="+c.value, func(t *testing.T) {
				t.Setenv(c.name, c.value)
				var out, errOut syncBuffer
				root := newRoot(&out, &errOut)
				args := []string{cmd, "--metrics-addr", ""}
				if c.name != "DATABASE_URL" {
					// Unreachable: a start that got past the check would
					// wait for it instead of failing at once.
					args = append([]string{"--database-url", "postgres://nobody@127.0.0.1:1/none"}, args...)
				}
				root.SetArgs(args)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				err := root.ExecuteContext(ctx)
				if err == nil || !strings.Contains(err.Error(), c.name+":") || !strings.Contains(err.Error(), "invalid configuration") {
					t.Fatalf("%s with %s=%q: %v, want a refusal naming it", cmd, c.name, c.value, err)
				}
			})
		}
	}
}

// TestServeRefusesAWeakOpsToken: a FINSYNC_OPS_TOKEN that is too short or
// trivial stops serve before it connects to anything, naming the variable.
func TestServeRefusesAWeakOpsToken(t *testing.T) {
	t.Setenv("FINSYNC_ENCRYPTION_KEY", strings.Repeat("0a", 32))
	t.Setenv("FINSYNC_CURSOR_KEY", strings.Repeat("0b", 32))
	for _, bad := range []string{"short", strings.Repeat("a", 64), "a token with spaces in it, long enough",
		strings.Repeat("5f", 16), "ops-token-for-tests-0123456789abcdef"} {
		t.Setenv("FINSYNC_OPS_TOKEN", bad)
		var out, errOut syncBuffer
		root := newRoot(&out, &errOut)
		root.SetArgs([]string{"--database-url", "postgres://nobody@127.0.0.1:1/none", "serve", "--metrics-addr", ""})
		if err := root.ExecuteContext(context.Background()); err == nil || !strings.Contains(err.Error(), "FINSYNC_OPS_TOKEN") {
			t.Fatalf("serve with FINSYNC_OPS_TOKEN=%q: %v, want a refusal naming it", bad, err)
		}
	}
	for _, good := range []string{"", "31800b35e3f9875e7133788adb3ad6e5e30294152a7bf876cf4beec9314be367"} {
		t.Setenv("FINSYNC_OPS_TOKEN", good)
		if _, err := config.Load(os.Getenv); err != nil {
			t.Fatalf("FINSYNC_OPS_TOKEN=%q: %v", good, err)
		}
	}
}
