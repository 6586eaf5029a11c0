package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/api/ops"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/internal/requestid"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/worker"
)

// logBuffer collects JSON log lines from several goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines returns the log lines written so far, decoded.
func (b *logBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// withLoggedJobs logs the API and a real River worker client (every
// finsync worker) to buf, and gives the client to the API to enqueue jobs.
func withLoggedJobs(t *testing.T, buf *logBuffer) envOption {
	return func(c *api.Config) {
		c.Log = slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c.Jobs = startWorkerClient(t, worker.Config{Store: c.Store, Log: c.Log})
	}
}

// sendWithID sends a request with X-Request-Id set to id (through the
// client that checks every response against the OpenAPI documents).
func (e *env) sendWithID(method, path, key, body, id string) response {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("X-Request-Id", id)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// TestRequestIDHonouredLoggedAndCarriedIntoJobs checks that a safe
// X-Request-Id is echoed, is in every log line of the request, is stored
// in the metadata of the job the request enqueued, and is in the worker's
// log lines about that job.
func TestRequestIDHonouredLoggedAndCarriedIntoJobs(t *testing.T) {
	var logs logBuffer
	e := newEnv(t, withLoggedJobs(t, &logs))
	w := seedWorld(e.fx)
	key := e.fx.Key(w.a.ID, nil)
	const id = "trace-01HZX.ab_c:42"

	r := e.sendWithID(http.MethodPost, "/v2/rules", key, categoryRule("Summary", "contains", `"coffee"`, w.catA, 10), id)
	e.expect(r, http.StatusCreated, "")
	if got := r.header.Get("X-Request-Id"); got != id {
		t.Fatalf("echoed id %q, want %q", got, id)
	}
	ruleID := object(t, r, "")["id"].(string)
	waitJobs(t, e.fx.Pool)

	var kind, stored string
	err := e.fx.Pool.QueryRow(context.Background(),
		`SELECT kind, coalesce(metadata->>'request_id', '') FROM river_job WHERE args->>'rule_id' = $1`, ruleID).Scan(&kind, &stored)
	if err != nil {
		t.Fatalf("the rule's job: %v", err)
	}
	if stored != id {
		t.Fatalf("job %s metadata request_id %q, want %q", kind, stored, id)
	}

	var requestLine, rulesLine, jobLine bool
	for _, l := range logs.lines(t) {
		switch l["msg"] {
		case "request":
			if l["route"] == "/v2/rules" && l["method"] == http.MethodPost {
				requestLine = true
				if l["request_id"] != id {
					t.Fatalf("request line without the id: %v", l)
				}
			}
		case "rules applied":
			rulesLine = rulesLine || l["request_id"] == id
		case "job worked":
			if l["request_id"] != id {
				t.Fatalf("job line without the id: %v", l)
			}
			jobLine = true
		}
	}
	if !requestLine || !rulesLine || !jobLine {
		t.Fatalf("log lines with the id: request %v, rules applied %v, job worked %v:\n%v", requestLine, rulesLine, jobLine, logs.lines(t))
	}
}

// TestHostileRequestIDsReplaced checks that ids that are too long, or hold
// spaces, control characters, non-ASCII or header-splitting CR/LF, are
// neither echoed nor logged: the request goes on under a fresh UUID.
func TestHostileRequestIDsReplaced(t *testing.T) {
	var logs logBuffer
	e := newEnv(t, withLoggedJobs(t, &logs))
	cases := []string{
		strings.Repeat("a", 129),
		"has space",
		"tab\there",
		"nul\x00byte",
		"bell\x07",
		"caf\u00e9",
		"emoji-\U0001F600",
		"a/b",
		"<script>",
		"id\r\nX-Injected: 1",
		"id\nlog-line",
		`quote"d`,
	}
	for _, bad := range cases {
		status, echoed := rawGet(t, e.srv.Listener.Addr().String(), "/v2/health", bad)
		if status != http.StatusOK && status != http.StatusServiceUnavailable {
			// Go's server refuses some requests before the router (a
			// header split, a bare LF); those must be 400 from it, never
			// a crash or an echo.
			if status != http.StatusBadRequest {
				t.Fatalf("%q: status %d", bad, status)
			}
			continue
		}
		if echoed == bad || strings.ContainsAny(echoed, "\r\n") || strings.Contains(echoed, "Injected") {
			t.Fatalf("%q: echoed", bad)
		}
		if before, _, split := strings.Cut(bad, "\r\n"); split && echoed == before {
			// CR LF ends the header: the request carried the id before
			// it (a safe one) and another header, never one value.
			continue
		}
		if _, err := uuid.Parse(echoed); err != nil || len(echoed) != 36 {
			t.Fatalf("%q: replaced by %q, want a fresh UUID", bad, echoed)
		}
	}
	for _, l := range logs.lines(t) {
		got, _ := l["request_id"].(string)
		for _, bad := range cases {
			if got == bad {
				t.Fatalf("hostile id logged: %v", l)
			}
		}
	}
	// The longest id honoured is 128 characters.
	longest := strings.Repeat("b", 128)
	if got := e.sendWithID(http.MethodGet, "/v2/health", "", "", longest).header.Get("X-Request-Id"); got != longest {
		t.Fatalf("128-character id replaced by %q", got)
	}
}

// TestV1RequestIDIsAUUID checks that version 1, whose contract (docs/api-v1.md)
// promises a UUID, honours a UUID and replaces any other id.
func TestV1RequestIDIsAUUID(t *testing.T) {
	e := newEnv(t)
	user := e.fx.User(domain.PlanStandard, true).ID
	key := e.fx.Key(user, nil)
	want := uuid.NewString()
	if got := e.sendWithID(http.MethodGet, "/v1/accounts", key, "", want).header.Get("X-Request-Id"); got != want {
		t.Fatalf("v1 UUID id replaced by %q", got)
	}
	got := e.sendWithID(http.MethodGet, "/v1/accounts", key, "", "trace-1").header.Get("X-Request-Id")
	if got == "trace-1" {
		t.Fatal("v1 echoed a non-UUID id")
	}
	if _, err := uuid.Parse(got); err != nil {
		t.Fatalf("v1 id %q is not a UUID", got)
	}
}

// rawGet sends a GET with the X-Request-Id bytes as they are (Go's client
// refuses control characters) and returns the status and echoed id.
func rawGet(t *testing.T, addr, path, id string) (int, string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	req := "GET " + path + " HTTP/1.1\r\nHost: x\r\nX-Request-Id: " + id + "\r\nConnection: close\r\n\r\n"
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%q: %v", id, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("X-Request-Id")
}

// TestOpsSyncNowRequestIDReachesTheSyncLine checks that a sync enqueued by
// the ops console's "sync now" logs its one "sync finished" line with the
// request's id.
func TestOpsSyncNowRequestIDReachesTheSyncLine(t *testing.T) {
	var logs logBuffer
	s := allsim.New(sim.Options{Seed: 11, HistoryTransactions: 40})
	simSrv := httptest.NewServer(s)
	t.Cleanup(simSrv.Close)
	box, err := secrets.FromHex(strings.Repeat("2e", 32))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *api.Config) {
		// The process's logger, as finsync's commands build it.
		c.Log = slog.New(requestid.NewHandler(slog.NewJSONHandler(&logs, nil)))
		provs, err := worker.NewProviders(all.NewRegistry(), worker.ProviderOptions{Unlimited: true, Rates: c.Store, Quotas: c.Store})
		if err != nil {
			t.Fatal(err)
		}
		syncer := &worker.Syncer{Store: c.Store, Providers: provs, Box: box, Log: c.Log, Holder: uuid.New()}
		client := startWorkerClient(t, worker.Config{Store: c.Store, Log: c.Log, Syncer: syncer})
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		console, err := ops.New(ctx, ops.Config{Token: testOpsToken, Store: c.Store, Jobs: client, Log: c.Log})
		if err != nil {
			t.Fatal(err)
		}
		c.Ops = console
	})
	user := e.fx.User(domain.PlanPro, true)
	sealed, err := box.Seal(allsim.Credentials("plaid", "reqid"))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := storage.New(e.fx.Pool).CreateConnection(context.Background(), storage.NewConnection{
		UserID: user.ID, Provider: "plaid", BaseURL: allsim.BaseURL("plaid", simSrv.URL), SealedCredentials: sealed,
	})
	if err != nil {
		t.Fatal(err)
	}

	const id = "ops-sync-now-7f3a"
	status, _, body := e.opsDo(opsRequest{method: http.MethodPost, path: "/ops/connections/" + conn.ID.String() + "/sync"},
		func(r *http.Request) { bearer(testOpsToken)(r); r.Header.Set("X-Request-Id", id) })
	if status != http.StatusSeeOther {
		t.Fatalf("sync now: %d %s", status, body)
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		for _, l := range logs.lines(t) {
			if l["msg"] != "sync finished" || l["connection_id"] != conn.ID.String() {
				continue
			}
			if l["request_id"] != id || l["outcome"] != "ok" {
				t.Fatalf("sync line %v, want outcome ok and request_id %q", l, id)
			}
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no sync finished line for %s:\n%v", conn.ID, logs.lines(t))
}
