package storage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/rules"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// previewTexts are values and needles that fold across scripts and out of
// ASCII (the Kelvin sign, the long s, sharp s, accented letters) and hold
// LIKE's metacharacters.
var previewTexts = []string{"Coffee shop", "COFFEE SHOP", "\u017Fhop coffee", "\u212Aelvin k", "kelvin K", "Stra\u00dfe",
	"STRASSE", "caf\u00e9", "CAF\u00c9", "a_b", "axb", "50% off", "50 off", "tea", "", "shop", "k", "s"}

var previewNeedles = []string{"shop", "SHOP", "k", "kelvin", "\u212Aelvin", "\u017Fhop", "s", "stra\u00dfe", "caf\u00e9",
	"a_b", "50%", "coffee", "tea", "e", ""}

// TestPreviewRuleAgreesWithTheRuleEngine compares PreviewRule (the database
// counting the certain changes, the rule engine the rest) with the rule
// engine run on every transaction, over many generated rules and stored
// rule sets, page by page; and, for some, with what creating the rule then
// changes.
func TestPreviewRuleAgreesWithTheRuleEngine(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	fx := storagetest.NewFixtures(t, pool)
	ctx := context.Background()
	user := fx.User(domain.PlanPro, true).ID
	conn := fx.Connection(user, "plaid", "active")
	accts := []uuid.UUID{fx.Account(user, conn, "plaid", "a"), fx.Account(user, conn, "plaid", "b"), fx.Account(user, conn, "plaid", "c")}
	cats := []uuid.UUID{fx.Category(user, "Coffee", "Food"), fx.Category(user, "Other", "Food")}
	rng := rand.New(rand.NewPCG(7, 11))
	amounts := []string{"-10", "-10.5", "-20", "0", "5", "-999.99"}
	var ids []uuid.UUID
	for a, acct := range accts {
		var txs []storagetest.Tx
		for i := 0; i < 60; i++ {
			txs = append(txs, storagetest.Tx{
				Summary: previewTexts[rng.IntN(len(previewTexts)-1)] + []string{"", " x", " #1"}[rng.IntN(3)],
				Amount:  amounts[rng.IntN(len(amounts))],
				Date:    time.Date(2026, time.Month(1+rng.IntN(2)), 1+rng.IntN(28), 0, 0, 0, 0, time.UTC),
			})
			if a == 0 && i%7 == 0 {
				txs[i].Date = txs[0].Date // equal dates: the id orders them
			}
		}
		ids = append(ids, fx.Transactions(user, conn, acct, "plaid", txs)...)
	}
	for i, id := range ids {
		var desc, merchant any
		if rng.IntN(3) > 0 {
			desc = previewTexts[rng.IntN(len(previewTexts))]
		}
		if rng.IntN(3) > 0 {
			merchant = previewTexts[rng.IntN(len(previewTexts))]
		}
		if _, err := pool.Exec(ctx, `UPDATE transactions SET original_description = $2, merchant_name = $3, provider_merchant_name = $3 WHERE id = $1`,
			id, desc, merchant); err != nil {
			t.Fatal(err)
		}
		if i%9 == 0 { // the user's choice
			if _, err := pool.Exec(ctx, `UPDATE transactions SET category_id = $2, category_source = 'user' WHERE id = $1`, id, cats[i%2]); err != nil {
				t.Fatal(err)
			}
		}
	}
	st := storage.New(pool)
	sc := storage.Scope{UserID: user}
	gen := previewGen{rng: rng, accts: accts, cats: cats, amounts: amounts}
	for round := 0; round < 40; round++ {
		if _, err := pool.Exec(ctx, `UPDATE rules SET archived_at = now() WHERE user_id = $1 AND archived_at IS NULL`, user); err != nil {
			t.Fatal(err)
		}
		for i := rng.IntN(5); i > 0; i-- {
			conds, outs, prio := gen.rule()
			if _, err := pool.Exec(ctx, `INSERT INTO rules (user_id, conditions, outcomes, priority) VALUES ($1, $2, $3, $4)`, user, conds, outs, prio); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := storage.New(pool).ApplyRulesToUser(ctx, user, 0); err != nil {
			t.Fatal(err)
		}
		for k := 0; k < 25; k++ {
			conds, outs, prio := gen.rule()
			def := []byte(`{"conditions":` + conds + `,"outcomes":` + outs + `,"priority":` + fmt.Sprint(prio) + `}`)
			var allowed []uuid.UUID
			if rng.IntN(4) == 0 {
				allowed = accts[:1+rng.IntN(2)]
			}
			limit := 1 + rng.IntN(40)
			got := previewPages(t, st, sc, def, allowed, limit, previewJSON)
			want := previewPages(t, st, sc, def, allowed, limit, storage.PreviewRuleInGo)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s (allowed %v, limit %d): PreviewRule gives %d changes %v, the rule engine %d: %v", def, allowed, limit, len(got), got, len(want), want)
			}
			if k == 0 && allowed == nil {
				createAndCompare(t, ctx, st, user, conds, outs, prio, want)
			}
		}
	}
}

