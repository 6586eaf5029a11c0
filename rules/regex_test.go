package rules

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// areCorpus are RE2 expressions with anchors, classes, Perl and POSIX
// classes, repeats, alternation, flags, escapes of every metacharacter and
// bracket edge cases.
var areCorpus = []string{
	`a`, `abc`, `(?i)card`, `(?i)KS`, `(?i)k`, `(?i)s`, "\u212A", "(?i)\u212A", "(?i)\u017F", "\u00e9", "(?i)caf\u00e9",
	`^a`, `a$`, `^$`, `^`, `$`, `\Aab\z`, `a\z`, `(?s)a.b`, `a.b`, `.`, `(?s).`, `^.*$`, `(?s)^.*$`, `x*`,
	`\d+`, `\D`, `\w+`, `\W`, `\s`, `\S+`, `[[:alpha:]]+`, `[[:^digit:]]`, `[[:punct:]]`, `[[:space:]]`, `\pL`, `\PL`, `\p{Greek}`,
	`[]a]`, `[^]]`, `[a-]`, `[-a]`, `[\]]`, `[\\]`, `[\^]`, `[^a-z]`, `[^\n]`, `[\n]`, `[a-c\d]`, `(?i)[a-c]`, `(?i)[^k]`, `[^\x00-\x{10FFFF}]`,
	`\.`, `\*`, `\+`, `\?`, `\(`, `\)`, `\[`, `\]`, `\{`, `\}`, `\|`, `\^`, `\$`, `\\`, `\-`, `\#`, `a{2}`, `a{2,}`, `a{2,3}`,
	`(ab){0,2}c`, `a{0}`, `x{0}y`, `(a|b)+c`, `a|b|`, `|a`, `(?:)`, `()`, `a??b`, `a*?`, `(a+?)b`, `\bfoo\b`, `\Bo\B`, `\b`, `\B`,
	`_\b`, `\b_`, `(?i)^card|shop$`, `(?m)^a`, `(?m)a$`, `a{256}`, `a{3,300}`, `\x00`, `a\x00?b`, `\t`, "\n", `\n$`, `^\n`,
	`\*\*\*`, `(?:a)`, `(a)(b)`, `[\x20-\x7E]+`, `(?U)a+b`, `\Q.*\E`, `(?i:a)b`, `(?s:.)\n`, `[[:word:]]`, `\pN`, `[\p{Lu}]`,
	`(\b|a)+`, `(^|x)y`, `(a|$)`, `(?:a*)*`, `(?:a|)*b`, `[^a]*`, `'`, `"`, `%`, `_`, `\x7f`, `\x01`, `&`, `=`, `;`, `(?i)[k-s]`,
}

// areStrings are ASCII values without NUL, with newlines, word and
// non-word characters and every metacharacter.
var areStrings = []string{
	"", "a", "ab", "abc", "card", "CARD", "Card payment", "debit card #1", "ks", "KS", "k", "s", "x", "xy", "y", "aab", "b", "c",
	"a.b", "a\nb", "\n", "a\n", "\na", "123", "a1_b", " ", "\t", "foo", "foo bar", "foobar", "o", "_", "-", "]", "^", "\\", "a-",
	"]a", "*", "+?(){}[]|^$\\.#-", "'\"%_&=;", "\x7f", "\x01", "aaaa", "aaa", "ababc", "bc", "shop", "card shop", "Shop", "caf", "oo",
	"x\ny", "A", "\u007f\u007e", "a b\tc\nd",
}

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

// randomRE2 is a random RE2 expression of depth at most d over a small
// alphabet.
func randomRE2(rng *rand.Rand, d int) string {
	atoms := []string{"a", "b", "k", "S", ".", `\d`, `\w`, `\s`, `\W`, `[a-c]`, `[^a]`, `\n`, `\.`, `-`, `^`, `$`, `\b`, `\B`, "\u212A", `[]k-]`, `\x7f`}
	if d == 0 || rng.IntN(3) == 0 {
		return atoms[rng.IntN(len(atoms))]
	}
	sub := func() string { return randomRE2(rng, d-1) }
	switch rng.IntN(9) {
	case 0:
		return sub() + sub()
	case 1:
		return sub() + "|" + sub()
	case 2:
		return "(" + sub() + ")*"
	case 3:
		return "(" + sub() + ")+?"
	case 4:
		return "(?:" + sub() + ")?"
	case 5:
		return fmt.Sprintf("(%s){%d,%d}", sub(), rng.IntN(2), 1+rng.IntN(3))
	case 6:
		return "(?i:" + sub() + ")"
	case 7:
		return "(?s:" + sub() + ")"
	default:
		return sub() + sub() + sub()
	}
}

// randomASCII is a random ASCII string without NUL, of up to n characters
// from an alphabet the random expressions use.
func randomASCII(rng *rand.Rand, n int) string {
	const alphabet = "abkKsS .-_\n1]^\\\x7f"
	var b strings.Builder
	for i := rng.IntN(n + 1); i > 0; i-- {
		b.WriteByte(alphabet[rng.IntN(len(alphabet))])
	}
	return b.String()
}

// TestAREMatchesAsRE2 checks areOf's translation, read back in Go syntax,
// against RE2 on ASCII strings, for the corpus and random expressions, and
// that it refuses what it must. (storage's TestAREAgreesWithPostgreSQL
// checks the ARE semantics in PostgreSQL itself.)
func TestAREMatchesAsRE2(t *testing.T) {
	refused := map[string]bool{`(?m)^a`: true, `(?m)a$`: true, `a{256}`: true, `a{3,300}`: true}
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
	for _, p := range areCorpus {
		check(p, areStrings)
	}
	rng := rand.New(rand.NewPCG(13, 17))
	values := make([]string, 200)
	for i := range values {
		values[i] = randomASCII(rng, 8)
	}
	for i := 0; i < 2000; i++ {
		check(randomRE2(rng, 4), values)
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
