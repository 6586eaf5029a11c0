package wire_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/finsync/finsync/providers/internal/wire"
	"github.com/finsync/finsync/resilience"
)

// serveBody answers every request with status and body, written in parts
// (each flushed, so a body of more than one part is sent chunked; one part
// is sent with a Content-Length).
func serveBody(t *testing.T, status int, parts ...string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Test", "kept")
		w.WriteHeader(status)
		for _, p := range parts {
			_, _ = w.Write([]byte(p))
			if len(parts) > 1 {
				_ = http.NewResponseController(w).Flush()
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// serveCut answers every request with a raw HTTP/1.1 head and body, then
// closes the connection, cutting the body short of what the head promised.
func serveCut(t *testing.T, head string, body ...string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		defer conn.Close()
		_, _ = rw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + head + "\r\n")
		for _, b := range body {
			_, _ = rw.WriteString(b)
			_ = rw.Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// doJSON sends GET url with ctx through client and decodes into out.
func doJSON(t *testing.T, ctx context.Context, client *http.Client, url string, out any) (*wire.Response, error) {
	t.Helper()
	req, err := wire.NewJSONRequest(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return wire.DoJSON(client, "p", req, out)
}

// doThenDecode is what the adapters did before DoJSON: Do, then Decode of
// a 2xx body.
func doThenDecode(t *testing.T, ctx context.Context, client *http.Client, url string, out any) (*wire.Response, error) {
	t.Helper()
	req, err := wire.NewJSONRequest(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := wire.Do(client, "p", req)
	if err != nil || !resp.OK() {
		return resp, err
	}
	return resp, wire.Decode("p", resp, out)
}

// wantCode fails t unless err is an Unavailable *resilience.Error of code.
func wantCode(t *testing.T, what string, err error, code string) *resilience.Error {
	t.Helper()
	pe := resilience.AsError(err)
	if pe == nil || pe.Class != resilience.Unavailable || pe.Code != code {
		t.Errorf("%s: %v, want Unavailable %s", what, err, code)
	}
	return pe
}

// TestDoJSONAgreesWithDecode serves each of the agreement bodies, whole
// with a Content-Length and cut in two chunks, and requires DoJSON to
// decode or refuse it as Decode does (the same error for a whole body).
func TestDoJSONAgreesWithDecode(t *testing.T) {
	for _, body := range agreementBodies() {
		var want decodeRow
		wantErr := wire.Decode("p", &wire.Response{Status: http.StatusOK, Body: []byte(body)}, &want)
		half := len(body) / 2
		for _, parts := range [][]string{{body}, {body[:half], body[half:]}} {
			srv := serveBody(t, http.StatusOK, parts...)
			var got decodeRow
			resp, err := doJSON(t, t.Context(), srv.Client(), srv.URL, &got)
			switch {
			case resp == nil:
				t.Errorf("%q in %d parts: no response (%v)", body, len(parts), err)
			case resp.Body != nil || resp.Header.Get("X-Test") != "kept" || resp.Status != http.StatusOK:
				t.Errorf("%q in %d parts: response %+v", body, len(parts), resp)
			case (err == nil) != (wantErr == nil):
				t.Errorf("%q in %d parts: DoJSON %v, Decode %v", body, len(parts), err, wantErr)
			case err != nil:
				// Split in two, a character cut at the chunk boundary may be
				// named by its first byte (as the stream had it when it
				// refused), so only a whole body's message must match.
				pe, we := wantCode(t, fmt.Sprintf("%q", body), err, resilience.CodeMalformed), resilience.AsError(wantErr)
				if pe != nil && (len(parts) == 1 && pe.Message != we.Message || pe.HTTPStatus != http.StatusOK) {
					t.Errorf("%q in %d parts: %q (status %d), Decode says %q", body, len(parts), pe.Message, pe.HTTPStatus, we.Message)
				}
			case !reflect.DeepEqual(got, want):
				t.Errorf("%q in %d parts:\n got %+v\nwant %+v", body, len(parts), got, want)
			}
		}
	}
}

// TestDoJSONDecodesLargeStreamedBody decodes a body sent in many chunks,
// whose values straddle the chunks.
func TestDoJSONDecodesLargeStreamedBody(t *testing.T) {
	var parts []string
	for i := range 2000 {
		row := fmt.Sprintf(`{"a":"row %d \u00e9","b":%d}`, i, i)
		if i > 0 {
			row = "," + row
		}
		parts = append(parts, row[:len(row)/3], row[len(row)/3:])
	}
	parts = append([]string{`{"id":"big","amount":-12.30,"rows":[`}, parts...)
	parts = append(parts, "]}\n")
	srv := serveBody(t, http.StatusOK, parts...)
	var got decodeRow
	if _, err := doJSON(t, t.Context(), srv.Client(), srv.URL, &got); err != nil {
		t.Fatal(err)
	}
	if got.ID != "big" || got.Amount.String() != "-12.3" || len(got.Rows) != 2000 || got.Rows[1999].A != "row 1999 é" || got.Rows[1999].B != 1999 {
		t.Errorf("got id %q, amount %s, %d rows", got.ID, got.Amount, len(got.Rows))
	}
}

// TestDoJSONBodyCutShort checks that a 2xx body the server cuts short (it
// closes the connection) is an Unavailable NETWORK_ERROR with no response,
// as Do makes it, even when what arrived does not parse either.
func TestDoJSONBodyCutShort(t *testing.T) {
	rows := make([]string, 0, 400)
	for range 400 {
		rows = append(rows, fmt.Sprintf("%x\r\n%s\r\n", len(`{"a":"x","b":1},`), `{"a":"x","b":1},`))
	}
	tests := []struct {
		name string
		head string
		body []string
	}{
		{"content-length, mid-value", "Content-Length: 1000\r\n", []string{`{"id":"abc","names":["x",`}},
		{"content-length, after the value", "Content-Length: 20\r\n", []string{`{"id":"a"}`}},
		{"content-length, malformed then cut", "Content-Length: 100\r\n", []string{`{"id":x,`}},
		{"chunked, mid-chunk", "Transfer-Encoding: chunked\r\n", []string{"20\r\n{\"id\":\"abcdefgh"}},
		{"chunked, many rows then cut", "Transfer-Encoding: chunked\r\n", append([]string{"9\r\n{\"rows\":[\r\n"}, rows...)},
		{"chunked, no last chunk", "Transfer-Encoding: chunked\r\n", []string{"a\r\n{\"id\":\"a\"}\r\n"}},
	}
	for _, tt := range tests {
		srv := serveCut(t, tt.head, tt.body...)
		var v decodeRow
		resp, err := doJSON(t, t.Context(), srv.Client(), srv.URL, &v)
		pe := wantCode(t, tt.name, err, resilience.CodeNetwork)
		if resp != nil {
			t.Errorf("%s: response %+v with a transport error", tt.name, resp)
		}
		_, oldErr := doThenDecode(t, t.Context(), srv.Client(), srv.URL, &v)
		if old := resilience.AsError(oldErr); pe != nil && (old == nil || old.Code != pe.Code || old.Class != pe.Class) {
			t.Errorf("%s: DoJSON %v, Do then Decode %v", tt.name, err, oldErr)
		}
		if pe != nil && !strings.HasPrefix(pe.Message, "read body: ") {
			t.Errorf("%s: message %q", tt.name, pe.Message)
		}
	}
}

// TestDoJSONContextEndsMidBody checks that a deadline, a cancellation or
// the client's timeout while the body is arriving is a transport error
// with the context's cause, not a malformed body.
func TestDoJSONContextEndsMidBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"id":"a","names":["x",`))
		_ = http.NewResponseController(w).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	var v decodeRow
	resp, err := doJSON(t, ctx, srv.Client(), srv.URL, &v)
	wantCode(t, "deadline", err, resilience.CodeTimeout)
	if resp != nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("deadline: response %v, cause lost: %v", resp, err)
	}

	ctx, cancel = context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err = doJSON(t, ctx, srv.Client(), srv.URL, &v)
	if pe := resilience.AsError(err); pe == nil || pe.Class != resilience.Unavailable || pe.Code != "CANCELED" || !errors.Is(err, context.Canceled) {
		t.Errorf("cancel: %v, want Unavailable CANCELED", err)
	}

	client := &http.Client{Transport: srv.Client().Transport, Timeout: 100 * time.Millisecond}
	_, err = doJSON(t, t.Context(), client, srv.URL, &v)
	wantCode(t, "client timeout", err, resilience.CodeTimeout)
}

// TestDoJSONMalformed checks that a 2xx body that is not the JSON wanted
// is an Unavailable MALFORMED_RESPONSE that keeps the response's status
// and headers.
func TestDoJSONMalformed(t *testing.T) {
	for _, parts := range [][]string{
		{`{"id":"a",}`},
		{`{"id":"a"}`, ` trailing`},
		{`{"rows":[{"a":"x","b":1},`, `{"a":"y","b":"two"}]}`},
		{`<html>Bad gateway</html>`},
		{},
	} {
		srv := serveBody(t, http.StatusAccepted, parts...)
		var v decodeRow
		resp, err := doJSON(t, t.Context(), srv.Client(), srv.URL, &v)
		pe := wantCode(t, strings.Join(parts, ""), err, resilience.CodeMalformed)
		if pe != nil && pe.HTTPStatus != http.StatusAccepted {
			t.Errorf("%q: HTTPStatus %d", parts, pe.HTTPStatus)
		}
		if resp == nil || resp.Status != http.StatusAccepted || resp.Header.Get("X-Test") != "kept" {
			t.Errorf("%q: response %+v", parts, resp)
		}
	}
}

// TestDoJSONReadsErrorBodiesWhole checks that a non-2xx answer is read
// whole, as Do reads it, for the caller to classify, and leaves out alone.
func TestDoJSONReadsErrorBodiesWhole(t *testing.T) {
	big := `{"error":{"message":"` + strings.Repeat("x", 100<<10) + `"}}`
	for _, tt := range []struct {
		status int
		parts  []string
	}{
		{http.StatusBadRequest, []string{`{"error_code":"INVALID_FIELD",`, `"error_message":"bad"}`}},
		{http.StatusTooManyRequests, []string{big[:50000], big[50000:]}},
		{http.StatusServiceUnavailable, []string{"upstream unavailable\n"}},
		{http.StatusNotFound, nil},
	} {
		srv := serveBody(t, tt.status, tt.parts...)
		v := decodeRow{ID: "untouched"}
		resp, err := doJSON(t, t.Context(), srv.Client(), srv.URL, &v)
		want := strings.Join(tt.parts, "")
		if err != nil || resp == nil || resp.Status != tt.status || string(resp.Body) != want || resp.Header.Get("X-Test") != "kept" {
			t.Errorf("%d: response %v, %v", tt.status, resp, err)
		}
		if v.ID != "untouched" {
			t.Errorf("%d: out was written: %+v", tt.status, v)
		}
		old, err := doThenDecode(t, t.Context(), srv.Client(), srv.URL, &v)
		if err != nil || string(old.Body) != string(resp.Body) {
			t.Errorf("%d: Do read %q, %v", tt.status, old.Body, err)
		}
	}
}

// TestGetJSONClassifiesWholeErrorBody checks GetJSON's two paths: a 2xx
// answer decoded, any other one handed whole to classify.
func TestGetJSONClassifiesWholeErrorBody(t *testing.T) {
	errBody := `{"message":"` + strings.Repeat("slow down ", 1000) + `"}`
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"id":"` + r.URL.Query().Get("q") + `"}`))
	})
	mux.HandleFunc("/limited", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(errBody[:10]))
		_ = http.NewResponseController(w).Flush()
		_, _ = w.Write([]byte(errBody[10:]))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	sentinel := errors.New("classified")
	classify := func(r *wire.Response) error {
		if r.Status != http.StatusTooManyRequests || string(r.Body) != errBody {
			return fmt.Errorf("classify got %d %q", r.Status, r.Body)
		}
		return sentinel
	}
	var v decodeRow
	if err := wire.GetJSON(t.Context(), srv.Client(), "p", srv.URL, "/ok", map[string][]string{"q": {"x"}}, nil, classify, &v); err != nil || v.ID != "x" {
		t.Errorf("ok: %+v, %v", v, err)
	}
	if err := wire.GetJSON(t.Context(), srv.Client(), "p", srv.URL, "/limited", nil, nil, classify, &v); !errors.Is(err, sentinel) {
		t.Errorf("limited: %v", err)
	}
}

// TestDoJSONReusesConnections checks that a decoded body is read to its
// end, so that the next request goes over the same connection.
func TestDoJSONReusesConnections(t *testing.T) {
	rows := strings.Repeat(`{"a":"x","b":1},`, 5000)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"rows":[` + rows[:len(rows)/2]))
		_ = http.NewResponseController(w).Flush()
		_, _ = w.Write([]byte(rows[len(rows)/2:len(rows)-1] + "]}\n\n"))
	}))
	var conns atomic.Int32
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	for range 5 {
		var v decodeRow
		if _, err := doJSON(t, t.Context(), srv.Client(), srv.URL, &v); err != nil || len(v.Rows) != 5000 {
			t.Fatalf("%d rows, %v", len(v.Rows), err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for 5 requests, want 1", n)
	}
}
