//go:build fleet

package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/finsync/finsync/internal/pgcluster"
)

// harness is one fleet: a database cluster, the simulator and the finsync
// processes started on it, each by name.
type harness struct {
	t     *testing.T
	bin   string
	dir   string
	db    *pgcluster.Cluster
	env   []string
	mu    sync.Mutex
	procs map[string]*process
}

// process is one running finsync process and its addresses.
type process struct {
	name    string
	cmd     *exec.Cmd
	addr    string // API address (serve and sim only)
	ops     string // ops address: /livez, /readyz, /metrics
	exited  chan struct{}
	logPath string
}

// newHarness builds the binary, starts a private cluster, migrates it and
// starts the simulator. Every process it starts is stopped at cleanup.
func newHarness(t *testing.T) *harness {
	t.Helper()
	dir := t.TempDir()
	h := &harness{t: t, dir: dir, bin: filepath.Join(dir, "finsync"), procs: map[string]*process{}}
	build := exec.Command("go", "build", "-o", h.bin, "../cmd/finsync")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build finsync: %v\n%s", err, out)
	}
	ctx := context.Background()
	h.db = pgcluster.Start(ctx, t)
	h.env = append(os.Environ(),
		"DATABASE_URL="+h.db.URL("postgres"),
		"FINSYNC_LOG_LEVEL=warn",
	)
	h.env = append(h.env, "FINSYNC_ENCRYPTION_KEY="+h.newKey(), "FINSYNC_CURSOR_KEY="+h.newKey())
	h.CLI("migrate")
	sim := h.start("sim", "sim", "--addr", "{addr}")
	h.env = append(h.env, "FINSYNC_SIM_URL=http://"+sim.addr)
	t.Cleanup(h.stopAll)
	return h
}

// newKey makes a service key with the binary.
func (h *harness) newKey() string {
	var out struct{ Key string }
	h.CLIJSON(&out, "keys", "generate")
	return out.Key
}

// Serve starts a `finsync serve` process and waits until it is ready.
func (h *harness) Serve(name string) *process {
	p := h.start(name, "serve", "--addr", "{addr}", "--metrics-addr", "{ops}")
	h.awaitReady(p)
	return p
}

// Worker starts a `finsync worker` process and waits until it is live.
func (h *harness) Worker(name string) *process {
	p := h.start(name, "worker", "--metrics-addr", "{ops}", "--no-provider-rate-limits")
	h.awaitLive(p)
	return p
}

// start runs the binary with args; {addr} and {ops} become free addresses.
func (h *harness) start(name string, args ...string) *process {
	h.t.Helper()
	p := &process{name: name, exited: make(chan struct{}), logPath: filepath.Join(h.dir, name+".log")}
	for i, a := range args {
		switch a {
		case "{addr}":
			p.addr = freeAddr(h.t)
			args[i] = p.addr
		case "{ops}":
			p.ops = freeAddr(h.t)
			args[i] = p.ops
		}
	}
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		h.t.Fatalf("log file: %v", err)
	}
	p.cmd = exec.Command(h.bin, args...)
	p.cmd.Env = h.env
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		h.t.Fatalf("start %s: %v", name, err)
	}
	go func() { _ = p.cmd.Wait(); logf.Close(); close(p.exited) }()
	h.mu.Lock()
	h.procs[name] = p
	h.mu.Unlock()
	if p.addr != "" && args[0] == "sim" {
		h.awaitHTTP(p, "http://"+p.addr+"/", func(int) bool { return true })
	}
	return p
}

// awaitReady waits for the process's /readyz to answer 200.
func (h *harness) awaitReady(p *process) {
	h.awaitHTTP(p, "http://"+p.ops+"/readyz", func(c int) bool { return c == http.StatusOK })
}

// awaitLive waits for the process's /livez to answer 200.
func (h *harness) awaitLive(p *process) {
	h.awaitHTTP(p, "http://"+p.ops+"/livez", func(c int) bool { return c == http.StatusOK })
}

