// Package rulestest holds test data shared by the tests of the rule
// engine's exact forms and of their SQL: regular expressions and ASCII
// values that probe RE2 and PostgreSQL's regular expressions alike.
package rulestest

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// RegexCorpus are RE2 expressions with anchors, classes, Perl and POSIX
// classes, repeats, alternation, flags, escapes of every metacharacter,
// bracket edge cases, the ones without a translation (RegexRefused) and
// some near the engine's size limits.
var RegexCorpus = []string{
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
	// Refused (RegexRefused): multi-line anchors, repeat counts above 255.
	`(?m)^a`, `(?m)a$`, `a{256}`, `a{3,300}`,
	// Near the engine's size limits: PostgreSQL must compile them too.
	`[a-z]{255}`, `(?i)\w{200}`, `((a|b){1,10}){1,10}`, `(?s)(.{1,100}x){1,5}`, `(((a{1,5}){1,5}){1,5}){1,5}`,
	`(?i)(card|shop|tea|coffee|kelvin|strasse){1,50}`, `(?s)(.*a.*b.*c.*d.*e.*f.*g.*h){1,20}`, `(\b\w+\b\s*){1,100}`, `(.{1,255}){1,3}`,
}

// RegexRefused are the expressions of RegexCorpus that have no exact form.
var RegexRefused = map[string]bool{`(?m)^a`: true, `(?m)a$`: true, `a{256}`: true, `a{3,300}`: true}

// RegexValues are ASCII values without NUL (PostgreSQL's text holds none),
// with newlines, word and non-word characters and every metacharacter.
var RegexValues = []string{
	"", "a", "ab", "abc", "card", "CARD", "Card payment", "debit card #1", "ks", "KS", "k", "s", "x", "xy", "y", "aab", "b", "c",
	"a.b", "a\nb", "\n", "a\n", "\na", "123", "a1_b", " ", "\t", "foo", "foo bar", "foobar", "o", "_", "-", "]", "^", "\\", "a-",
	"]a", "*", "***", "+?(){}[]|^$\\.#-", "'\"%_&=;", "\x7f", "\x01", "aaaa", "aaa", "ababc", "bc", "shop", "card shop", "Shop",
	"x\ny", "A", "\x7f~", "a b\tc\nd", "\\u0041", "\\y", "\\Z", "xA", "x\\x41", "\\u", "$^", ".*+?", " 1 2", "12\n", strings.Repeat("a", 255),
	"caf", "oo",
}

// RandomRE2 is a random RE2 expression of depth at most d over a small
// alphabet.
func RandomRE2(rng *rand.Rand, d int) string {
	atoms := []string{"a", "b", "k", "S", ".", `\d`, `\w`, `\s`, `\W`, `[a-c]`, `[^a]`, `\n`, `\.`, `-`, `^`, `$`, `\b`, `\B`, "\u212A", `[]k-]`, `\x7f`, `\\`}
	if d == 0 || rng.IntN(3) == 0 {
		return atoms[rng.IntN(len(atoms))]
	}
	sub := func() string { return RandomRE2(rng, d-1) }
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

// RandomASCII is a random ASCII string without NUL, of up to n characters
// from an alphabet the random expressions use.
func RandomASCII(rng *rand.Rand, n int) string {
	const alphabet = "abkKsS .-_\n1]^\\\x7f"
	var b strings.Builder
	for i := rng.IntN(n + 1); i > 0; i-- {
		b.WriteByte(alphabet[rng.IntN(len(alphabet))])
	}
	return b.String()
}
