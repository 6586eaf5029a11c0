package providertest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/internal/wire"
	"github.com/finsync/finsync/providers/sim"
)

// Body is one answer kept by a Recorder.
type Body struct {
	// Path is the request's URL path, without the query.
	Path string
	// Data is the whole body as the simulator sent it.
	Data []byte
	// Request is the request as sent; its body was already consumed.
	Request *http.Request
	// Status and Header are the answer's status code and headers.
	Status int
	Header http.Header
}

// Recorder is an http.RoundTripper that passes requests on and keeps every
// answer, so that tests can decode the simulator's real pages outside an
// adapter call (decoding benchmarks, decoder comparisons) and check them
// against a provider's published API description. It copies a body as the
// client reads it, so the client still reads the answer as it arrives, and
// keeps it once the client read it to its end: an answer whose body the
// client closed early is not kept.
type Recorder struct {
	// Next sends the requests (nil: http.DefaultTransport).
	Next http.RoundTripper

	mu     sync.Mutex
	bodies []Body
}

// RoundTrip sends req and arranges for the answer's body to be kept.
func (r *Recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	next := r.Next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	sent := req.Clone(req.Context())
	sent.Body = http.NoBody
	resp.Body = &recordedBody{ReadCloser: resp.Body, rec: r, body: Body{
		Path: req.URL.Path, Request: sent, Status: resp.StatusCode, Header: resp.Header.Clone(),
	}}
	return resp, nil
}

// keep records one whole body.
func (r *Recorder) keep(b Body) {
	r.mu.Lock()
	r.bodies = append(r.bodies, b)
	r.mu.Unlock()
}

// recordedBody copies what is read of a body and hands the copy to the
// Recorder when the body's end is read. A body closed early, or whose
// reading failed, is not kept.
type recordedBody struct {
	io.ReadCloser
	rec  *Recorder
	body Body
	done bool
}

// Read reads from the body and copies what it read.
func (b *recordedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.done {
		return n, err
	}
	b.body.Data = append(b.body.Data, p[:n]...)
	switch {
	case err == io.EOF:
		b.done = true
		b.rec.keep(b.body)
	case err != nil:
		b.done = true
	}
	return n, err
}

// Bodies returns the 2xx answers kept so far, oldest first.
func (r *Recorder) Bodies() []Body {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ok []Body
	for _, b := range r.bodies {
		if b.Status >= 200 && b.Status <= 299 {
			ok = append(ok, b)
		}
	}
	return ok
}

// Answers returns every answer kept so far, whatever its status, oldest
// first.
func (r *Recorder) Answers() []Body {
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
	// Recorder keeps every answer the adapter reads to its end.
	Recorder *Recorder
}

// NewRecording starts a simulator whose connection has n transactions over
// a year, and builds the suite's adapter on a recording client. The server
// is closed when tb's test ends.
func NewRecording(tb testing.TB, s Suite, n int) *Recording {
	tb.Helper()
	s = s.withDefaults()
	sm := allsim.New(sim.Options{Seed: 42, Start: Start})
	srv := httptest.NewServer(sm)
	tb.Cleanup(srv.Close)
	conn := connection(s, srv.URL, "recording")
	key, err := allsim.CredentialKey(s.Provider, conn.Credentials)
	if err != nil {
		tb.Fatal(err)
	}
	if err := sm.SetConnection(sim.ConnectionSettings{Provider: s.Provider, Credential: key, Transactions: n, HistoryDays: 365}); err != nil {
		tb.Fatal(err)
	}
	rec := &Recorder{Next: srv.Client().Transport}
	return &Recording{Sim: sm, Provider: s.New(&http.Client{Transport: rec}), Conn: conn, Recorder: rec}
}

// Exercise makes every call the adapter offers against the simulator, so
// that the Recorder holds an answer of each kind: accounts, holdings and
// investment transactions where offered, a first sync, and, after the
// simulator's clock moved on (pending rows post, some vanish), a second
// sync that re-checks the pending rows.
func (r *Recording) Exercise(tb testing.TB) {
	tb.Helper()
	ctx := tb.Context()
	if _, err := r.Provider.Accounts(ctx, r.Conn); err != nil {
		tb.Fatalf("Accounts: %v", err)
	}
	today, err := parseToday(r.Sim)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := r.Provider.Holdings(ctx, r.Conn); err != nil && !errors.Is(err, providers.ErrNotSupported) {
		tb.Fatalf("Holdings: %v", err)
	}
	start := domain.Date{Time: today.AddDate(0, 0, -90)}
	if _, err := r.Provider.InvestmentTransactions(ctx, r.Conn, start, today); err != nil && !errors.Is(err, providers.ErrNotSupported) {
		tb.Fatalf("InvestmentTransactions: %v", err)
	}
	st := NewStore()
	cursor := r.Walk(tb, "", st)
	if err := r.Sim.Advance(5); err != nil {
		tb.Fatal(err)
	}
	r.Walk(tb, cursor, st)
}

