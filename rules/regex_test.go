package rules

import (
	"encoding/json"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/finsync/finsync/rules/rulestest"
)

// areToGo rewrites an ARE as areOf writes it into Go syntax, in which it
// means the same on ASCII values: \uXXXX as \x{XXXX}, \Z as \z, \y \Y as
// \b \B; the rest is shared.
func areToGo(are string) string {
	var b strings.Builder
	for i := 0; i < len(are); i++ {
		if are[i] != '\\' {
			b.WriteByte(are[i])
			continue
		}
		i++
		switch are[i] {
		case 'u':
			b.WriteString(`\x{` + are[i+1:i+5] + `}`)
			i += 4
		case 'Z':
			b.WriteString(`\z`)
		case 'y':
			b.WriteString(`\b`)
		case 'Y':
			b.WriteString(`\B`)
		default:
			b.WriteString(`\` + are[i:i+1])
		}
	}
	return b.String()
}

// TestAREMatchesAsRE2 checks areOf's translation, read back in Go syntax,
// against RE2 on ASCII strings, for the corpus and random expressions, and
// that it refuses what it must. (storage's TestAREAgreesWithPostgreSQL
// checks the ARE semantics in PostgreSQL itself.)
func TestAREMatchesAsRE2(t *testing.T) {
	refused := rulestest.RegexRefused
	check := func(pattern string, values []string) {
		t.Helper()
		are, ok := areOf(pattern)
		if ok == refused[pattern] {
			t.Fatalf("%q: translated %v", pattern, ok)
		}
		if !ok {
			return
		}
		re2 := regexp.MustCompile(pattern)
		back, err := regexp.Compile(areToGo(are))
		if err != nil {
			t.Fatalf("%q: ARE %q reads back as %v", pattern, are, err)
		}
		for _, s := range values {
			if got, want := back.MatchString(s), re2.MatchString(s); got != want {
				t.Fatalf("%q (ARE %q) on %q: %v, RE2 %v", pattern, are, s, got, want)
			}
		}
	}
	for _, p := range rulestest.RegexCorpus {
		check(p, rulestest.RegexValues)
	}
	rng := rand.New(rand.NewPCG(13, 17))
	values := make([]string, 200)
	for i := range values {
		values[i] = rulestest.RandomASCII(rng, 8)
	}
	for i := 0; i < 2000; i++ {
		check(rulestest.RandomRE2(rng, 4), values)
	}
}

// TestExactOfMatches checks that a matches condition's exact term is its
// translated expression on the raw value, and that an untranslated one
// leaves the rule without an exact form.
func TestExactOfMatches(t *testing.T) {
	doc := func(re string) string {
		return `{"conditions":[{"field":"MerchantName","operator":"matches","value":` + strconv.Quote(re) +
			`}],"outcomes":[{"action":"hideTransaction","value":true}],"priority":1}`
	}
	ex, ok := mustCompile(t, doc(`(?i)card`), Meta{}).Exact()
	want := Exact{Texts: []ExactText{{Field: TextMerchantName, Regex: `[Cc][Aa][Rr][Dd]`}}, ASCIIFields: []string{TextMerchantName}}
	if got, _ := json.Marshal(ex); !ok || string(got) != string(must(json.Marshal(want))) {
		t.Fatalf("exact form %s %v, want %s", got, ok, must(json.Marshal(want)))
	}
	if _, ok := mustCompile(t, doc(`(?m)^a`), Meta{}).Exact(); ok {
		t.Fatal("a multi-line matches condition has an exact form")
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
