package storage_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/finsync/finsync/rules"
	"github.com/finsync/finsync/storage/storagetest"
)

// regexCorpus are RE2 expressions with anchors, classes, Perl and POSIX
// classes, repeats, alternation, flags, escapes of every metacharacter and
// bracket edge cases.
var regexCorpus = []string{
	`a`, `abc`, `(?i)card`, `(?i)KS`, `(?i)k`, `(?i)s`, "\u212A", "(?i)\u212A", "(?i)\u017F", "\u00e9", "(?i)caf\u00e9",
	`^a`, `a$`, `^$`, `^`, `$`, `\Aab\z`, `a\z`, `(?s)a.b`, `a.b`, `.`, `(?s).`, `^.*$`, `(?s)^.*$`, `x*`,
	`\d+`, `\D`, `\w+`, `\W`, `\s`, `\S+`, `[[:alpha:]]+`, `[[:^digit:]]`, `[[:punct:]]`, `[[:space:]]`, `\pL`, `\PL`, `\p{Greek}`,
	`[]a]`, `[^]]`, `[a-]`, `[-a]`, `[\]]`, `[\\]`, `[\^]`, `[^a-z]`, `[^\n]`, `[\n]`, `[a-c\d]`, `(?i)[a-c]`, `(?i)[^k]`, `[^\x00-\x{10FFFF}]`,
	`\.`, `\*`, `\+`, `\?`, `\(`, `\)`, `\[`, `\]`, `\{`, `\}`, `\|`, `\^`, `\$`, `\\`, `\-`, `\#`, `a{2}`, `a{2,}`, `a{2,3}`,
	`(ab){0,2}c`, `a{0}`, `x{0}y`, `(a|b)+c`, `a|b|`, `|a`, `(?:)`, `()`, `a??b`, `a*?`, `(a+?)b`, `\bfoo\b`, `\Bo\B`, `\b`, `\B`,
	`_\b`, `\b_`, `(?i)^card|shop$`, `a{255}`, `a{2,255}`, `\x00`, `a\x00?b`, `\t`, "\n", `\n$`, `^\n`, `\$\^`,
	`\*\*\*`, `(?:a)`, `(a)(b)`, `[\x20-\x7E]+`, `(?U)a+b`, `\Q.*+?\E`, `(?i:a)b`, `(?s:.)\n`, `[[:word:]]`, `\pN`, `[\p{Lu}]`,
	`(\b|a)+`, `(^|x)y`, `(a|$)`, `(?:a*)*`, `(?:a|)*b`, `[^a]*`, `'`, `"`, `%`, `_`, `\x7f`, `\x01`, `&`, `=`, `;`, `(?i)[k-s]`,
	`[\x01-\x2f\x3a-\x40\x5b-\x60\x7b-\x7f]+`, `\\u0041`, `\\y`, `\\Z`, `x\\x41`, `(?i)\Q\u\E`, `[\\\]\-^]`, `^(\s|\d){2,4}$`,
	// Near the engine's size limits: PostgreSQL must compile them too.
	`[a-z]{255}`, `(?i)\w{200}`, `((a|b){1,10}){1,10}`, `(?s)(.{1,100}x){1,5}`, `(((a{1,5}){1,5}){1,5}){1,5}`,
	`(?i)(card|shop|tea|coffee|kelvin|strasse){1,50}`, `(?s)(.*a.*b.*c.*d.*e.*f.*g.*h){1,20}`, `(\b\w+\b\s*){1,100}`, `(.{1,255}){1,3}`,
}

// regexStrings are ASCII values (PostgreSQL's text holds no NUL), with
// newlines, word and non-word characters and every metacharacter.
var regexStrings = []string{
	"", "a", "ab", "abc", "card", "CARD", "Card payment", "debit card #1", "ks", "KS", "k", "s", "x", "xy", "y", "aab", "b", "c",
	"a.b", "a\nb", "\n", "a\n", "\na", "123", "a1_b", " ", "\t", "foo", "foo bar", "foobar", "o", "_", "-", "]", "^", "\\", "a-",
	"]a", "*", "***", "+?(){}[]|^$\\.#-", "'\"%_&=;", "\x7f", "\x01", "aaaa", "aaa", "ababc", "bc", "shop", "card shop", "Shop",
	"x\ny", "A", "\x7f~", "a b\tc\nd", "\\u0041", "\\y", "\\Z", "xA", "x\\x41", "\\u", "$^", ".*+?", " 1 2", "12\n", strings.Repeat("a", 255),
}

