package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/api/middleware"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/rules"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// FuzzRuleAPI sends generated rule bodies to POST /v2/rules/preview and
// POST /v2/rules through the real router and database: random condition
// lists (up to twice rules.MaxConditions, on every field and operator, with
// values of every type and oneOf lists up to twice rules.MaxListValues) and
// regular expressions (generated, and the fuzzer's own text), within and
// beyond the limits. Every answer is 200/201 or a 400 in the error
// envelope (never a 5xx), in bounded time and memory. The seed corpus runs
// as a plain test:
//
//	go test ./api -run FuzzRuleAPI            (seeds only)
//	go test ./api -run '^$' -fuzz FuzzRuleAPI -fuzztime 60s
func FuzzRuleAPI(f *testing.F) {
	pool, _ := storagetest.NewDB(f)
	fx := storagetest.NewFixtures(f, pool)
	a := api.MustNew(api.Config{Providers: all.NewRegistry().Profiles(), Store: storage.New(pool),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), CursorKey: []byte("test cursor key, 32 bytes long!!"),
		Auth: middleware.DefaultAuthConfig()})
	w := seedWorld(fx)
	key := fx.Key(w.a.ID, nil)
	fx.Transactions(w.a.ID, w.connA1, w.acctA1, "plaid", []storagetest.Tx{
		{Summary: "Coffee shop", Amount: "-4.5", Date: time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC)},
		{Summary: "Épicerie aaaa", Amount: "-120", Date: time.Date(2026, 3, 28, 0, 0, 0, 0, time.UTC)},
	})
	gen := ruleGen{accounts: []string{w.acctA1.String(), w.acctB.String()}, category: w.catA.String()}
	for i, p := range []string{`(a{1,1000}){1,1000}`, `((x{999}){999}){999}`, `(?i)coffee`, `[a-z]{1,900}x`, `(abc){1,999}`,
		`\pL{1,100}`, `(`, `x{2,1}`, `(?m)^a$`, strings.Repeat("a", rules.MaxPatternBytes+1), "", `\b(\d{4}|\w+){1,30}`} {
		f.Add(uint64(i), uint16(i*13), p)
	}
	for i := range 24 {
		f.Add(uint64(1000+i), uint16(i*7), "")
	}
	f.Fuzz(func(t *testing.T, seed uint64, n uint16, pattern string) {
		// A third of the bodies keep within every limit (but the fuzzer's
		// pattern); the others go past them at random.
		gen.within = seed%3 == 0
		count := int(n) % (2*rules.MaxConditions + 1)
		if gen.within {
			count = 1 + int(n)%rules.MaxConditions
		}
		body := gen.body(rand.New(rand.NewPCG(seed, uint64(n))), count, pattern)
		for _, path := range []string{"/v2/rules/preview", "/v2/rules"} {
			rec, took, alloc := measured(a.Handler, ruleRequest(http.MethodPost, path, key, body, seed%2 == 1))
			ok := http.StatusOK
			if path == "/v2/rules" {
				ok = http.StatusCreated
			}
			if rec.Code != ok && rec.Code != http.StatusBadRequest {
				t.Fatalf("%s %s: status %d: %s", path, body, rec.Code, rec.Body.Bytes())
			}
			if rec.Code == http.StatusBadRequest {
				var env struct {
					Error struct{ Code, Message string }
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || env.Error.Code != "BAD_REQUEST" || env.Error.Message == "" {
					t.Fatalf("%s: 400 outside the envelope: %s", path, rec.Body.Bytes())
				}
			}
			// Generous bounds for a shared machine; BENCHMARKS.md has the
			// figures of the worst cases.
			if took > 2*time.Second || alloc > 10<<20 {
				t.Fatalf("%s %.300s: %v and %d bytes", path, body, took, alloc)
			}
		}
	})
}

// ruleGen generates rule documents, valid and not.
type ruleGen struct {
	accounts []string
	category string
	// within keeps the values within the limits and valid.
	within bool
}

