package sim

import (
	"github.com/finsync/finsync/internal/jsonw"
	"strconv"
	"time"
)

// jw is a tiny append-only JSON writer used on the hot paths, where
// reflection-based encoding would dominate the cost of a page. Callers are
// responsible for structure (commas, braces); jw only encodes values.
type jw struct{ b []byte }

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
