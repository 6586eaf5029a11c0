package strictjson

import (
	"errors"
	"strings"
	"testing"
)

func TestMembersAccepts(t *testing.T) {
	cases := map[string][]Member{
		`{}`:                       nil,
		` {} `:                     nil,
		`{"a":1,"b":"x","c":null}`: {{"a", []byte("1")}, {"b", []byte(`"x"`)}, {"c", []byte("null")}},
		// Numbers keep their digits: money is never a float64.
		`{"amount":12345678901234.5678}`: {{"amount", []byte("12345678901234.5678")}},
		// The same name in different objects, or in sibling objects of an
		// array, is no duplicate.
		`{"a":{"a":{"a":1}},"b":[{"x":1},{"x":2}]}`: {{"a", []byte(`{"a":{"a":1}}`)}, {"b", []byte(`[{"x":1},{"x":2}]`)}},
		// Names are compared unescaped, and kept so.
		`{"\u0061":1}`: {{"a", []byte("1")}},
		// Invalid UTF-8 is left to the callers, as encoding/json left it.
		"{\"a\":\"\xff\"}": {{"a", []byte("\"\xff\"")}},
		"{\"a\":1}\n":      {{"a", []byte("1")}},
	}
	for in, want := range cases {
		got, err := Members([]byte(in))
		if err != nil {
			t.Errorf("Members(%q): %v", in, err)
			continue
		}
		if len(got) != len(want) {
			t.Errorf("Members(%q) = %q, want %q", in, got, want)
			continue
		}
		for i := range got {
			if got[i].Name != want[i].Name || string(got[i].Value) != string(want[i].Value) {
				t.Errorf("Members(%q)[%d] = %s=%s, want %s=%s", in, i, got[i].Name, got[i].Value, want[i].Name, want[i].Value)
			}
		}
	}
}

func TestMembersRefusesDuplicatesAtEveryDepth(t *testing.T) {
	cases := []struct {
		in, path, name string
	}{
		{`{"a":1,"a":2}`, "", "a"},
		{`{"a":1,"\u0061":2}`, "", "a"},
		{`{"liability":{"type":"credit","type":"student"}}`, "liability", "type"},
		{`{"liability":{"aprs":[{"aprType":"p"},{"aprType":"p","aprType":"q"}]}}`, "liability.aprs[1]", "aprType"},
		{`{"conditions":[{"field":"Summary","field":"Amount"}]}`, "conditions[0]", "field"},
		{`{"outcomes":[{"value":{"id":"x","id":"y"}}]}`, "outcomes[0].value", "id"},
		// Deep in a value after several members (where the library's own
		// pointer loses the name).
		{`{"conditions":[{"field":"S","operator":"is","value":{"a":1,"a":2}}]}`, "conditions[0].value", "a"},
		// A member named with digits is a member, not an array item.
		{`{"0":{"1":{"k":1,"k":2}}}`, "0.1", "k"},
		// The first duplicate met wins, even before malformed text.
		{`{"a":1,"a":2,}`, "", "a"},
		{`{"a":1,"a":2} trailing`, "", "a"},
	}
	for _, c := range cases {
		_, err := Members([]byte(c.in))
		var dup *DuplicateError
		if !errors.As(err, &dup) {
			t.Errorf("Members(%s) error = %v, want a duplicate", c.in, err)
			continue
		}
		if dup.Path() != c.path || dup.Name != c.name {
			t.Errorf("Members(%s): duplicate %q at %q, want %q at %q", c.in, dup.Name, dup.Path(), c.name, c.path)
		}
	}
}

func TestMembersRefusesOtherShapes(t *testing.T) {
	cases := map[string]error{
		``:                 ErrNotObject,
		`  `:               ErrNotObject,
		`[1]`:              ErrNotObject,
		`"a"`:              ErrNotObject,
		`null`:             ErrNotObject,
		`x`:                ErrNotObject,
		`{"a":1} {}`:       ErrTrailingData,
		`{"a":1} x`:        ErrTrailingData,
		`{"a":1} }`:        ErrTrailingData,
		`{"a":1}{"a":1}`:   ErrTrailingData,
		`{"a":`:            &SyntaxError{},
		`{"a":1`:           &SyntaxError{},
		`{"a":1,,"b":2}`:   &SyntaxError{},
		`{"a":1,}`:         &SyntaxError{},
		`{a:1}`:            &SyntaxError{},
		`{"a":[1,2}`:       &SyntaxError{},
		`{"a":1} {"a":1,"`: ErrTrailingData,
	}
	for in, want := range cases {
		_, err := Members([]byte(in))
		if se, ok := want.(*SyntaxError); ok {
			if !errors.As(err, &se) {
				t.Errorf("Members(%q) error = %v, want a syntax error", in, err)
			}
			continue
		}
		if !errors.Is(err, want) {
			t.Errorf("Members(%q) error = %v, want %v", in, err, want)
		}
	}
}

func TestSyntaxErrorShowsNoValue(t *testing.T) {
	_, err := Members([]byte(`{"token":"sk_live_SECRET" "x"}`))
	if err == nil || strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("error = %v, want one that shows no value", err)
	}
}