func (h *harness) awaitHTTP(p *process, url string, ok func(int) bool) {
	h.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			h.t.Fatalf("%s exited: %s", p.name, h.logTail(p))
		default:
		}
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if ok(resp.StatusCode) {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	h.t.Fatalf("%s not ready at %s after 60 s: %s", p.name, url, h.logTail(p))
}

// Kill sends sig to the named process and waits up to limit for it to
// exit, returning how long it took; it fails the test past the limit.
func (h *harness) Kill(name string, sig syscall.Signal, limit time.Duration) time.Duration {
	h.t.Helper()
	h.mu.Lock()
	p := h.procs[name]
	delete(h.procs, name)
	h.mu.Unlock()
	start := time.Now()
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
		return time.Since(start)
	case <-time.After(limit):
		_ = p.cmd.Process.Kill()
		<-p.exited
		h.t.Fatalf("%s still running %s after %v: %s", name, limit, sig, h.logTail(p))
		return 0
	}
}

func (h *harness) stopAll() {
	h.mu.Lock()
	procs := h.procs
	h.procs = map[string]*process{}
	h.mu.Unlock()
	for _, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range procs {
		select {
		case <-p.exited:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		if h.t.Failed() {
			h.t.Logf("log of %s:\n%s", p.name, h.logTail(p))
		}
	}
}

func (h *harness) logTail(p *process) string {
	b, _ := os.ReadFile(p.logPath)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// CLI runs a finsync command with --json and returns its standard output.
func (h *harness) CLI(args ...string) []byte {
	h.t.Helper()
	cmd := exec.Command(h.bin, append([]string{"--json"}, args...)...)
	cmd.Env = h.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		h.t.Fatalf("finsync %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// CLIJSON runs a finsync command and decodes its JSON result into v.
func (h *harness) CLIJSON(v any, args ...string) {
	h.t.Helper()
	out := h.CLI(args...)
	if err := json.Unmarshal(out, v); err != nil {
		h.t.Fatalf("finsync %s: decode %q: %v", strings.Join(args, " "), out, err)
	}
}

// User creates a user on plan and an API key for it (keyFlags are extra
// flags of `keys create`), returning the user id, the key and its id.
func (h *harness) User(email, plan string, keyFlags ...string) (userID, key, keyID string) {
	var u struct{ ID string }
	h.CLIJSON(&u, "users", "create", "--email", email, "--plan", plan)
	var k struct{ ID, Key string }
	h.CLIJSON(&k, append([]string{"keys", "create", "--user", u.ID}, keyFlags...)...)
	return u.ID, k.Key, k.ID
}

// client calls the API of serve processes with one key.
type client struct {
	t    *testing.T
	key  string
	http *http.Client
}

func newClient(t *testing.T, key string) *client {
	return &client{t: t, key: key, http: &http.Client{Timeout: 30 * time.Second}}
}

// Do sends a request to the process and returns the status, headers and body.
func (c *client) Do(p *process, method, path string, body any) (int, http.Header, []byte, error) {
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		r = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return 0, nil, nil, err
		}
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, "http://"+p.addr+path, r)
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	if r != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, err
}

// MustJSON sends a request, requires status want and decodes the body into v.
func (c *client) MustJSON(p *process, method, path string, body any, want int, v any) {
	c.t.Helper()
	code, _, b, err := c.Do(p, method, path, body)
	if err != nil {
		c.t.Fatalf("%s %s on %s: %v", method, path, p.name, err)
	}
	if code != want {
		c.t.Fatalf("%s %s on %s: status %d, want %d: %s", method, path, p.name, code, want, b)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			c.t.Fatalf("%s %s: decode: %v: %s", method, path, err, b)
		}
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}

// eventually polls cond every 50 ms until it holds or limit passes, and
// returns how long it took and whether it held.
func eventually(limit time.Duration, cond func() bool) (time.Duration, bool) {
	start := time.Now()
	for {
		if cond() {
			return time.Since(start), true
		}
		if time.Since(start) > limit {
			return time.Since(start), false
		}
		time.Sleep(50 * time.Millisecond)
	}
}