// Walk runs Transactions from cursor until Done, applying every page to st
// (whose pending rows the first request carries), and returns the final
// cursor.
func (r *Recording) Walk(tb testing.TB, cursor string, st *Store) string {
	tb.Helper()
	today, err := parseToday(r.Sim)
	if err != nil {
		tb.Fatal(err)
	}
	for i := 1; ; i++ {
		if i > 10000 {
			tb.Fatal("sync did not finish in 10000 pages")
		}
		req := providers.TransactionRequest{Cursor: cursor, Today: today}
		if i == 1 { // as the worker does: on a sync's first page only
			req.PendingIDs = st.PendingIDs()
		}
		page, err := r.Provider.Transactions(tb.Context(), r.Conn, req)
		if err != nil {
			tb.Fatalf("Transactions page %d: %v", i, err)
		}
		st.Apply(page)
		cursor = page.Next
		if page.Done {
			return cursor
		}
	}
}

// CheckDecoding records every answer the simulator gives s's adapter (a
// history of n transactions, Exercise), fails t unless an answer of each
// of kinds was recorded (kindOf names an answer's kind from its path), and
// compares decoding each answer into target(kind) with wire.Decode and with
// encoding/json (CompareDecoding).
func CheckDecoding(t *testing.T, s Suite, n int, kinds []string, kindOf func(path string) string, target func(kind string) any) {
	t.Helper()
	rec := NewRecording(t, s, n)
	rec.Exercise(t)
	bodies := rec.Recorder.Bodies()
	seen := map[string]bool{}
	for _, b := range bodies {
		seen[kindOf(b.Path)] = true
	}
	for _, kind := range kinds {
		if !seen[kind] {
			t.Errorf("no %s answer recorded", kind)
		}
	}
	t.Logf("comparing %d answers", len(bodies))
	CompareDecoding(t, bodies, func(path string) any { return target(kindOf(path)) },
		func(data []byte, v any) error {
			return wire.Decode(s.Provider, &wire.Response{Status: http.StatusOK, Body: data}, v)
		})
}

// FirstPage returns the first answer s's adapter receives, in its first
// Transactions call on a history of n transactions, whose path match
// accepts.
func FirstPage(tb testing.TB, s Suite, n int, match func(path string) bool) *wire.Response {
	tb.Helper()
	rec := NewRecording(tb, s, n)
	if _, err := rec.Provider.Transactions(tb.Context(), rec.Conn, providers.TransactionRequest{}); err != nil {
		tb.Fatal(err)
	}
	for _, body := range rec.Recorder.Bodies() {
		if match(body.Path) {
			return &wire.Response{Status: http.StatusOK, Body: body.Data}
		}
	}
	tb.Fatal("no matching answer recorded")
	return nil
}

// CompareDecoding decodes each body twice, with encoding/json and with
// decode, into fresh values made by target for the body's path, and fails
// tb unless both succeed and agree. target returns nil for a path it does
// not know, which fails tb too, so that no answer goes unchecked.
func CompareDecoding(tb testing.TB, bodies []Body, target func(path string) any, decode func(data []byte, v any) error) {
	tb.Helper()
	if len(bodies) == 0 {
		tb.Fatal("no answers to compare")
	}
	for _, b := range bodies {
		want, got := target(b.Path), target(b.Path)
		if want == nil {
			tb.Errorf("%s: no type to decode the answer into", b.Path)
			continue
		}
		if err := json.Unmarshal(b.Data, want); err != nil {
			tb.Errorf("%s: encoding/json: %v", b.Path, err)
			continue
		}
		if err := decode(b.Data, got); err != nil {
			tb.Errorf("%s: %v", b.Path, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			tb.Errorf("%s: decoded differently from encoding/json: %s", b.Path, firstDifference(got, want))
		}
	}
}

// firstDifference shows where the JSON forms of got and want first differ.
func firstDifference(got, want any) string {
	g, err1 := json.Marshal(got)
	w, err2 := json.Marshal(want)
	if err := errors.Join(err1, err2); err != nil {
		return err.Error()
	}
	i := 0
	for i < len(g) && i < len(w) && g[i] == w[i] {
		i++
	}
	if i == len(g) && i == len(w) {
		return "same JSON form, different Go values"
	}
	from := max(0, i-80)
	return fmt.Sprintf("at byte %d:\n got …%s…\nwant …%s…", i, g[from:min(len(g), i+80)], w[from:min(len(w), i+80)])
}

// parseToday is the simulator's current day.
func parseToday(sm *sim.Simulator) (domain.Date, error) {
	d, err := domain.ParseDate(sm.State().Today)
	if err != nil {
		return domain.Date{}, fmt.Errorf("simulator today: %w", err)
	}
	return d, nil
}
