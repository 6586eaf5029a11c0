package rules

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

const (
	benchTransactions = 1_000_000
	benchRules        = 100
	benchAccounts     = 20
)

var benchMerchants = []string{
	"Blue Bottle Coffee", "Starbucks", "Uber", "Lyft", "Amazon", "Tesco", "Sainsbury's",
	"Whole Foods", "Shell", "BP", "Netflix", "Spotify", "Apple", "Google", "Deliveroo",
	"Pret A Manger", "Café Nero", "Zara", "H&M", "IKEA", "Lidl", "Aldi", "Costa",
	"McDonald's", "Burger King", "Trainline", "TfL", "Airbnb", "Booking.com", "Ryanair",
	"Überall GmbH", "Żabka", "Ресторан Пушкин", "Migros", "Carrefour", "Monoprix",
	"Rewe", "Edeka", "Dm Drogerie", "Boots",
}

var benchWords = []string{
	"coffee", "grocery", "fuel", "subscription", "transfer", "refund", "salary", "rent",
	"insurance", "pharmacy", "travel", "hotel", "taxi", "restaurant", "market", "store",
}

// benchAccountIDs returns the benchmark's deterministic account ids.
func benchAccountIDs() []uuid.UUID {
	ids := make([]uuid.UUID, benchAccounts)
	for i := range ids {
		ids[i] = uuid.MustParse(fmt.Sprintf("00000000-0000-4000-8000-%012d", i+1))
	}
	return ids
}

// benchInputs generates the benchmark's transactions deterministically.
func benchInputs(n int, accounts []uuid.UUID) []Prepared {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]Prepared, n)
	for i := range out {
		merchant := benchMerchants[rng.IntN(len(benchMerchants))]
		word := benchWords[rng.IntN(len(benchWords))]
		summary := merchant + " " + word
		if rng.IntN(2) == 0 {
			summary = strings.ToUpper(summary)
		}
		in := Input{
			AccountID:           accounts[rng.IntN(len(accounts))],
			Summary:             summary,
			OriginalDescription: fmt.Sprintf("POS %04d %s", rng.IntN(10000), strings.ToUpper(merchant)),
			Amount:              decimal.New(rng.Int64N(200_000)-150_000, -2),
			Day:                 1 + rng.IntN(28),
		}
		if rng.IntN(5) != 0 {
			in.MerchantName = merchant
		}
		out[i] = Prepare(in)
	}
	return out
}

// benchConditions returns the condition lists of the benchmark's 100 rules.
func benchConditions(accounts []uuid.UUID) []string {
	var conds []string
	add := func(format string, args ...any) { conds = append(conds, fmt.Sprintf(format, args...)) }
	for i := range 27 { // text contains: words, merchant fragments, and misses
		value := benchWords[i%len(benchWords)]
		if i >= len(benchWords) {
			value = strings.Fields(strings.ToLower(benchMerchants[i]))[0]
			if i%2 == 1 {
				value += " x"
			}
		}
		add(`{"field":"Summary","operator":"contains","value":%q}`, value)
	}
	for i := range 15 { // text is
		add(`{"field":"MerchantName","operator":"is","value":%q}`, strings.ToLower(benchMerchants[i*2%len(benchMerchants)]))
	}
	for i := range 10 { // text startsWith
		add(`{"field":"OriginalDescription","operator":"startsWith","value":"pos %d"}`, i)
	}
	for i := range 10 { // oneOf
		m := benchMerchants
		add(`{"field":"MerchantName","operator":"oneOf","value":[%q,%q,%q,%q]}`, m[i], m[i+5], m[i+10], m[i+20])
	}
	for i := range 15 { // Amount, alone or with text
		switch i % 3 {
		case 0:
			add(`{"field":"Amount","operator":"lt","value":-%d}`, 100+i*50)
		case 1:
			add(`{"field":"Amount","operator":"between","value":[-%d.25, -%d]},{"field":"Summary","operator":"contains","value":%q}`,
				60+i, 10+i, benchWords[i%len(benchWords)])
		default:
			add(`{"field":"Amount","operator":"gte","value":%d.5},{"field":"MerchantName","operator":"isNot","value":"amazon"}`, 200+i*10)
		}
	}
	for i := range 15 { // Account, with amount or text
		if i%2 == 0 {
			add(`{"field":"Account","operator":"is","value":%q},{"field":"Amount","operator":"lte","value":-%d}`, accounts[i%len(accounts)], 20+i)
		} else {
			add(`{"field":"Account","operator":"oneOf","value":[%q,%q,%q]},{"field":"Summary","operator":"endsWith","value":%q}`,
				accounts[i%len(accounts)], accounts[(i+3)%len(accounts)], accounts[(i+7)%len(accounts)], benchWords[i%len(benchWords)])
		}
	}
	add(`{"field":"transactionDay","operator":"between","value":[1,3]},{"field":"Summary","operator":"contains","value":"rent"}`)
	add(`{"field":"transactionDay","operator":"is","value":15},{"field":"Summary","operator":"contains","value":"salary"}`)
	add(`{"field":"transactionDay","operator":"gt","value":25},{"field":"Amount","operator":"gt","value":1000}`)
	add(`{"field":"Summary","operator":"matches","value":"^(?i)uber .*(taxi|travel)$"}`)
	add(`{"field":"OriginalDescription","operator":"matches","value":"^POS [0-9]{4} (TESCO|LIDL|ALDI)"}`)
	add(`{"field":"MerchantName","operator":"matches","value":"(?i)caf[eé]"}`)
	add(`{"field":"Summary","operator":"matches","value":"[0-9]{3,}"}`)
	add(`{"field":"OriginalDescription","operator":"matches","value":"SPOTIFY|NETFLIX"}`)
	return conds
}