// exactRegex compiles a rule with the condition Summary matches pattern
// and returns its exact form's regular expression; false when it has
// none.
func exactRegex(t *testing.T, pattern string) (string, bool) {
	t.Helper()
	r, err := rules.CompileJSON([]byte(`{"conditions":[{"field":"Summary","operator":"matches","value":`+strconv.Quote(pattern)+
		`}],"outcomes":[{"action":"hideTransaction","value":true}],"priority":1}`), rules.Meta{})
	if err != nil {
		t.Fatalf("%q: %v", pattern, err)
	}
	ex, ok := r.Exact()
	if !ok {
		return "", false
	}
	if len(ex.Texts) != 1 || ex.Texts[0].Regex == "" {
		t.Fatalf("%q: exact form %+v", pattern, ex)
	}
	return ex.Texts[0].Regex, true
}

// TestAREAgreesWithPostgreSQL checks the exact form of matches conditions
// in PostgreSQL itself: for every expression of the corpus and random
// ones, and every ASCII value, (value COLLATE "C") ~ are is RE2's match.
func TestAREAgreesWithPostgreSQL(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	ctx := context.Background()
	check := func(pattern string, values []string) {
		t.Helper()
		are, ok := exactRegex(t, pattern)
		if !ok {
			return
		}
		re2 := regexp.MustCompile(pattern)
		rows, err := pool.Query(ctx, `SELECT (s COLLATE "C") ~ $1 FROM unnest($2::text[]) WITH ORDINALITY AS v(s, i) ORDER BY i`, are, values)
		if err != nil {
			t.Fatalf("%q (ARE %q): %v", pattern, are, err)
		}
		var got []bool
		for rows.Next() {
			var m bool
			if err := rows.Scan(&m); err != nil {
				t.Fatal(err)
			}
			got = append(got, m)
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%q (ARE %q): %v", pattern, are, err)
		}
		for i, s := range values {
			if want := re2.MatchString(s); got[i] != want {
				t.Fatalf("%q (ARE %q) on %q: PostgreSQL %v, RE2 %v", pattern, are, s, got[i], want)
			}
		}
	}
	translated := 0
	for _, p := range regexCorpus {
		if _, ok := exactRegex(t, p); ok {
			translated++
		}
		check(p, regexStrings)
	}
	if translated < len(regexCorpus)-2 {
		t.Fatalf("only %d of %d expressions translated", translated, len(regexCorpus))
	}
	for _, p := range []string{`(?m)^a`, `(?m)a$`, `a{256}`} {
		if _, ok := exactRegex(t, p); ok {
			t.Fatalf("%q translated", p)
		}
	}
	rng := rand.New(rand.NewPCG(19, 23))
	values := make([]string, 300)
	for i := range values {
		var b strings.Builder
		for n := rng.IntN(9); n > 0; n-- {
			b.WriteByte("abkKsS .-_\n1]^\\\x7f"[rng.IntN(16)])
		}
		values[i] = b.String()
	}
	for i := 0; i < 400; i++ {
		check(randomPattern(rng, 4), values)
	}
}

// randomPattern is a random RE2 expression of depth at most d over a small
// alphabet.
func randomPattern(rng *rand.Rand, d int) string {
	atoms := []string{"a", "b", "k", "S", ".", `\d`, `\w`, `\s`, `\W`, `[a-c]`, `[^a]`, `\n`, `\.`, `-`, `^`, `$`, `\b`, `\B`, "\u212A", `[]k-]`, `\x7f`, `\\`}
	if d == 0 || rng.IntN(3) == 0 {
		return atoms[rng.IntN(len(atoms))]
	}
	sub := func() string { return randomPattern(rng, d-1) }
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