// previewPages follows preview's pages and returns every change listed,
// after checking that each page's count is the number of changes.
func previewPages(t *testing.T, st *storage.Store, sc storage.Scope, def []byte, allowed []uuid.UUID, limit int,
	preview func(context.Context, *storage.Store, storage.Scope, []byte, []uuid.UUID, storage.Keyset, int) (storage.Preview, error)) []storage.PreviewChange {
	t.Helper()
	var all []storage.PreviewChange
	var after storage.Keyset
	count := -1
	for {
		pv, err := preview(context.Background(), st, sc, def, allowed, after, limit)
		if err != nil {
			t.Fatalf("%s: %v", def, err)
		}
		if count >= 0 && pv.Count != count {
			t.Fatalf("%s: count %d, then %d", def, count, pv.Count)
		}
		count = pv.Count
		all = append(all, pv.Changes...)
		if !pv.HasMore {
			break
		}
		after = pv.Changes[len(pv.Changes)-1].Key
	}
	if len(all) != count {
		t.Fatalf("%s: count %d, %d listed", def, count, len(all))
	}
	return all
}

// createAndCompare stores the rule, applies the rules and checks that the
// transactions that changed, and their new state, are those the preview
// listed (the category's rule then names the stored rule).
func createAndCompare(t *testing.T, ctx context.Context, st *storage.Store, user uuid.UUID, conds, outs string, prio int, want []storage.PreviewChange) {
	t.Helper()
	pool := st.Pool()
	before := ruleStates(t, pool, user)
	var ruleID uuid.UUID
	if err := pool.QueryRow(ctx, `INSERT INTO rules (user_id, conditions, outcomes, priority) VALUES ($1, $2, $3, $4) RETURNING id`,
		user, conds, outs, prio).Scan(&ruleID); err != nil {
		t.Fatal(err)
	}
	if _, err := storage.New(pool).ApplyRulesToUser(ctx, user, 0); err != nil {
		t.Fatal(err)
	}
	after := ruleStates(t, pool, user)
	changed := map[uuid.UUID]bool{}
	for id, s := range after {
		if s != before[id] {
			changed[id] = true
		}
	}
	if len(changed) != len(want) {
		t.Fatalf("rule %s %s: the preview lists %d changes, creating it changed %d", conds, outs, len(want), len(changed))
	}
	for _, ch := range want {
		s, n := after[ch.ID], ch.New
		if !changed[ch.ID] || s.hidden != n.Hidden || s.category != orDash(n.CategoryID) || s.merchant != orDash(n.MerchantName) {
			t.Fatalf("rule %s %s: transaction %s became %+v, the preview said %+v", conds, outs, ch.ID, s, n)
		}
	}
}

// ruleState is a transaction's rule-dependent columns, as text ("-" for
// NULL).
type ruleState struct {
	category, source, categoryRule, merchant, merchantRule, hiddenRule string
	hidden                                                             bool
}

