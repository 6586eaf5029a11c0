package storage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/rules"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// TestRulePrefilterLetsThroughEverythingTheRuleMatches checks the
// database's prefilter against the rule engine on text that folds across
// scripts and out of ASCII (the Kelvin sign, the long s, final sigma, the
// micro sign), LIKE and regular-expression metacharacters, and amount and
// day comparisons: every transaction the rule matches must be a candidate.
func TestRulePrefilterLetsThroughEverythingTheRuleMatches(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	fx := storagetest.NewFixtures(t, pool)
	user := fx.User(domain.PlanPro, true)
	conn := fx.Connection(user.ID, "plaid", "active")
	acct := fx.Account(user.ID, conn, "plaid", "a")
	summaries := []string{"Coffee shop", "COFFEE SHOP", "\u017Fhop coffee", "\u212Aelvin k", "KELVIN K", "Stra\u00dfe",
		"STRASSE", "\u00c4rger", "\u00e4rger", "\u03a3\u038a\u03a3\u03a5\u03a6\u039f\u03a3", "\u03c3\u03af\u03c3\u03c5\u03c6\u03bf\u03c2",
		"\u00b5 metre", "\u03bc metre", "100% pure_x", "100 pure x", "a.b*c", "aXbbc", "tea", ""}
	var txs []storagetest.Tx
	for i, s := range summaries {
		txs = append(txs, storagetest.Tx{Summary: s, Amount: fmt.Sprintf("-%d.5", i*10), Date: time.Date(2026, 1, 1+i, 0, 0, 0, 0, time.UTC)})
	}
	ids := fx.Transactions(user.ID, conn, acct, "plaid", txs)
	st := storage.New(pool)
	text := func(op string, v any) string {
		b, _ := json.Marshal(v)
		return fmt.Sprintf(`{"field":"Summary","operator":%q,"value":%s}`, op, b)
	}
	var conds []string
	for _, v := range []string{"shop", "SHOP", "kelvin k", "\u00c4rger", "\u03c3\u03af\u03c3\u03c5\u03c6\u03bf\u03c3", "% pure_",
		"a.b*c", "coffee", "\u00b5", "strasse", "k"} {
		for _, op := range []string{"contains", "is", "startsWith", "endsWith"} {
			conds = append(conds, text(op, v))
		}
	}
	conds = append(conds, text("oneOf", []string{"tea", "\u212Aelvin K", "a.b*c"}),
		text("doesNotContain", "shop"), text("matches", "^(?i)caf"),
		`{"field":"Amount","operator":"lt","value":-50}`, `{"field":"Amount","operator":"between","value":[-100.5,-20.5]}`,
		`{"field":"transactionDay","operator":"gte","value":10}`, `{"field":"Account","operator":"is","value":"`+acct.String()+`"}`)
	for _, c := range conds {
		def := []byte(`{"conditions":[` + c + `],"outcomes":[{"action":"hideTransaction","value":true}],"priority":1}`)
		rule, err := rules.CompileJSON(def, rules.Meta{})
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		candidates := map[uuid.UUID]bool{}
		err = st.RuleCandidates(context.Background(), storage.Scope{UserID: user.ID}, rule.Prefilter(), "t.id", func(rows pgx.Rows) error {
			var id uuid.UUID
			if err := rows.Scan(&id); err != nil {
				return err
			}
			candidates[id] = true
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		matched := 0
		for i, s := range summaries {
			day := time.Date(2026, 1, 1+i, 0, 0, 0, 0, time.UTC)
			p := rules.Prepare(rules.Input{AccountID: acct, Summary: s, Amount: domain.MustMoney(txs[i].Amount).Decimal(), Day: day.Day()})
			if !rule.Matches(&p) {
				continue
			}
			matched++
			if !candidates[ids[i]] {
				t.Errorf("%s matches %q, which the prefilter %+v leaves out", c, s, rule.Prefilter())
			}
		}
		t.Logf("%s: %d matched, %d candidates", c, matched, len(candidates))
	}
}
