package params

import (
	"strings"
	"testing"
)

// TestParseRefusesUnknownParameters: a parameter the operation does not
// accept is an error naming it and the accepted ones, whatever else the
// query holds; accepted ones pass.
func TestParseRefusesUnknownParameters(t *testing.T) {
	accepted := []string{"bankAccountId", "startDate", "limit"}
	for _, c := range []struct{ raw, accepted, msg string }{
		{"bankAccountId=x&startDate=2026-01-01&limit=5", "all", ""},
		{"", "all", ""},
		{"acount_id=1", "all", `unknown query parameter "acount_id"; accepted: bankAccountId, startDate, limit`},
		{"limit=5&zeta=1&alpha=2", "all", `unknown query parameter "alpha"; accepted: bankAccountId, startDate, limit`},
		{"Limit=5", "all", `unknown query parameter "Limit"; accepted: bankAccountId, startDate, limit`},
		{"%00=1", "all", `unknown query parameter "\x00"; accepted: bankAccountId, startDate, limit`},
		{"x=1", "none", `unknown query parameter "x"; this operation accepts no query parameters`},
		{"x", "none", `unknown query parameter "x"; this operation accepts no query parameters`},
		{"", "none", ""},
		{"a=%zz", "none", `query: cannot be decoded: invalid percent-encoding "%zz"`},
	} {
		names := accepted
		if c.accepted == "none" {
			names = nil
		}
		q := Parse(c.raw, names...)
		got := ""
		if err := q.Err(); err != nil {
			got = err.Error()
		}
		if got != c.msg {
			t.Errorf("Parse(%q, %s): %q, want %q", c.raw, c.accepted, got, c.msg)
		}
	}
}

// TestUnknownCutsALongName: a huge unknown name is quoted back cut, as
// valid UTF-8.
func TestUnknownCutsALongName(t *testing.T) {
	name := strings.Repeat("a", maxNameShown-1) + "é" + strings.Repeat("b", 10000)
	err := Parse(name+"=1", "limit").Err()
	if err == nil {
		t.Fatal("accepted")
	}
	want := `unknown query parameter "` + strings.Repeat("a", maxNameShown-1) + `..."; accepted: limit`
	if err.Error() != want {
		t.Fatalf("message %q, want %q", err.Error(), want)
	}
}

// TestReadingAnUndeclaredParameterPanics: a handler that reads a
// parameter its operation does not declare is a mistake found at once.
func TestReadingAnUndeclaredParameterPanics(t *testing.T) {
	q := Parse("limit=5", "limit")
	if n := q.Limit(10); n != 5 || q.Err() != nil {
		t.Fatalf("limit %d, err %v", n, q.Err())
	}
	for name, read := range map[string]func(){
		"Get":  func() { q.Get("cursor") },
		"Has":  func() { q.Has("cursor") },
		"Enum": func() { q.Enum("status", "a", "a", "b") },
		"Bool": func() { q.Bool("includeHidden") },
	} {
		func() {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(r.(string), "not among the operation's accepted ones") {
					t.Errorf("%s of an undeclared parameter: recovered %v, want the declaration panic", name, r)
				}
			}()
			read()
		}()
	}
}

// TestEnumNamesTheAcceptedValues: a value outside an enum is refused
// naming the parameter and every accepted value.
func TestEnumNamesTheAcceptedValues(t *testing.T) {
	q := Parse("transfers=exlude", "transfers")
	if got := q.Enum("transfers", "include", "include", "exclude", "only"); got != "include" {
		t.Errorf("value %q, want the default", got)
	}
	if err := q.Err(); err == nil || err.Error() != "transfers: must be one of include, exclude, only" {
		t.Fatalf("error %v", err)
	}
}
