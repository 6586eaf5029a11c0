package simkit

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/finsync/finsync/internal/jsonw"
)

// StreamChunk is how many bytes of a streamed page are buffered before they
// are written to the client, so that the client reads and decodes the
// start of a large page while its end is still being written.
const StreamChunk = 32 << 10

// JW is a tiny append-only JSON writer used on the hot paths, where
// reflection-based encoding would dominate the cost of a page. Callers are
// responsible for structure (commas, braces); JW only encodes values. The
// zero value is ready to use; it is not safe for concurrent use.
//
// A JW can also stream a 200 answer (see Stream): its bytes then go to the
// client a chunk at a time, between rows, instead of all at the end.
type JW struct {
	// B holds the bytes written and not yet sent.
	B    []byte
	out  http.ResponseWriter // where a streamed answer goes (nil: not streamed)
	sent bool                // the status and a first chunk were written to out
}

// Stream makes w a 200 JSON answer written to rw: flush sends it a chunk
// at a time and end sends the rest. Nothing is written before the first
// chunk fills, so a handler may still answer with an error until then, and
// an answer shorter than a chunk is written whole, as WriteRaw writes it.
func (w *JW) Stream(rw http.ResponseWriter) {
	w.B, w.out, w.sent = w.B[:0], rw, false
}

// Flush writes the buffered bytes to the client once they fill a chunk.
// Callers call it between rows; it does nothing when w is not streamed.
func (w *JW) Flush() {
	if w.out != nil && len(w.B) >= StreamChunk {
		w.send()
	}
}

// send writes the buffered bytes to the client, after the 200 status and
// Content-Type when they are the first.
func (w *JW) send() {
	if !w.sent {
		w.out.Header().Set("Content-Type", "application/json")
		w.out.WriteHeader(http.StatusOK)
		w.sent = true
	}
	_, _ = w.out.Write(w.B)
	w.B = w.B[:0]
}

// End writes what is left of a streamed answer (all of it, with the
// status, when no chunk was sent).
func (w *JW) End() { w.send() }

// Raw appends s as it is (already JSON).
func (w *JW) Raw(s string) { w.B = append(w.B, s...) }

// Byte appends one byte as it is.
func (w *JW) Byte(c byte) { w.B = append(w.B, c) }

// Comma appends a comma.
func (w *JW) Comma() { w.B = append(w.B, ',') }

// Null appends null.
func (w *JW) Null() { w.B = append(w.B, "null"...) }

// Int appends an integer.
func (w *JW) Int(v int64) { w.B = strconv.AppendInt(w.B, v, 10) }

// Bool appends true or false.
func (w *JW) Bool(v bool) { w.B = strconv.AppendBool(w.B, v) }

// Str appends s as a JSON string.
func (w *JW) Str(s string) { w.B = appendJSONString(w.B, s) }

// Key appends an object key and its colon.
func (w *JW) Key(k string) { w.B = appendJSONString(w.B, k); w.B = append(w.B, ':') }

// Field appends a comma and an object key: the start of a member after the
// first.
func (w *JW) Field(k string) { w.Comma(); w.Key(k) }

// StrOrNull writes s, or null when s is empty.
func (w *JW) StrOrNull(s string) {
	if s == "" {
		w.Null()
		return
	}
	w.Str(s)
}

// Cents writes an amount held in minor units as a decimal JSON number with
// up to two fraction digits ("12.5", "-3", "0.07").
func (w *JW) Cents(v int64) { w.B = AppendCents(w.B, v, false) }

// CentsString writes an amount in minor units as a JSON string with exactly
// two fraction digits ("12.50").
func (w *JW) CentsString(v int64) {
	w.B = append(w.B, '"')
	w.B = AppendCents(w.B, v, true)
	w.B = append(w.B, '"')
}

// Date writes a JSON string YYYY-MM-DD.
func (w *JW) Date(t time.Time) {
	w.B = append(w.B, '"')
	w.B = t.AppendFormat(w.B, time.DateOnly)
	w.B = append(w.B, '"')
}

// Datetime writes a JSON string in RFC 3339 UTC with a Z suffix.
func (w *JW) Datetime(t time.Time) {
	w.B = append(w.B, '"')
	w.B = t.UTC().AppendFormat(w.B, "2006-01-02T15:04:05Z")
	w.B = append(w.B, '"')
}

// AppendCents appends v/100 as a decimal; fixed keeps two fraction digits.
func AppendCents(b []byte, v int64, fixed bool) []byte {
	if v < 0 {
		b = append(b, '-')
		v = -v
	}
	b = strconv.AppendInt(b, v/100, 10)
	frac := v % 100
	switch {
	case fixed || frac%10 != 0:
		b = append(b, '.', byte('0'+frac/10), byte('0'+frac%10))
	case frac != 0:
		b = append(b, '.', byte('0'+frac/10))
	}
	return b
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte { return jsonw.AppendString(b, s) }

// Reset empties w for reuse, keeping its capacity, and detaches it from
// any answer it streamed.
func (w *JW) Reset() { w.B, w.out, w.sent = w.B[:0], nil, false }

// WriteJSON encodes v as the JSON response body with the given status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	WriteRaw(w, status, b)
}

// WriteRaw writes an already-encoded JSON body with the given status.
func WriteRaw(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// MustJSON encodes a map of strings, which cannot fail: the credentials
// objects the simulated providers hand out.
func MustJSON(v map[string]string) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
