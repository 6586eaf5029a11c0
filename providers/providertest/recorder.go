package providertest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/sim"
)

// Body is one 2xx answer kept by a Recorder.
type Body struct {
	// Path is the request's URL path, without the query.
	Path string
	// Data is the whole body as the simulator sent it.
	Data []byte
}

// Recorder is an http.RoundTripper that passes requests on and keeps the
// body of every 2xx answer, so that tests can decode the simulator's real
// pages outside an adapter call (decoding benchmarks, decoder comparisons).
type Recorder struct {
	// Next sends the requests (nil: http.DefaultTransport).
	Next http.RoundTripper

	mu     sync.Mutex
	bodies []Body
}

// RoundTrip sends req and keeps a 2xx answer's body.
func (r *Recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	next := r.Next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(req)
	if err != nil || resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp, err
	}
	data, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("record body of %s: %w", req.URL.Path, err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(data))
	r.mu.Lock()
	r.bodies = append(r.bodies, Body{Path: req.URL.Path, Data: data})
	r.mu.Unlock()
	return resp, nil
}

// Bodies returns the answers kept so far, oldest first.
func (r *Recorder) Bodies() []Body {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Body(nil), r.bodies...)
}

// Reset forgets the answers kept so far.
func (r *Recorder) Reset() {
	r.mu.Lock()
	r.bodies = nil
	r.mu.Unlock()
}

// Recording is a simulator served over HTTP, one connection of the suite's
// provider to it, and the adapter under test talking to it through a
// Recorder.
type Recording struct {
	// Sim is the simulator.
	Sim *sim.Simulator
	// Provider is the adapter, built by the suite's New.
	Provider providers.Provider
	// Conn is the connection to the simulator.
	Conn providers.Connection
	// Recorder keeps every 2xx answer the adapter reads.
	Recorder *Recorder
}

// NewRecording starts a simulator whose connection has n transactions over
// a year, and builds the suite's adapter on a recording client. The server
// is closed when tb's test ends.
func NewRecording(tb testing.TB, s Suite, n int) *Recording {
	tb.Helper()
	s = s.withDefaults()
	sm := sim.New(sim.Options{Seed: 42, Start: Start})
	srv := httptest.NewServer(sm)
	tb.Cleanup(srv.Close)
	conn := connection(s, srv.URL, "recording")
	key, err := sim.CredentialKey(s.Provider, conn.Credentials)
	if err != nil {
		tb.Fatal(err)
	}
	if err := sm.SetConnection(sim.ConnectionSettings{Provider: s.Provider, Credential: key, Transactions: n, HistoryDays: 365}); err != nil {
		tb.Fatal(err)
	}
	rec := &Recorder{Next: srv.Client().Transport}
	return &Recording{Sim: sm, Provider: s.New(&http.Client{Transport: rec}), Conn: conn, Recorder: rec}
}

// Walk runs Transactions from cursor until Done and returns the final
// cursor and the number of pages read.
func (r *Recording) Walk(tb testing.TB, cursor string) (string, int) {
	tb.Helper()
	today, err := parseToday(r.Sim)
	if err != nil {
		tb.Fatal(err)
	}
	for i := 1; ; i++ {
		if i > 10000 {
			tb.Fatal("sync did not finish in 10000 pages")
		}
		page, err := r.Provider.Transactions(tb.Context(), r.Conn, providers.TransactionRequest{Cursor: cursor, Today: today})
		if err != nil {
			tb.Fatalf("Transactions page %d: %v", i, err)
		}
		cursor = page.Next
		if page.Done {
			return cursor, i
		}
	}
}

// parseToday is the simulator's current day.
func parseToday(sm *sim.Simulator) (domain.Date, error) {
	d, err := domain.ParseDate(sm.State().Today)
	if err != nil {
		return domain.Date{}, fmt.Errorf("simulator today: %w", err)
	}
	return d, nil
}
