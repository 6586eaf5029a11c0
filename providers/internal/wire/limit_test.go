package wire

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/finsync/finsync/resilience"
)

// countingBody is a response body that counts the bytes read from it.
type countingBody struct {
	io.Reader
	n int
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.Reader.Read(p)
	c.n += n
	return n, err
}

func (c *countingBody) Close() error { return nil }

// TestDecodeBodyLimit checks decodeBody at a small limit: a body is cut at
// the limit, as readBody cuts it, so that a value longer than the limit does
// not parse (and is read no further), while one that ends before it
// decodes whatever whitespace follows; a decoded body's tail past the limit
// is drained, within bounds.
func TestDecodeBodyLimit(t *testing.T) {
	const limit = 16
	type row struct {
		ID string `json:"id"`
	}
	tests := []struct {
		body    string
		id      string // "" for a decode failure
		drained bool   // the whole body was read
	}{
		{`{"id":"abc"}`, "abc", true},
		{`{"id":"abcdefg"}`, "abcdefg", true}, // exactly the limit
		{`{"id":"abcdefgh"}`, "", false},      // one byte over
		{`{"id":"` + strings.Repeat("x", 10<<20) + `"}`, "", false},
		{`{"id":"a"}` + strings.Repeat(" ", 100), "a", true},
		{`{"id":"a"}` + strings.Repeat(" ", 100) + "x", "a", true},
		{`{"id":"a"}` + strings.Repeat(" ", limit+drainLimit+10), "a", false},
	}
	for _, tt := range tests {
		body := &countingBody{Reader: strings.NewReader(tt.body)}
		resp := &http.Response{StatusCode: http.StatusOK, Body: body}
		var got row
		readErr, decodeErr := decodeBody(t.Context(), "p", resp, limit, &got)
		name := tt.body[:min(len(tt.body), 30)]
		if readErr != nil {
			t.Errorf("%s: read error %v", name, readErr)
			continue
		}
		// What Decode makes of the body as readBody cuts it.
		var old row
		oldErr := Decode("p", &Response{Status: http.StatusOK, Body: []byte(tt.body[:min(len(tt.body), limit)])}, &old)
		switch {
		case tt.id == "":
			pe := resilience.AsError(decodeErr)
			if pe == nil || pe.Class != resilience.Unavailable || pe.Code != resilience.CodeMalformed {
				t.Errorf("%s: %v, want Unavailable %s", name, decodeErr, resilience.CodeMalformed)
			}
			if oldErr == nil || pe == nil || pe.Message != resilience.AsError(oldErr).Message {
				t.Errorf("%s: %v, Decode of the cut body says %v", name, decodeErr, oldErr)
			}
		case decodeErr != nil || got.ID != tt.id || oldErr != nil || old.ID != tt.id:
			t.Errorf("%s: %+v, %v; Decode of the cut body: %+v, %v", name, got, decodeErr, old, oldErr)
		}
		if drained := body.n == len(tt.body); drained != tt.drained {
			t.Errorf("%s: read %d of %d bytes", name, body.n, len(tt.body))
		}
		if body.n > limit+drainLimit {
			t.Errorf("%s: read %d bytes, past the limit and the drain", name, body.n)
		}
	}
}
