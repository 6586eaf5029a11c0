package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/internal/pgcluster"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// TestServeReadsOnReplica runs `finsync serve` with FINSYNC_READ_DATABASE_URL
// naming a real standby: reads are counted on the replica in /metrics, a
// write is read back at once, and a bad lag bound refuses to start.
func TestServeReadsOnReplica(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	primary := pgcluster.Start(ctx, t)
	pool, err := storage.Open(ctx, primary.URL("postgres"), storage.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := storage.New(pool).Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	fx := storagetest.NewFixtures(t, pool)
	user := fx.User(domain.PlanPro, true)
	key := fx.Key(user.ID, nil)
	replica := primary.Replica(ctx, t)

	t.Setenv("FINSYNC_ENCRYPTION_KEY", strings.Repeat("0a", 32))
	t.Setenv("FINSYNC_CURSOR_KEY", strings.Repeat("0b", 32))
	t.Setenv("FINSYNC_READ_DATABASE_URL", replica.URL("postgres"))
	t.Setenv("FINSYNC_READ_MAX_LAG", "nope")
	var out, errOut syncBuffer
	root := newRoot(&out, &errOut)
	root.SetArgs([]string{"--database-url", primary.URL("postgres"), "serve", "--addr", freeAddr(t), "--metrics-addr", ""})
	if err := root.ExecuteContext(ctx); err == nil || !strings.Contains(err.Error(), "FINSYNC_READ_MAX_LAG") {
		t.Fatalf("serve with FINSYNC_READ_MAX_LAG=nope: %v, want a refusal naming it", err)
	}

	t.Setenv("FINSYNC_READ_MAX_LAG", "30s")
	addr, metricsAddr := freeAddr(t), freeAddr(t)
	root = newRoot(&out, &errOut)
	root.SetArgs([]string{"--database-url", primary.URL("postgres"), "serve", "--addr", addr, "--metrics-addr", metricsAddr})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(runCtx) }()
	t.Cleanup(func() {
		stop()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	})
	call := func(method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	metric := func(name string) string {
		resp, err := http.Get("http://" + metricsAddr + "/metrics")
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
	deadline := time.Now().Add(time.Minute)
	for metric("finsync_read_replica_usable") != "1" {
		if time.Now().After(deadline) {
			t.Fatalf("replica never usable; serve log:\n%s", errOut.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, body := call(http.MethodGet, "/v2/accounts", ""); code != http.StatusOK {
		t.Fatalf("GET /v2/accounts: %d %s", code, body)
	}
	if n := metric(`finsync_db_reads_total{server="replica"}`); n == "" || n == "0" {
		t.Fatalf("reads on the replica: %q, want at least one", n)
	}
	code, body := call(http.MethodPost, "/v2/accounts", `{"name":"Cash","type":"cash","currency":"USD"}`)
	if code != http.StatusCreated {
		t.Fatalf("POST /v2/accounts: %d %s", code, body)
	}
	var created struct {
		Account struct {
			ID string `json:"id"`
		} `json:"account"`
	}
	if err := json.Unmarshal([]byte(body), &created); err != nil || created.Account.ID == "" {
		t.Fatalf("created account %s: %v", body, err)
	}
	if code, body := call(http.MethodGet, "/v2/accounts/"+created.Account.ID, ""); code != http.StatusOK {
		t.Fatalf("own new account read back: %d %s", code, body)
	}
}