func ruleStates(t *testing.T, pool *pgxpool.Pool, user uuid.UUID) map[uuid.UUID]ruleState {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT id, COALESCE(category_id::text, '-'), COALESCE(category_source, '-'),
		COALESCE(category_rule_id::text, '-'), COALESCE(merchant_name, '-'), COALESCE(merchant_rule_id::text, '-'),
		COALESCE(hidden_rule_id::text, '-'), hidden FROM transactions WHERE user_id = $1`, user)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[uuid.UUID]ruleState{}
	for rows.Next() {
		var id uuid.UUID
		var s ruleState
		if err := rows.Scan(&id, &s.category, &s.source, &s.categoryRule, &s.merchant, &s.merchantRule, &s.hiddenRule, &s.hidden); err != nil {
			t.Fatal(err)
		}
		out[id] = s
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func orDash[T any](p *T) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}

// previewGen generates rule definitions: conditions on every field with
// every operator the validator accepts, and outcomes.
type previewGen struct {
	rng     *rand.Rand
	accts   []uuid.UUID
	cats    []uuid.UUID
	amounts []string
}

func (g *previewGen) pick(list []string) string { return list[g.rng.IntN(len(list))] }

func (g *previewGen) cond() string {
	js := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		return string(b)
	}
	c := func(field, op, value string) string {
		return fmt.Sprintf(`{"field":%q,"operator":%q,"value":%s}`, field, op, value)
	}
	num := func() string {
		return g.pick([]string{"is", "gt", "gte", "lt", "lte", "between"})
	}
	switch g.rng.IntN(10) {
	case 0, 1:
		op := num()
		if op == "between" {
			lo, hi := g.rng.IntN(1000)-995, g.rng.IntN(20)-5
			return c("Amount", op, fmt.Sprintf("[%d, %d.5]", lo, hi))
		}
		return c("Amount", op, g.pick(g.amounts))
	case 2:
		op := num()
		if op == "between" {
			lo := 1 + g.rng.IntN(20)
			return c("transactionDay", op, fmt.Sprintf("[%d, %d]", lo, lo+g.rng.IntN(12)))
		}
		return c("transactionDay", op, fmt.Sprint(1+g.rng.IntN(31)))
	case 3:
		switch g.rng.IntN(3) {
		case 0:
			return c("Account", "is", js(g.accts[g.rng.IntN(3)]))
		case 1:
			return c("Account", "isNot", js(g.accts[g.rng.IntN(3)]))
		default:
			return c("Account", "oneOf", js(g.accts[:1+g.rng.IntN(2)]))
		}
	}
	field := g.pick([]string{"Summary", "Summary", "OriginalDescription", "MerchantName"})
	op := g.pick([]string{"is", "isNot", "contains", "contains", "doesNotContain", "startsWith", "endsWith", "oneOf", "matches"})
	switch op {
	case "oneOf":
		var items []string
		for i := 1 + g.rng.IntN(3); i > 0; i-- {
			items = append(items, g.pick(previewTexts))
		}
		return c(field, op, js(items))
	case "matches":
		// Expressions the database translates (folding out of ASCII,
		// anchors, classes, word boundaries, metacharacters) and one it
		// does not (multi-line).
		return c(field, op, js(g.pick([]string{"(?i)^caf", "shop$", "[0-9]", `(?i)k`, `(?i)\x{212A}elvin`, "\u017Fhop", `\bshop\b`,
			`^[A-Z]`, `(?i)coffee|tea`, `\d+`, `a.b`, `50%`, `^$`, `(?s)e.*#1`, `[^a-z ]`, `(?m)^tea`, `\s\w{1,3}$`})))
	case "is", "isNot":
		return c(field, op, js(g.pick(append(previewTexts, previewNeedles...))))
	}
	needle := g.pick(previewNeedles)
	if needle == "" {
		needle = "e"
	}
	if g.rng.IntN(2) == 0 {
		needle = strings.ToUpper(needle)
	}
	return c(field, op, js(needle))
}

// rule returns a rule's conditions, outcomes and priority.
func (g *previewGen) rule() (string, string, int) {
	var conds []string
	for i := 1 + g.rng.IntN(3); i > 0; i-- {
		conds = append(conds, g.cond())
	}
	var outs []string
	for len(outs) == 0 {
		if g.rng.IntN(2) == 0 {
			outs = append(outs, `{"action":"updateTransaction","field":"Category","value":{"id":"`+g.cats[g.rng.IntN(2)].String()+`"}}`)
		}
		if g.rng.IntN(3) == 0 {
			outs = append(outs, `{"action":"updateTransaction","field":"MerchantName","value":`+g.pick([]string{`"Shop"`, `"Kelvin"`})+`}`)
		}
		if g.rng.IntN(3) == 0 {
			outs = append(outs, `{"action":"hideTransaction","value":true}`)
		}
	}
	return "[" + strings.Join(conds, ",") + "]", "[" + strings.Join(outs, ",") + "]", []int{5, 10, 10, 15}[g.rng.IntN(4)]
}

// previewJSON is Store.PreviewRule on a rule given as JSON.
func previewJSON(ctx context.Context, st *storage.Store, sc storage.Scope, def []byte, allowed []uuid.UUID, after storage.Keyset, limit int) (storage.Preview, error) {
	rule, err := rules.CompileJSON(def, rules.Meta{})
	if err != nil {
		return storage.Preview{}, err
	}
	return st.PreviewRule(ctx, sc, rule, nil, allowed, after, limit)
}
