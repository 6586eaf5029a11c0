package sim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

// testStart is the fixed start date of test simulators.
var testStart = time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)

// newTestSim starts a simulator on an httptest server.
func newTestSim(t *testing.T, opts Options) (*Simulator, *httptest.Server) {
	t.Helper()
	if opts.Start.IsZero() {
		opts.Start = testStart
	}
	if opts.Seed == 0 {
		opts.Seed = 42
	}
	s := New(opts, Builtin()...)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

// creds decodes Credentials(provider, name) into a map.
func creds(t *testing.T, provider, name string) map[string]string {
	t.Helper()
	var m map[string]string
	if err := json.Unmarshal(Builtin().Credentials(provider, name), &m); err != nil {
		t.Fatalf("decode credentials: %v", err)
	}
	return m
}

// doJSON sends a request with an optional JSON body and headers and decodes
// the JSON response into out (when non-nil). It returns the response.
func doJSON(t *testing.T, method, url string, body any, hdr map[string]string, out any) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: decode %q: %v", method, url, truncate(raw), err)
		}
	}
	return resp
}

// truncate shortens a body for error messages.
func truncate(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

// jsonReader returns a reader over a JSON literal.
func jsonReader(s string) io.Reader { return strings.NewReader(s) }

// heapInUse returns the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// timed runs f and fails when it takes longer than a generous bound that
// only an O(history) implementation would exceed.
func timed(t *testing.T, what string, f func()) {
	t.Helper()
	start := time.Now()
	f()
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("%s took %v", what, d)
	}
}

// million is the history size of the scale tests.
const million = 1_000_000
