// Package jsonw appends JSON to a byte slice without reflection, for the
// API's hot listings where encoding, not the database, is the main cost.
package jsonw

import (
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
)

// Object builds one JSON object; the zero value is unusable, use Start.
type Object struct {
	b     []byte
	first bool
}

// Start opens an object at the end of b.
func Start(b []byte) Object { return Object{b: append(b, '{'), first: true} }

// End closes the object and returns the buffer.
func (o *Object) End() []byte { return append(o.b, '}') }

func (o *Object) key(k string) {
	if !o.first {
		o.b = append(o.b, ',')
	}
	o.first = false
	o.b = append(o.b, '"')
	o.b = append(o.b, k...)
	o.b = append(o.b, '"', ':')
}

// String writes a string field.
func (o *Object) String(k, v string) {
	o.key(k)
	o.b = AppendString(o.b, v)
}

// StringPtr writes a string field, null when v is nil.
func (o *Object) StringPtr(k string, v *string) {
	o.key(k)
	if v == nil {
		o.b = append(o.b, "null"...)
		return
	}
	o.b = AppendString(o.b, *v)
}

// UUID writes a uuid field.
func (o *Object) UUID(k string, v uuid.UUID) {
	o.key(k)
	o.b = AppendUUID(o.b, v)
}

// UUIDPtr writes a uuid field, null when v is nil.
func (o *Object) UUIDPtr(k string, v *uuid.UUID) {
	o.key(k)
	if v == nil {
		o.b = append(o.b, "null"...)
		return
	}
	o.b = AppendUUID(o.b, *v)
}

// Money writes a number field.
func (o *Object) Money(k string, v domain.Money) {
	o.key(k)
	o.b = v.AppendJSON(o.b)
}

// MoneyPtr writes a number field, null when v is nil.
func (o *Object) MoneyPtr(k string, v *domain.Money) {
	o.key(k)
	if v == nil {
		o.b = append(o.b, "null"...)
		return
	}
	o.b = v.AppendJSON(o.b)
}

// DatePtr writes a YYYY-MM-DD field, null when v is nil.
func (o *Object) DatePtr(k string, v *domain.Date) {
	o.key(k)
	if v == nil {
		o.b = append(o.b, "null"...)
		return
	}
	o.b = append(o.b, '"')
	o.b = v.Append(o.b)
	o.b = append(o.b, '"')
}

// Time writes an RFC 3339 timestamp field.
func (o *Object) Time(k string, v time.Time) {
	o.key(k)
	o.b = append(o.b, '"')
	o.b = v.UTC().AppendFormat(o.b, time.RFC3339Nano)
	o.b = append(o.b, '"')
}

// TimePtr writes an RFC 3339 timestamp field, null when v is nil.
func (o *Object) TimePtr(k string, v *time.Time) {
	if v == nil {
		o.key(k)
		o.b = append(o.b, "null"...)
		return
	}
	o.Time(k, *v)
}

// Float writes a number field in the fewest digits that read back as v
// (v must be finite: JSON has no NaN or infinity).
func (o *Object) Float(k string, v float64) {
	o.key(k)
	o.b = strconv.AppendFloat(o.b, v, 'f', -1, 64)
}

// Bool writes a boolean field.
func (o *Object) Bool(k string, v bool) {
	o.key(k)
	o.b = strconv.AppendBool(o.b, v)
}

// Array writes a field holding an array of n elements, appending element i
// with each, straight into the object's buffer.
func (o *Object) Array(k string, n int, each func(b []byte, i int) []byte) {
	o.key(k)
	o.b = append(o.b, '[')
	for i := 0; i < n; i++ {
		if i > 0 {
			o.b = append(o.b, ',')
		}
		o.b = each(o.b, i)
	}
	o.b = append(o.b, ']')
}

// Raw writes a field whose value is already JSON.
func (o *Object) Raw(k string, v []byte) {
	o.key(k)
	o.b = append(o.b, v...)
}

// AppendUUID appends a quoted uuid.
func AppendUUID(b []byte, id uuid.UUID) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i, x := range id {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, hex[x>>4], hex[x&0x0f])
	}
	return append(b, '"')
}

// AppendString appends s as a JSON string, escaping quotes, backslashes,
// control characters and invalid UTF-8 (replaced by U+FFFD), and U+2028/9.
func AppendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
