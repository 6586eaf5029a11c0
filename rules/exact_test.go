package rules

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// likeMatch is SQL's LIKE: % any run, _ any one character, \ quoting the
// next one.
func likeMatch(s, p string) bool {
	if p == "" {
		return s == ""
	}
	switch p[0] {
	case '%':
		for i := 0; i <= len(s); i++ {
			if likeMatch(s[i:], p[1:]) {
				return true
			}
		}
		return false
	case '_':
		return s != "" && likeMatch(s[1:], p[1:])
	case '\\':
		p = p[1:]
	}
	return s != "" && s[0] == p[0] && likeMatch(s[1:], p[1:])
}

// exactMatches evaluates the text terms of pf and ex as the database does
// on ASCII values: the literal case-sensitively, then LIKE or equality on
// the value with its ASCII letters lowercased, or pf's regular expression.
func exactMatches(pf *Prefilter, ex *Exact, in Input) bool {
	value := func(field string) string {
		return map[string]string{TextSummary: in.Summary, TextOriginalDescription: in.OriginalDescription, TextMerchantName: in.MerchantName}[field]
	}
	for _, t := range pf.Texts {
		v := value(t.Field)
		if !strings.Contains(v, t.Literal) {
			return false
		}
		switch {
		case t.Regex == "" || t.Like != "":
			if !likeMatch(strings.ToLower(v), t.Like) {
				return false
			}
		case t.NonASCIIOnly:
			return false
		case !regexp.MustCompile(t.Regex).MatchString(v):
			return false
		}
	}
	for _, t := range ex.Texts {
		v := strings.ToLower(value(t.Field)) // ASCII values only
		ok := likeMatch(v, t.Like)
		switch {
		case t.Regex != "":
			ok = regexp.MustCompile(areToGo(t.Regex)).MatchString(value(t.Field))
		case t.OneOf != nil:
			ok = slices.Contains(t.OneOf, v)
		}
		if ok == t.Negated {
			return false
		}
	}
	return true
}

// TestExactAgreesWithMatchesOnASCII checks that on ASCII values a rule's
// exact text terms hold exactly when the rule matches, for needles with
// LIKE's metacharacters and with the Kelvin sign and the long s (which
// fold to ASCII letters), and for matches conditions (their expression
// read back in Go syntax), and that a rule without an exact form says so.
func TestExactAgreesWithMatchesOnASCII(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	alphabet := []string{"a", "K", "k", "s", "S", "%", "_", `\`, " ", "b"}
	word := func(n int, extra ...string) string {
		var b strings.Builder
		for i := rng.IntN(n + 1); i > 0; i-- {
			b.WriteString(append(alphabet, extra...)[rng.IntN(len(alphabet)+len(extra))])
		}
		return b.String()
	}
	ops := []string{OpIs, OpIsNot, OpContains, OpDoesNotContain, OpStartsWith, OpEndsWith, OpOneOf, OpMatches}
	patterns := []string{`(?i)ks`, `^a\\`, `%_`, `(?i)\x{212A}|s$`, `\bb`, `[^a-z ]`, `^$`, `(?i)[k-s]{2}`}
	checked := 0
	for i := 0; i < 3000; i++ {
		op := ops[rng.IntN(len(ops))]
		var value any = word(3, "\u212A", "\u017F")
		if op == OpMatches {
			value = patterns[rng.IntN(len(patterns))]
		} else if op == OpOneOf {
			value = []string{word(3, "\u212A", "\u017F", "\u00e9"), word(2)}
		} else if value == "" && op != OpIs && op != OpIsNot {
			value = "a"
		}
		v, _ := json.Marshal(value)
		doc := fmt.Sprintf(`{"conditions":[{"field":"Summary","operator":%q,"value":%s}],"outcomes":[{"action":"hideTransaction","value":true}],"priority":1}`, op, v)
		r := mustCompile(t, doc, Meta{})
		ex, ok := r.Exact()
		pf := r.Prefilter()
		if !ok {
			if s, isString := value.(string); !isString || isASCII(foldString(s)) {
				t.Fatalf("%s: no exact form", doc)
			}
			continue
		}
		for j := 0; j < 20; j++ {
			in := Input{Summary: word(5)}
			p := Prepare(in)
			if got, want := exactMatches(&pf, &ex, in), r.Matches(&p); got != want {
				t.Fatalf("%s on %q: exact form %v, rule %v (%+v)", doc, in.Summary, got, want, ex)
			}
			checked++
		}
	}
	if checked < 10000 {
		t.Fatalf("only %d checks", checked)
	}
}
