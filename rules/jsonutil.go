package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/finsync/finsync/internal/strictjson"
)

// trimJSON removes the insignificant white space around a JSON value.
func trimJSON(raw []byte) []byte {
	return bytes.TrimSpace(raw)
}

// objectMembers splits a JSON object into its members in document order,
// through strictjson: ok is false when raw is not one valid JSON object;
// dup, when not nil, is a member name given twice in it or in an object
// nested in it (the first met), with its path relative to raw, and then
// members is nil.
func objectMembers(raw []byte) (members []strictjson.Member, dup *ValidationError, ok bool) {
	members, err := strictjson.Members(raw)
	var d *strictjson.DuplicateError
	switch {
	case errors.As(err, &d):
		return nil, invalid(d.Path(), fmt.Sprintf("duplicate key %q", d.Name)), true
	case err != nil:
		return nil, nil, false
	}
	return members, nil, true
}

// arrayItems splits a JSON array into its raw items. It reports false when
// raw is not a JSON array (null included).
func arrayItems(raw []byte) ([]json.RawMessage, bool) {
	raw = trimJSON(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return nil, false
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, false
	}
	return items, true
}

// arrayItemsAtMost is arrayItems reading at most limit items: over
// reports an array with more, and then no item is returned and the rest of
// the array is not decoded.
func arrayItemsAtMost(raw []byte, limit int) (items []json.RawMessage, ok, over bool) {
	raw = trimJSON(raw)
	if len(raw) == 0 || raw[0] != '[' || !json.Valid(raw) {
		return nil, false, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // the opening bracket
		return nil, false, false
	}
	for dec.More() {
		if len(items) == limit {
			return nil, true, true
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false, false
		}
		items = append(items, v)
	}
	return items, true, false
}

// jsonString decodes a JSON string; null and other types report false.
func jsonString(raw []byte) (string, bool) {
	raw = trimJSON(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// jsonNumber decodes a JSON number as its exact text; other types report
// false.
func jsonNumber(raw []byte) (json.Number, bool) {
	raw = trimJSON(raw)
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return "", false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", false
	}
	n, ok := v.(json.Number)
	return n, ok
}

// isNull reports whether raw is the JSON literal null.
func isNull(raw []byte) bool {
	return string(trimJSON(raw)) == "null"
}
