// Package simtest holds what the simulator packages' tests share: a
// simulator on an httptest server, a provider's credentials as a map, and
// a JSON request helper. It is for tests only.
package simtest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/finsync/finsync/providers/sim"
)

// Start is the fixed start date of test simulators.
var Start = time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)

// New starts a simulator serving ps on an httptest server closed at the
// end of the test; a zero Start or Seed in opts becomes Start or 42.
func New(t testing.TB, opts sim.Options, ps ...sim.ProviderSim) (*sim.Simulator, *httptest.Server) {
	t.Helper()
	if opts.Start.IsZero() {
		opts.Start = Start
	}
	if opts.Seed == 0 {
		opts.Seed = 42
	}
	s := sim.New(opts, ps...)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

// Creds decodes p's credentials for name into a map.
func Creds(t testing.TB, p sim.ProviderSim, name string) map[string]string {
	t.Helper()
	var m map[string]string
	if err := json.Unmarshal(p.Credentials(name), &m); err != nil {
		t.Fatalf("decode credentials: %v", err)
	}
	return m
}

// DoJSON sends a request with an optional JSON body and headers and decodes
// the JSON response into out (when non-nil). It returns the response, its
// body already read and closed.
func DoJSON(t testing.TB, method, url string, body any, hdr map[string]string, out any) *http.Response {
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
			t.Fatalf("%s %s: decode %q: %v", method, url, Truncate(raw), err)
		}
	}
	return resp
}

// Truncate shortens a body for error messages.
func Truncate(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

// HeapInUse returns the live heap after a collection.
func HeapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// Timed runs f and logs how long it took (go test -v shows it). It asserts
// nothing about speed: a test's wall time on a shared machine is noise, so
// speed targets live in BENCHMARKS.md.
func Timed(t testing.TB, what string, f func()) {
	t.Helper()
	start := time.Now()
	f()
	t.Logf("%s took %v", what, time.Since(start))
}
