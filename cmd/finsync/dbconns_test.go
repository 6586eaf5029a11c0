package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/finsync/finsync/storage/storagetest"
)

// TestDBMaxConnsSizesThePools: serve and worker refuse a bad
// FINSYNC_DB_MAX_CONNS before connecting to anything, and open their pool
// at the size given, or at their own default (finsync_db_pool_max_conns).
func TestDBMaxConnsSizesThePools(t *testing.T) {
	t.Setenv("FINSYNC_ENCRYPTION_KEY", strings.Repeat("0a", 32))
	t.Setenv("FINSYNC_CURSOR_KEY", strings.Repeat("0b", 32))
	for _, cmd := range []string{"serve", "worker"} {
		t.Setenv("FINSYNC_DB_MAX_CONNS", "0")
		var out, errOut syncBuffer
		root := newRoot(&out, &errOut)
		root.SetArgs([]string{"--database-url", "postgres://nobody@127.0.0.1:1/none", cmd, "--metrics-addr", ""})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := root.ExecuteContext(ctx)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "FINSYNC_DB_MAX_CONNS") {
			t.Fatalf("%s with FINSYNC_DB_MAX_CONNS=0: %v, want a refusal naming it", cmd, err)
		}
	}
	_, dbURL := storagetest.NewDB(t)
	for _, c := range []struct {
		cmd, env, want string
	}{
		{"serve", "7", "7"},
		{"serve", "", "16"},
		{"worker", "5", "5"},
		{"worker", "", "12"},
	} {
		t.Run(c.cmd+" FINSYNC_DB_MAX_CONNS="+c.env, func(t *testing.T) {
			t.Setenv("FINSYNC_DB_MAX_CONNS", c.env)
			metricsAddr := freeAddr(t)
			args := []string{"--database-url", dbURL, c.cmd, "--metrics-addr", metricsAddr}
			if c.cmd == "serve" {
				args = append(args, "--addr", freeAddr(t))
			}
			var out, errOut syncBuffer
			root := newRoot(&out, &errOut)
			root.SetArgs(args)
			ctx, stop := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- root.ExecuteContext(ctx) }()
			defer func() {
				stop()
				select {
				case <-done:
				case <-time.After(30 * time.Second):
					t.Error(c.cmd + " did not stop")
				}
			}()
			deadline := time.Now().Add(30 * time.Second)
			for {
				got := poolMetric("http://"+metricsAddr+"/metrics", "finsync_db_pool_max_conns")
				if got == c.want {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("finsync_db_pool_max_conns = %q, want %s; log:\n%s", got, c.want, errOut.String())
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}

// poolMetric reads one unlabelled metric's value from a /metrics page, or
// "" when the page or the metric is missing.
func poolMetric(url, name string) string {
	resp, err := http.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			return rest
		}
	}
	return ""
}
