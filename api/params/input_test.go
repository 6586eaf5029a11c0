package params

import (
	"strings"
	"testing"
)

func TestCheckAmount(t *testing.T) {
	ok := []string{"0", "-0", "1", "999999999999999.9999", "-999999999999999.9999",
		"1.50000000", "1e14", "12345e-4", "0.0001", "100000000000000.0"}
	bad := []string{"1000000000000000", "1e15", "-1e15", "0.00001", "1.00001", "1e999999999", "1e-999999999",
		"1e99999999999", strings.Repeat("1", 65), "12345e-5"}
	for _, s := range ok {
		if !CheckAmount(s) {
			t.Errorf("%s refused", s)
		}
	}
	for _, s := range bad {
		if CheckAmount(s) {
			t.Errorf("%s accepted", s)
		}
	}
}

func TestCheckJSON(t *testing.T) {
	tests := []struct{ raw, msg string }{
		{`{"a":"x","b":[1,2,{"c":"\u0000"}]}`, "b[2].c: must not contain NUL characters"},
		{`{"a":{"b":{"c":1e16}}}`, "a.b.c: " + AmountMessage},
		{`{"a":"` + strings.Repeat("é", MaxTextLength+1) + `"}`, "a: must be at most 1000 characters"},
		{`"\u0000"`, "body: must not contain NUL characters"},
		{`{"a":"\ud800"}`, "body: a string holds an unpaired UTF-16 surrogate escape"},
		{`{"a":"\udc00\ud800"}`, "body: a string holds an unpaired UTF-16 surrogate escape"},
		{`{"a":"x\ud83dy"}`, "body: a string holds an unpaired UTF-16 surrogate escape"},
		{`{"a":`, "body: malformed JSON"},
		{``, "body: malformed JSON"},
		{strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), strings.Repeat("[0]", MaxDepth) + ": nested more than 16 levels deep"},
	}
	for _, tt := range tests {
		err := CheckJSON([]byte(tt.raw), "body")
		if err == nil || err.Error() != tt.msg {
			t.Errorf("%.40s: got %v, want %s", tt.raw, err, tt.msg)
		}
	}
	for _, raw := range []string{`{"a":"` + strings.Repeat("é", MaxTextLength) + `","b":[1,-2.5,null,true,{}],"c":{}}`,
		strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth), `{"a":1} trailing is left to the caller`,
		`{"a":"\ud83d\ude00 \\ud800 \u00e9"}`} {
		if err := CheckJSON([]byte(raw), "body"); err != nil {
			t.Errorf("%.40s: %v", raw, err)
		}
	}
}

func TestParseRefusesUndecodableQueries(t *testing.T) {
	for raw, msg := range map[string]string{
		"categoryId=%zz":  `query: cannot be decoded: invalid percent-encoding "%zz"`,
		"a=1;b=2":         "query: cannot be decoded: semicolon separator in query",
		"limit=%":         `query: cannot be decoded: invalid percent-encoding "%"`,
		"x=%e9&limit=%2G": `query: cannot be decoded: invalid percent-encoding "%2G"`,
	} {
		if err := Parse(raw).Err(); err == nil || err.Error() != msg {
			t.Errorf("%s: got %v, want %s", raw, err, msg)
		}
	}
	q := Parse("limit=10&categoryId=%41", "limit", "categoryId")
	if q.Err() != nil || q.Limit(50) != 10 {
		t.Errorf("well-encoded query: %v", q.Err())
	}
}
