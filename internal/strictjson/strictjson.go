// Package strictjson reads a JSON object strictly, through the
// go-json-experiment library: exactly one object, no member name given
// twice in it or in any object nested in it, nothing after it. It is the
// one implementation of that strictness for request bodies (api/v2),
// credentials and provider settings (providers) and rule documents
// (rules); each caller words the errors for its own readers.
package strictjson

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Member is one member of a JSON object: its name, unescaped, and its
// value as raw JSON text (numbers keep their exact digits).
type Member struct {
	Name  string
	Value jsontext.Value
}

// ErrNotObject is returned when the input does not begin with a JSON
// object: it is empty, another JSON value, or starts with an invalid
// character.
var ErrNotObject = errors.New("not a JSON object")

// ErrTrailingData is returned when anything but white space follows the
// object.
var ErrTrailingData = errors.New("data after the JSON object")

// DuplicateError reports a member name given twice in one object, at any
// depth. Object is where that object sits (see Path); Name is the name.
type DuplicateError struct {
	Object jsontext.Pointer
	Name   string
	path   string
}

// Error names the member, never a value.
func (e *DuplicateError) Error() string {
	if e.path != "" {
		return e.path + ": duplicate member " + strconv.Quote(e.Name)
	}
	return "duplicate member " + strconv.Quote(e.Name)
}

// Path renders Object as the API's messages name a value: members by
// name joined with dots, array items by index in brackets
// ("liability.aprs[0]"); the outermost object is "".
func (e *DuplicateError) Path() string { return e.path }

// Outer is the name of the outermost object's member whose value holds
// the duplicate, or "" when the duplicate is a member of the outermost
// object itself.
func (e *DuplicateError) Outer() string {
	for tok := range e.Object.Tokens() {
		return tok
	}
	return ""
}

// duplicateAt builds the *DuplicateError for the name the library refused
// at offset. The library's own pointer can lose a name when the duplicate
// sits deep in a value read whole, so raw is walked again token by token
// (duplicates allowed) to that offset, where the decoder's stack tells the
// pointer and which of its tokens are array indexes.
func duplicateAt(raw []byte, offset int64, fallback jsontext.Pointer) *DuplicateError {
	dec := jsontext.NewDecoder(bytes.NewReader(raw), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	for dec.InputOffset() <= offset {
		if _, err := dec.ReadToken(); err != nil {
			return &DuplicateError{Object: fallback.Parent(), Name: fallback.LastToken(), path: render(fallback.Parent(), nil)}
		}
	}
	ptr := dec.StackPointer()
	kinds := make([]jsontext.Kind, 0, dec.StackDepth())
	for i := 1; i < dec.StackDepth(); i++ {
		k, _ := dec.StackIndex(i)
		kinds = append(kinds, k)
	}
	return &DuplicateError{Object: ptr.Parent(), Name: ptr.LastToken(), path: render(ptr.Parent(), kinds)}
}

// render writes ptr as Path does; kinds[i] is the kind of the container
// ptr's token i is in (a token without one is taken for a member name).
func render(ptr jsontext.Pointer, kinds []jsontext.Kind) string {
	var b strings.Builder
	i := 0
	for tok := range ptr.Tokens() {
		switch {
		case i < len(kinds) && kinds[i] == '[':
			b.WriteString("[" + tok + "]")
		case b.Len() > 0:
			b.WriteString("." + tok)
		default:
			b.WriteString(tok)
		}
		i++
	}
	return b.String()
}

// SyntaxError reports malformed JSON inside the object; Err is the
// library's error, which names member names and offsets, not values.
type SyntaxError struct{ Err error }

// Error is the library's message.
func (e *SyntaxError) Error() string { return e.Err.Error() }

// Unwrap returns the library's error.
func (e *SyntaxError) Unwrap() error { return e.Err }

// Members reads raw as one JSON object and returns its members in
// document order. It fails with ErrNotObject, *SyntaxError,
// *DuplicateError (at whatever depth, the first met in document order) or
// ErrTrailingData, in the order the input reveals them. Caveat: like
// encoding/json, it accepts invalid UTF-8 in strings (the callers'
// checks and storage decide about it); unknown members are the caller's
// to refuse, as only it knows the allowed names.
func Members(raw []byte) ([]Member, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw), jsontext.AllowInvalidUTF8(true))
	if dec.PeekKind() != '{' {
		return nil, ErrNotObject
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, ErrNotObject
	}
	var out []Member
	for dec.PeekKind() != '}' {
		name, err := dec.ReadValue()
		if err != nil {
			return nil, readError(err, raw)
		}
		m := Member{Name: unquote(name)}
		value, err := dec.ReadValue()
		if err != nil {
			return nil, readError(err, raw)
		}
		end := dec.InputOffset()
		m.Value = raw[end-int64(len(value)) : end : end]
		out = append(out, m)
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, readError(err, raw)
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		return nil, ErrTrailingData
	}
	return out, nil
}

// readError turns the library's error into a *DuplicateError or a
// *SyntaxError.
func readError(err error, raw []byte) error {
	var se *jsontext.SyntacticError
	if errors.Is(err, jsontext.ErrDuplicateName) && errors.As(err, &se) {
		return duplicateAt(raw, se.ByteOffset, se.JSONPointer)
	}
	return &SyntaxError{Err: err}
}

// unquote returns a member name's text; the decoder has validated it.
func unquote(name jsontext.Value) string {
	var s string
	_ = json.Unmarshal(name, &s, jsontext.AllowInvalidUTF8(true))
	return s
}
