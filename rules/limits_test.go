package rules

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp/syntax"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// conds is n copies of the condition c, as a JSON array.
func conds(n int, c string) string {
	return "[" + strings.TrimSuffix(strings.Repeat(c+",", n), ",") + "]"
}

func TestRuleLimits(t *testing.T) {
	matches := func(p string) string { return ruleCond("matches", p) }
	// 1,804 instructions each: three exceed the rule's total.
	heavy := matches(`[a-z]{1,900}x`)
	oneOf := func(n int) string {
		vals := make([]string, n)
		for i := range vals {
			vals[i] = fmt.Sprintf("%q", fmt.Sprint("v", i))
		}
		return `{"field":"Summary","operator":"oneOf","value":[` + strings.Join(vals, ",") + `]}`
	}
	accounts := func(n int) string {
		vals := make([]string, n)
		for i := range vals {
			vals[i] = `"` + uuid.NewSHA1(uuid.Nil, []byte{byte(i)}).String() + `"`
		}
		return `{"field":"Account","operator":"oneOf","value":[` + strings.Join(vals, ",") + `]}`
	}
	tests := []struct {
		name, doc, want string
	}{
		{"conditions at the limit", doc(conds(MaxConditions, okCond), "["+okOutcome+"]", "1"), ""},
		{"conditions over the limit", doc(conds(MaxConditions+1, okCond), "["+okOutcome+"]", "1"),
			"conditions: has more than 50 items: a rule has at most 50 conditions"},
		{"hundreds of conditions", doc(conds(700, okCond), "["+okOutcome+"]", "1"),
			"conditions: has more than 50 items: a rule has at most 50 conditions"},
		{"outcomes over the limit", doc("["+okCond+"]", conds(MaxOutcomes+1, okOutcome), "1"),
			"outcomes: has more than 3 items: a rule has at most 3 outcomes"},
		{"oneOf at the limit", withCond(oneOf(MaxListValues)), ""},
		{"oneOf over the limit", withCond(oneOf(MaxListValues + 1)),
			"conditions[0].value: has more than 100 items: a oneOf condition has at most 100 values"},
		{"account oneOf over the limit", withCond(accounts(MaxListValues + 1)),
			"conditions[0].value: has more than 100 items: a oneOf condition has at most 100 values"},
		{"two heavy patterns", doc(conds(2, heavy), "["+okOutcome+"]", "1"), ""},
		{"heavy patterns over the rule's total", doc(conds(3, heavy), "["+okOutcome+"]", "1"),
			"conditions: the rule's regular expressions are too complex together: their compiled programs would exceed 5000 instructions (the limit per rule)"},
		{"nested counted repetition", withCond(matches(`(a{1,1000}){1,1000}`)),
			"conditions[0].value: regular expression is too complex: its compiled program would exceed 2000 instructions (the limit per pattern)"},
		{"counted repetition of a group", withCond(matches(`(abc){1,999}`)),
			"conditions[0].value: regular expression is too complex: its compiled program would exceed 2000 instructions (the limit per pattern)"},
		{"document over the size limit", doc(conds(1, ruleCond("is", strings.Repeat("x", MaxRuleBytes))), "["+okOutcome+"]", "1"),
			"a rule document is at most 65536 bytes (the limit on a rule document's size)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ValidateJSON([]byte(tt.doc), Options{})
			got := ""
			if err != nil {
				got = err.Error()
				var ve *ValidationError
				if !errors.As(err, &ve) {
					t.Fatalf("error %v is %T, not *ValidationError", err, err)
				}
			}
			if got != tt.want {
				t.Fatalf("error = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestStoredRulesKeepTheirCounts checks that a stored rule saved before
// the count limits existed still compiles (the rule job and previews must
// not stop for its user), while a client's rule is held to them, and
// that the limits of each regular expression hold for both.
func TestStoredRulesKeepTheirCounts(t *testing.T) {
	oneOf := `{"field":"Summary","operator":"oneOf","value":[` + strings.TrimSuffix(strings.Repeat(`"v",`, 300), ",") + `]}`
	heavy := ruleCond("matches", `[a-z]{1,900}x`)
	old := doc(conds(80, okCond)[:len(conds(80, okCond))-1]+","+oneOf+","+conds(3, heavy)[1:], "["+okOutcome+"]", "1")
	if _, _, err := ValidateJSON([]byte(old), Options{}); err == nil {
		t.Fatal("a client's rule over the count limits was accepted")
	}
	r, err := CompileJSON([]byte(old), Meta{ID: uuid.New()})
	if err != nil {
		t.Fatalf("a stored rule over the count limits: %v", err)
	}
	p := Prepare(Input{Summary: "x"})
	if r.Matches(&p) {
		t.Fatal("the stored rule matched without its oneOf")
	}
	if _, err := CompileJSON([]byte(withCond(ruleCond("matches", `(abc){1,999}`))), Meta{}); err == nil {
		t.Fatal("a stored pattern over the per-pattern limit compiled")
	}
}

// TestRuleChecksBeforeCompiling shows the order of the work: every cheap
// check of the whole rule runs before the first regular expression is
// compiled (a rule whose last condition is wrong is refused with a context
// that would stop compilation), and compilation watches the context.
func TestRuleChecksBeforeCompiling(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	heavy := ruleCond("matches", `[a-z]{1,900}x`)
	bad := doc("["+heavy+","+heavy+`,{"field":"Summary","operator":"nope","value":"x"}]`, "["+okOutcome+"]", "1")
	_, _, err := ValidateJSONContext(ctx, []byte(bad), Options{})
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Path != "conditions[2].operator" {
		t.Fatalf("a wrong last condition: error = %v, want the operator's *ValidationError", err)
	}
	tooMuch := doc(conds(3, heavy), "["+okOutcome+"]", "1")
	if _, _, err := ValidateJSONContext(ctx, []byte(tooMuch), Options{}); !errors.As(err, &ve) || ve.Path != "conditions" {
		t.Fatalf("over the rule's total: error = %v, want the conditions' *ValidationError", err)
	}
	ok := doc(conds(2, heavy), "["+okOutcome+"]", "1")
	if _, _, err := ValidateJSONContext(ctx, []byte(ok), Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a valid rule with an ended context: error = %v, want context.Canceled", err)
	}
	if _, _, err := ValidateJSONContext(context.Background(), []byte(ok), Options{}); err != nil {
		t.Fatalf("the same rule with a live context: %v", err)
	}
}

// TestProgSizeBoundsTheProgram checks that progSize is an upper bound of
// the program regexp/syntax compiles, and a close one, on a corpus and on
// random expressions.
func TestProgSizeBoundsTheProgram(t *testing.T) {
	corpus := []string{
		`a`, `abc`, `(?i)abc`, `[a-z]`, `.`, `(?s).`, `^a$`, `\bfoo\b`, `a*`, `a+`, `a?`, `a*?`, `(a)`, `(?:a)`,
		`a|b|c`, `(a|b)*c`, `x{3}`, `x{3,}`, `x{0,}`, `x{1,5}`, `(ab){2,4}`, `((a{2}){3}){4}`, `(a*)*`, `(a+)+`,
		`\pL{1,100}`, `[a-z]{1,1000}`, `(?:abcdef){400}`, `()`, `(?:)`, `[^\x00-\x{10FFFF}]`, `(a|)+`, `a{0}`,
		`(?i)caf[eé]`, `\d{4}-\d{2}`, `(x{2,}){3}`, `(?:(?:a{1,10}){1,10}){1,9}`,
	}
	rng := rand.New(rand.NewPCG(22, 1))
	for range 2000 {
		corpus = append(corpus, randomPattern(rng, 3))
	}
	for _, p := range corpus {
		re, err := syntax.Parse(p, syntax.Perl)
		if err != nil {
			continue
		}
		prog, err := syntax.Compile(re.Simplify())
		if err != nil {
			continue
		}
		got, actual := progSize(re, 1<<30), len(prog.Inst)
		if got < actual {
			t.Errorf("%s: progSize %d below the program's %d instructions", p, got, actual)
		}
		if got > 3*actual+16 { // Simplify folds nested stars: a loose ceiling
			t.Errorf("%s: progSize %d far above the program's %d instructions", p, got, actual)
		}
	}
}

// TestProgSizeMatchesTheCompiler checks that progSize is not only an
// upper bound but the program's exact size for the usual forms (stars of
// bodies that can and cannot match empty, plus, quest, captures,
// alternations, counted repetitions), so that no rule within the limit is
// refused for a pessimistic estimate: (?:a*b){600} compiles to 1,802
// instructions and is estimated at 1,802.
func TestProgSizeMatchesTheCompiler(t *testing.T) {
	exact := []string{
		`a`, `abc`, `(?i)abc`, `[a-z]`, `.`, `(?s).`, `^a$`, `\bfoo\b`, `a*`, `a+`, `a?`, `a*?`, `a+?`, `(a)`, `(?:a)`,
		`(a*)*`, `(?:^)*`, `(?:a?)+`, `(?:a|)+`, `(a|b)*c`, `a|bc|d`, `x{3}`, `x{3,}`, `x{0,}`, `x{1,5}`, `x{0,5}`,
		`(ab){2,4}`, `((a{2}){3}){4}`, `(?:a*b){600}`, `(?:\b*a){700}`, `\pL{1,100}`, `[a-z]{1,1000}`, `(?:abcdef){300}`,
		`(?:)`, `()`, `a{0}`, `(?i)caf[eé]`, `\d{4}-\d{2}`, `(x{2,}){3}`, `(?:(?:a{1,10}){1,10}){1,9}`, `(?i)\pL{1,990}y`,
	}
	for _, p := range exact {
		re, err := syntax.Parse(p, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		prog, err := syntax.Compile(re.Simplify())
		if err != nil {
			t.Fatal(err)
		}
		if got, want := progSize(re, 1<<30), len(prog.Inst); got != want {
			t.Errorf("%s: progSize %d, the program has %d instructions", p, got, want)
		}
	}
}

// TestStoredPatternsCheckedExactly checks that a stored rule whose
// pattern is estimated above the per-pattern limit but compiles within it
// (a star of an empty group, which Simplify folds) still compiles, while a
// client's is refused; and that one really over the limit is refused in
// both modes.
func TestStoredPatternsCheckedExactly(t *testing.T) {
	folded := withCond(ruleCond("matches", `(?:(?:)*a){800}`)) // estimated 3,202, compiles to 1,602
	if _, _, err := ValidateJSON([]byte(folded), Options{}); err == nil {
		t.Fatal("a client's pattern estimated over the limit was accepted")
	}
	r, err := CompileJSON([]byte(folded), Meta{ID: uuid.New()})
	if err != nil {
		t.Fatalf("a stored pattern within the limit once compiled: %v", err)
	}
	p := Prepare(Input{Summary: strings.Repeat("a", 800)})
	if !r.Matches(&p) {
		t.Fatal("the stored rule does not match")
	}
	for _, ok := range []string{`(?:a*b){600}`, `(?i)\pL{1,990}y`} {
		if _, _, err := ValidateJSON([]byte(withCond(ruleCond("matches", ok))), Options{}); err != nil {
			t.Errorf("%s, within the limit, refused for a client: %v", ok, err)
		}
		if _, err := CompileJSON([]byte(withCond(ruleCond("matches", ok))), Meta{}); err != nil {
			t.Errorf("%s, within the limit, refused stored: %v", ok, err)
		}
	}
	over := withCond(ruleCond("matches", `(?:a?){0,1000}`)) // 3,001 instructions
	if _, err := CompileJSON([]byte(over), Meta{}); err == nil {
		t.Fatal("a stored pattern over the limit compiled")
	}
}

// randomPattern is a random regular expression of nested groups, counted
// repetitions, classes and alternations, depth levels deep.
func randomPattern(rng *rand.Rand, depth int) string {
	atoms := []string{`a`, `bc`, `[a-z]`, `\d`, `.`, `\b`, `^`, `$`, `(?i)k`, `\pL`}
	if depth == 0 || rng.IntN(3) == 0 {
		return atoms[rng.IntN(len(atoms))]
	}
	sub := func() string { return randomPattern(rng, depth-1) }
	switch rng.IntN(6) {
	case 0:
		return sub() + sub()
	case 1:
		return "(" + sub() + "|" + sub() + ")"
	case 2:
		return "(?:" + sub() + ")*"
	case 3:
		return "(" + sub() + ")+?"
	case 4:
		lo := rng.IntN(12)
		return fmt.Sprintf("(?:%s){%d,%d}", sub(), lo, lo+rng.IntN(12))
	default:
		return fmt.Sprintf("(%s){%d,}", sub(), rng.IntN(5))
	}
}

// TestCacheCompilesOncePerVersion checks that a cached rule is compiled
// once per version, that a new version is compiled again, that the cache
// stays within its size, and that a nil cache compiles every time.
func TestCacheCompilesOncePerVersion(t *testing.T) {
	ctx := context.Background()
	raw := []byte(withCond(ruleCond("matches", `(?i)coffee`)))
	c := NewCache(2)
	id := uuid.New()
	v1 := time.Date(2026, 11, 27, 10, 0, 0, 1000, time.UTC)
	var first *Rule
	for range 5 {
		r, err := c.Compile(ctx, raw, Meta{ID: id}, v1)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = r
		}
		if r != first || r.ID() != id {
			t.Fatalf("cached rule differs: %p %p", r, first)
		}
	}
	if n := c.Compilations(); n != 1 {
		t.Fatalf("5 lookups of one version: %d compilations, want 1", n)
	}
	if _, err := c.Compile(ctx, raw, Meta{ID: id}, v1.Add(time.Microsecond)); err != nil {
		t.Fatal(err)
	}
	if n := c.Compilations(); n != 2 {
		t.Fatalf("a new version: %d compilations, want 2", n)
	}
	for range 3 {
		if _, err := c.Compile(ctx, raw, Meta{ID: uuid.New()}, v1); err != nil {
			t.Fatal(err)
		}
	}
	if c.Len() != 2 {
		t.Fatalf("cache of size 2 holds %d rules", c.Len())
	}
	if _, err := c.Compile(ctx, []byte(`{}`), Meta{ID: id}, v1.Add(time.Hour)); err == nil {
		t.Fatal("an invalid stored rule compiled")
	}
	var none *Cache
	if _, err := none.Compile(ctx, raw, Meta{ID: id}, v1); err != nil || none.Compilations() != 0 {
		t.Fatalf("nil cache: %v", err)
	}
}

// TestStoredInstsAgreesWithTheRule checks that the size the API counts
// for a stored rule (StoredInsts, from its JSON) is the compiled rule's
// (Insts), and that a rule without regular expressions counts nothing.
func TestStoredInstsAgreesWithTheRule(t *testing.T) {
	conds := `[` + ruleCond("matches", `(?:a*b){600}`) + `,` + ruleCond("matches", `x{1000}`) + `,` + okCond + `]`
	_, r, err := ValidateJSON([]byte(doc(conds, "["+okOutcome+"]", "1")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := StoredInsts([]byte(conds)), r.Insts(); got != want || want != 1802+1002 {
		t.Fatalf("StoredInsts %d, Insts %d, want both 2804", got, want)
	}
	if n := StoredInsts([]byte(`[` + okCond + `]`)); n != 0 {
		t.Fatalf("a rule without regular expressions counts %d", n)
	}
}

// TestCacheKeepsWithinItsInstructionBudget fills a cache bounded to 10,000
// instructions with rules of 1,802 (and rules without expressions) and
// checks that it holds at most 5 of the heavy ones, evicting the least
// recently used, that its count of instructions is that of what it holds,
// and that the rule most recently used stays.
func TestCacheKeepsWithinItsInstructionBudget(t *testing.T) {
	ctx := context.Background()
	heavy := []byte(withCond(ruleCond("matches", `(?:a*b){600}`)))
	light := []byte(withCond(okCond))
	c := NewCacheBudget(100, 10_000)
	v := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	first := uuid.New()
	if _, err := c.Compile(ctx, heavy, Meta{ID: first}, v); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if _, err := c.Compile(ctx, heavy, Meta{ID: uuid.New()}, v); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Compile(ctx, light, Meta{ID: uuid.New()}, v); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Compile(ctx, heavy, Meta{ID: first}, v); err != nil { // keeps first recently used
			t.Fatal(err)
		}
		if c.Insts() > 10_000 {
			t.Fatalf("round %d: %d instructions held, budget 10,000", i, c.Insts())
		}
	}
	if got := c.Insts(); got != 5*1802 {
		t.Fatalf("%d instructions held, want 5 rules of 1,802", got)
	}
	if n := c.Compilations(); n != 41 {
		t.Fatalf("%d compilations, want 41 (the first rule compiled once)", n)
	}
	alone := NewCacheBudget(100, 1000)
	if _, err := alone.Compile(ctx, heavy, Meta{ID: first}, v); err != nil || alone.Len() != 1 {
		t.Fatalf("a rule alone over the budget: %v, %d held", err, alone.Len())
	}
}
