package storage_test

import (
	"context"
	"math/rand/v2"
	"regexp"
	"strconv"
	"testing"

	"github.com/finsync/finsync/rules"
	"github.com/finsync/finsync/rules/rulestest"
	"github.com/finsync/finsync/storage/storagetest"
)

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
	for _, p := range rulestest.RegexCorpus {
		if _, ok := exactRegex(t, p); ok {
			translated++
		}
		check(p, rulestest.RegexValues)
	}
	if translated != len(rulestest.RegexCorpus)-len(rulestest.RegexRefused) {
		t.Fatalf("%d of %d expressions translated, want all but the %d refused", translated, len(rulestest.RegexCorpus), len(rulestest.RegexRefused))
	}
	for p := range rulestest.RegexRefused {
		if _, ok := exactRegex(t, p); ok {
			t.Fatalf("%q translated", p)
		}
	}
	rng := rand.New(rand.NewPCG(19, 23))
	values := make([]string, 300)
	for i := range values {
		values[i] = rulestest.RandomASCII(rng, 8)
	}
	for i := 0; i < 400; i++ {
		check(rulestest.RandomRE2(rng, 4), values)
	}
}