// benchSet compiles the benchmark's 100 rules.
func benchSet(b *testing.B, accounts []uuid.UUID) *Set {
	conds := benchConditions(accounts)
	if len(conds) != benchRules {
		b.Fatalf("%d rules, want %d", len(conds), benchRules)
	}
	outcomes := []string{
		`{"action":"updateTransaction","field":"Category","value":{"id":"%s","value":"Category %d"}}`,
		`{"action":"updateTransaction","field":"MerchantName","value":"Renamed %[2]d"}`,
		`{"action":"hideTransaction","value":true}`,
	}
	rules := make([]*Rule, len(conds))
	for i, c := range conds {
		id := uuid.MustParse(fmt.Sprintf("10000000-0000-4000-8000-%012d", i))
		outcome := outcomes[i%len(outcomes)]
		if i%len(outcomes) == 0 {
			outcome = fmt.Sprintf(outcome, id, i)
		} else if i%len(outcomes) == 1 {
			outcome = fmt.Sprintf(outcome, "", i)
		}
		doc := fmt.Sprintf(`{"conditions":[%s],"outcomes":[%s],"priority":%d}`, c, outcome, 1+i%100)
		var allowed []uuid.UUID
		if i%10 == 9 {
			allowed = accounts[:benchAccounts/2]
		}
		r, err := CompileJSON([]byte(doc), Meta{ID: id, CreatedAt: time.Unix(int64(i), 0), AllowedAccountIDs: allowed})
		if err != nil {
			b.Fatalf("rule %d: %v", i, err)
		}
		rules[i] = r
	}
	return NewSet(rules...)
}

// BenchmarkApply evaluates 100 rules against 1,000,000 transactions per
// operation; evals/s counts rule-against-transaction evaluations.
func BenchmarkApply(b *testing.B) {
	accounts := benchAccountIDs()
	set := benchSet(b, accounts)
	txs := benchInputs(benchTransactions, accounts)
	// Warm up: the regexp package keeps its matching machines in a pool that
	// is filled on first use.
	for i := range 1000 {
		set.Apply(&txs[i])
	}
	decided := 0
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		decided = 0
		for i := range txs {
			res := set.Apply(&txs[i])
			if res.Any() {
				decided++
			}
		}
	}
	b.StopTimer()
	evals := float64(b.N) * float64(len(txs)) * float64(set.Len())
	b.ReportMetric(evals/b.Elapsed().Seconds(), "evals/s")
	b.ReportMetric(b.Elapsed().Seconds()*1e9/evals, "ns/eval")
	b.ReportMetric(float64(decided)/float64(len(txs)), "decided/tx")
}

// BenchmarkMatches measures one rule against one transaction.
func BenchmarkMatches(b *testing.B) {
	accounts := benchAccountIDs()
	rules := benchSet(b, accounts).Rules()
	txs := benchInputs(1000, accounts)
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for i := range b.N {
		if rules[i%len(rules)].Matches(&txs[(i/len(rules))%len(txs)]) {
			n++
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "evals/s")
	_ = n
}
