package sim

import (
	"net/http"
	"strconv"
	"time"

	"github.com/finsync/finsync/internal/jsonw"
)

// streamChunk is how many bytes of a streamed page are buffered before they
// are written to the client, so that the client reads and decodes the
// start of a large page while its end is still being written.
const streamChunk = 32 << 10

// jw is a tiny append-only JSON writer used on the hot paths, where
// reflection-based encoding would dominate the cost of a page. Callers are
// responsible for structure (commas, braces); jw only encodes values.
//
// A jw can also stream a 200 answer (see stream): its bytes then go to the
// client a chunk at a time, between rows, instead of all at the end.
type jw struct {
	b    []byte
	out  http.ResponseWriter // where a streamed answer goes (nil: not streamed)
	sent bool                // the status and a first chunk were written to out
}

// stream makes w a 200 JSON answer written to rw: flush sends it a chunk
// at a time and end sends the rest. Nothing is written before the first
// chunk fills, so a handler may still answer with an error until then, and
// an answer shorter than a chunk is written whole, as writeRaw writes it.
func (w *jw) stream(rw http.ResponseWriter) {
	w.b, w.out, w.sent = w.b[:0], rw, false
}

// flush writes the buffered bytes to the client once they fill a chunk.
// Callers call it between rows; it does nothing when w is not streamed.
func (w *jw) flush() {
	if w.out != nil && len(w.b) >= streamChunk {
		w.send()
	}
}

// send writes the buffered bytes to the client, after the 200 status and
// Content-Type when they are the first.
func (w *jw) send() {
	if !w.sent {
		w.out.Header().Set("Content-Type", "application/json")
		w.out.WriteHeader(http.StatusOK)
		w.sent = true
	}
	_, _ = w.out.Write(w.b)
	w.b = w.b[:0]
}

// end writes what is left of a streamed answer (all of it, with the
// status, when no chunk was sent).
func (w *jw) end() { w.send() }

func (w *jw) raw(s string)   { w.b = append(w.b, s...) }
func (w *jw) byte(c byte)    { w.b = append(w.b, c) }
func (w *jw) comma()         { w.b = append(w.b, ',') }
func (w *jw) null()          { w.b = append(w.b, "null"...) }
func (w *jw) int(v int64)    { w.b = strconv.AppendInt(w.b, v, 10) }
func (w *jw) bool(v bool)    { w.b = strconv.AppendBool(w.b, v) }
func (w *jw) str(s string)   { w.b = appendJSONString(w.b, s) }
func (w *jw) key(k string)   { w.b = appendJSONString(w.b, k); w.b = append(w.b, ':') }
func (w *jw) field(k string) { w.comma(); w.key(k) }

// strOrNull writes s, or null when s is empty.
func (w *jw) strOrNull(s string) {
	if s == "" {
		w.null()
		return
	}
	w.str(s)
}

// cents writes an amount held in minor units as a decimal JSON number with
// up to two fraction digits ("12.5", "-3", "0.07").
func (w *jw) cents(v int64) { w.b = appendCents(w.b, v, false) }

// centsString writes an amount in minor units as a JSON string with exactly
// two fraction digits ("12.50").
func (w *jw) centsString(v int64) {
	w.b = append(w.b, '"')
	w.b = appendCents(w.b, v, true)
	w.b = append(w.b, '"')
}

// date writes a JSON string YYYY-MM-DD.
func (w *jw) date(t time.Time) {
	w.b = append(w.b, '"')
	w.b = t.AppendFormat(w.b, time.DateOnly)
	w.b = append(w.b, '"')
}

// datetime writes a JSON string in RFC 3339 UTC with a Z suffix.
func (w *jw) datetime(t time.Time) {
	w.b = append(w.b, '"')
	w.b = t.UTC().AppendFormat(w.b, "2006-01-02T15:04:05Z")
	w.b = append(w.b, '"')
}

// appendCents appends v/100 as a decimal; fixed keeps two fraction digits.
func appendCents(b []byte, v int64, fixed bool) []byte {
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