// body is a rule document of n conditions; pattern, when not empty, is
// the value of every other matches condition.
func (g ruleGen) body(rng *rand.Rand, n int, pattern string) string {
	conds := make([]string, n)
	for i := range conds {
		conds[i] = g.condition(rng, pattern)
	}
	outcomes := []string{
		`{"action":"hideTransaction","value":true}`,
		`{"action":"updateTransaction","field":"MerchantName","value":"M"}`,
		`{"action":"updateTransaction","field":"Category","value":{"id":"` + g.category + `","value":"c"}}`,
	}
	k := 1 + rng.IntN(len(outcomes)+1) // now and then one outcome too many (a duplicate)
	priority := rng.IntN(102)
	if g.within {
		k, priority = 1+rng.IntN(len(outcomes)), 1+rng.IntN(100)
	}
	out := make([]string, k)
	for i := range out {
		out[i] = outcomes[i%len(outcomes)]
		if !g.within {
			out[i] = outcomes[(i+rng.IntN(2))%len(outcomes)]
		}
	}
	return fmt.Sprintf(`{"conditions":[%s],"outcomes":[%s],"priority":%d}`,
		strings.Join(conds, ","), strings.Join(out, ","), priority)
}

// condition is one random condition.
func (g ruleGen) condition(rng *rand.Rand, pattern string) string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	texts := []string{"Summary", "OriginalDescription", "MerchantName"}
	switch rng.IntN(6) {
	case 0:
		p := pattern
		switch {
		case g.within && (p == "" || rng.IntN(2) == 0):
			p = randomRegexp(rng, 2, 5)
		case p == "" || rng.IntN(2) == 0:
			p = randomRegexp(rng, 4, 1000)
		}
		return `{"field":"` + texts[rng.IntN(3)] + `","operator":"matches","value":` + q(p) + `}`
	case 1:
		n := 1 + rng.IntN(2*rules.MaxListValues)
		if g.within {
			n = 1 + rng.IntN(rules.MaxListValues)
		}
		vals := make([]string, n)
		for i := range vals {
			vals[i] = q(fmt.Sprint("v", rng.IntN(1000)))
		}
		return `{"field":"` + texts[rng.IntN(3)] + `","operator":"oneOf","value":[` + strings.Join(vals, ",") + `]}`
	case 2:
		ops := []string{"is", "isNot", "contains", "doesNotContain", "startsWith", "endsWith", "gt"}
		if g.within {
			ops = ops[:6]
		}
		return `{"field":"` + texts[rng.IntN(3)] + `","operator":"` + ops[rng.IntN(len(ops))] + `","value":` + q(strings.Repeat("é", rng.IntN(3))+"coffee") + `}`
	case 3:
		ops := []string{"is", "gt", "gte", "lt", "lte"}
		return fmt.Sprintf(`{"field":"Amount","operator":%q,"value":%d.%02d}`, ops[rng.IntN(len(ops))], rng.IntN(2000)-1000, rng.IntN(100))
	case 4:
		lo, hi := rng.IntN(33), rng.IntN(33)
		if g.within {
			lo = 1 + rng.IntN(31)
			hi = lo + rng.IntN(32-lo)
		}
		return fmt.Sprintf(`{"field":"transactionDay","operator":"between","value":[%d,%d]}`, lo, hi)
	default:
		return `{"field":"Account","operator":"is","value":"` + g.accounts[rng.IntN(len(g.accounts))] + `"}`
	}
}

// randomRegexp is a random regular expression with counted repetitions
// (their spans up to span) nested up to depth levels.
func randomRegexp(rng *rand.Rand, depth, span int) string {
	atoms := []string{`a`, `[a-z]`, `\d`, `.`, `(?i)co`, `\pL`, `\b`, `^`, `é`}
	if depth == 0 || rng.IntN(3) == 0 {
		return atoms[rng.IntN(len(atoms))]
	}
	sub := randomRegexp(rng, depth-1, span)
	switch rng.IntN(4) {
	case 0:
		return sub + randomRegexp(rng, depth-1, span)
	case 1:
		return "(" + sub + "|" + randomRegexp(rng, depth-1, span) + ")"
	case 2:
		lo := rng.IntN(min(40, span))
		return fmt.Sprintf("(?:%s){%d,%d}", sub, lo, lo+rng.IntN(span))
	default:
		return "(" + sub + ")*"
	}
}
