package params

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/shopspring/decimal"
)

// Limits on request input, the same for every field and both API versions
// (and documented in the OpenAPI documents as maxLength, minimum, maximum).
const (
	// MaxNameLength is the longest name or short label, in characters
	// (account and category names, groups, types, masks, institutions).
	MaxNameLength = 200
	// MaxTextLength is the longest of any other string in a request body,
	// in characters.
	MaxTextLength = 1000
	// MaxDepth is the deepest nesting of arrays and objects in a request body.
	MaxDepth = 16
	// AmountIntegerDigits and AmountScale bound every number in a request
	// body to what a numeric(19,4) column holds: at most 15 digits before
	// and 4 after the decimal point.
	AmountIntegerDigits = 15
	AmountScale         = 4
	// maxNumberLiteral is the longest number literal accepted (a trailing
	// zero or two past the bound is fine; a megabyte of digits is not).
	maxNumberLiteral = 64
)

// AmountMessage is the complaint about a number outside the bounds.
const AmountMessage = "must be a number with at most 15 digits before and 4 after the decimal point"

// MaxAmount is the largest number accepted in a request body, as text.
const MaxAmount = "999999999999999.9999"

// CheckText returns why s is not acceptable as a string of at most max
// characters: it holds a NUL character (which PostgreSQL cannot store) or
// is too long. It returns "" for an acceptable string.
func CheckText(s string, max int) string {
	if strings.IndexByte(s, 0) >= 0 {
		return "must not contain NUL characters"
	}
	if len(s) > max && utf8.RuneCountInString(s) > max {
		return fmt.Sprintf("must be at most %d characters", max)
	}
	return ""
}

// Text checks a named string with CheckText and returns an *Error whose
// message starts with name.
func Text(name, s string, max int) error {
	if msg := CheckText(s, max); msg != "" {
		return Errorf("%s: %s", name, msg)
	}
	return nil
}

// CheckAmount returns whether a JSON number literal is within the bounds
// every request number obeys (AmountIntegerDigits, AmountScale). It never
// expands the number, so a literal such as 1e999999999 costs nothing.
func CheckAmount(lit string) bool {
	if len(lit) > maxNumberLiteral {
		return false
	}
	d, err := decimal.NewFromString(lit)
	if err != nil {
		return false
	}
	coef, exp := new(big.Int).Abs(d.Coefficient()), int64(d.Exponent())
	if coef.Sign() == 0 {
		return true
	}
	ten, rem := big.NewInt(10), new(big.Int)
	for {
		q, r := new(big.Int).QuoRem(coef, ten, rem)
		if r.Sign() != 0 {
			break
		}
		coef, exp = q, exp+1
	}
	digits := int64(len(coef.String()))
	return exp >= -AmountScale && digits+exp <= AmountIntegerDigits
}

// CheckJSON checks the first JSON value of raw as a whole before any field
// is read: well-formed, nested at most MaxDepth deep, every string (member
// names included) free of NUL and at most MaxTextLength characters, every
// number within CheckAmount's bounds. Messages start with the path of the
// offending value ("liability.aprs[0].aprType: ...", members of the
// top-level object named bare), or with root for the value as a whole.
func CheckJSON(raw []byte, root string) error {
	if !pairedSurrogates(raw) {
		// Go decodes a lone \ud800 as U+FFFD, but a value kept as raw JSON
		// (a rule's condition) would reach PostgreSQL, whose jsonb refuses it.
		return Errorf("%s: a string holds an unpaired UTF-16 surrogate escape", root)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	w := walker{root: root}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) && len(w.stack) == 0 && w.started {
			return nil
		}
		if err != nil {
			return Errorf("%s: malformed JSON", root)
		}
		if err := w.visit(tok); err != nil {
			return err
		}
		if w.started && len(w.stack) == 0 {
			return nil
		}
	}
}

// frame is one open array or object of a walk.
type frame struct {
	name   string // path of the container
	array  bool
	index  int    // next element's index, in an array
	key    string // member name awaiting its value, in an object
	hasKey bool
}

// walker follows the tokens of one JSON value, keeping the path.
type walker struct {
	root    string
	stack   []frame
	started bool
}

// path is the path of the value the next token belongs to.
func (w *walker) path() string {
	if len(w.stack) == 0 {
		return w.root
	}
	f := w.stack[len(w.stack)-1]
	if f.array {
		return f.name + "[" + strconv.Itoa(f.index) + "]"
	}
	if f.name == "" {
		return f.key
	}
	return f.name + "." + f.key
}

// inner is the path prefix of a container's members: empty at the top, so
// that the fields of a body read "name", not "body.name".
func (w *walker) inner(p string) string {
	if len(w.stack) == 0 {
		return ""
	}
	return p
}

func (w *walker) visit(tok json.Token) error {
	w.started = true
	top := len(w.stack) - 1
	if top >= 0 && !w.stack[top].array && !w.stack[top].hasKey {
		if d, ok := tok.(json.Delim); ok && d == '}' {
			w.stack = w.stack[:top]
			w.valueDone()
			return nil
		}
		key, _ := tok.(string)
		if msg := CheckText(key, MaxTextLength); msg != "" {
			return Errorf("%s: member name %s", w.containerName(top), msg)
		}
		w.stack[top].key, w.stack[top].hasKey = key, true
		return nil
	}
	p := w.path()
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{', '[':
			if len(w.stack) >= MaxDepth {
				return Errorf("%s: nested more than %d levels deep", p, MaxDepth)
			}
			w.stack = append(w.stack, frame{name: w.inner(p), array: v == '['})
			return nil
		default: // ']'
			w.stack = w.stack[:top]
		}
	case string:
		if msg := CheckText(v, MaxTextLength); msg != "" {
			return Errorf("%s: %s", p, msg)
		}
	case json.Number:
		if !CheckAmount(v.String()) {
			return Errorf("%s: %s", p, AmountMessage)
		}
	}
	w.valueDone()
	return nil
}

// containerName names an open object for messages about its member names.
func (w *walker) containerName(i int) string {
	if w.stack[i].name == "" {
		return w.root
	}
	return w.stack[i].name
}

// valueDone moves the innermost container past the value just read.
func (w *walker) valueDone() {
	if len(w.stack) == 0 {
		return
	}
	f := &w.stack[len(w.stack)-1]
	if f.array {
		f.index++
		return
	}
	f.hasKey = false
}

// pairedSurrogates reports whether every \u escape of a UTF-16 surrogate
// in raw JSON text is a high one followed at once by a low one.
func pairedSurrogates(raw []byte) bool {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		i++ // the escaped character
		if i >= len(raw) || raw[i] != 'u' {
			continue
		}
		r, ok := hex4(raw, i+1)
		if !ok {
			continue // malformed; the decoder reports it
		}
		i += 4
		switch {
		case r >= 0xdc00 && r <= 0xdfff:
			return false // a low surrogate with no high one before it
		case r >= 0xd800 && r <= 0xdbff:
			if i+2 >= len(raw) || raw[i+1] != '\\' || raw[i+2] != 'u' {
				return false
			}
			low, ok := hex4(raw, i+3)
			if !ok || low < 0xdc00 || low > 0xdfff {
				return false
			}
			i += 6
		}
	}
	return true
}

// hex4 reads four hex digits at raw[at:].
func hex4(raw []byte, at int) (rune, bool) {
	if at+4 > len(raw) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(raw[at:at+4]), 16, 16)
	return rune(n), err == nil
}
