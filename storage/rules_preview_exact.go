package storage

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/rules"
)

// PreviewRule reports what adding the rule def (a validated definition,
// as Rule.DefinitionJSON gives it) limited to the accounts allowed
// (nil: all) to the user's active rules would change among the transactions
// within the scope, as the rule job would decide it now, without writing
// anything: the count, and up to limit changes after the keyset position
// after, newest first. The rule runs after every stored rule of its
// priority, as when created now; it has no id yet, so the New state of a
// category it sets names no rule.
//
// The database counts the rows whose change is certain: the rule matches
// them by its exact form (rules.Rule.Exact, on ASCII text), no stored rule
// ranked after it that sets a field it sets can match them (their
// prefilters), so the rule's decision stands for those fields and differs
// from the stored one (it names no rule) unless it is a category the user
// chose. The other rows the rule's prefilter lets through (a non-ASCII
// text, no date, a later rule that may match; every candidate when the
// rule has no exact form) are evaluated in Go with the rule job's decision
// code, and so are the listed rows the database found; the two disagreeing
// is an error.
//
// Caveat: transactions whose stored state lags the active rules (a rule job
// still running) are counted only when the new rule matches them, and
// those the database counts only when a field the rule wins changes.
func PreviewRule(ctx context.Context, st *Store, sc Scope, def []byte, allowed []uuid.UUID, after Keyset, limit int) (Preview, error) {
	set, rule, err := previewSet(ctx, st, sc, def, allowed)
	if err != nil {
		return Preview{}, err
	}
	pf := rule.Prefilter()
	ex, exact := rule.Exact()
	if !exact {
		n, changes, err := previewScan(ctx, st, sc, set, rule, pf, nil, after, limit)
		if err != nil {
			return Preview{}, err
		}
		return pageOf(n, changes, limit), nil
	}
	later := laterPrefilters(set, rule)
	n, changes, err := previewScan(ctx, st, sc, set, rule, pf, func(w *where) {
		w.add(unsureSQL(w, &ex, later))
	}, after, limit)
	if err != nil {
		return Preview{}, err
	}
	certain := func(w *where) {
		w.add("NOT " + unsureSQL(w, &ex, later))
		addExactTexts(w, &ex)
		addChangedByRule(w, rule)
	}
	sure, err := st.countCertain(ctx, sc, pf, certain)
	if err != nil {
		return Preview{}, err
	}
	if sure > 0 {
		newest, err := st.newestCertain(ctx, sc, set, rule, pf, certain, after, limit)
		if err != nil {
			return Preview{}, err
		}
		changes = newestFirst(append(changes, newest...), limit+1)
	}
	return pageOf(n+sure, changes, limit), nil
}

// laterPrefilters returns the prefilters of the rules of set that run
// after rule and set a field it sets: the only ones that can overrule it.
func laterPrefilters(set *rules.Set, rule *rules.Rule) []rules.Prefilter {
	var out []rules.Prefilter
	seen := false
	for _, r := range set.Rules() {
		if r == rule {
			seen = true
			continue
		}
		if seen && (r.SetsCategory() && rule.SetsCategory() || r.SetsMerchantName() && rule.SetsMerchantName() || r.Hides() && rule.Hides()) {
			out = append(out, r.Prefilter())
		}
	}
	return out
}

// unsureSQL is the predicate of the rows on which the database cannot
// decide the previewed rule's effect (its exact form reads a text holding a
// non-ASCII character, the row has no date, or a later rule that sets a
// field it sets may match), its placeholders numbered after w's; it is
// never NULL.
func unsureSQL(w *where, ex *rules.Exact, later []rules.Prefilter) string {
	parts := []string{"t.tx_date IS NULL"}
	for _, f := range ex.ASCIIFields {
		col := prefilterColumn(f)
		parts = append(parts, "octet_length("+col+") <> char_length("+col+")")
	}
	for i := range later {
		parts = append(parts, w.expr(func(s *where) { addPrefilter(s, later[i]) }))
	}
	return "COALESCE(" + strings.Join(parts, " OR ") + ", TRUE)"
}

// addExactTexts adds the exact text terms, on values known to be ASCII:
// lower under the C collation lowercases the ASCII letters, which is then
// the value's folded form.
func addExactTexts(w *where, ex *rules.Exact) {
	for _, t := range ex.Texts {
		lowered := "lower((" + prefilterColumn(t.Field) + `) COLLATE "C")`
		var e string
		if t.OneOf != nil {
			e = lowered + " = ANY(" + w.arg(t.OneOf) + "::text[])"
		} else {
			e = lowered + " LIKE " + w.arg(t.Like)
		}
		if t.Negated {
			e = "NOT (" + e + ")"
		}
		w.add(e)
	}
}

// addChangedByRule adds the predicate "the rule's decision, standing, for
// one of the fields it sets differs from the row's": the value it sets
// with no rule id (the previewed rule has none), except that a category
// the user chose is kept. It mirrors what decide and changed conclude for
// such a row.
func addChangedByRule(w *where, rule *rules.Rule) {
	noRule := w.arg(uuid.Nil) + "::uuid"
	var parts []string
	if rule.SetsCategory() {
		src := w.arg(domain.CategoryFromRule) + "::text"
		parts = append(parts, "(NOT category_kept(t.category_source, "+src+") AND (t.category_id IS DISTINCT FROM "+
			w.arg(rule.Category().ID)+"::uuid OR t.category_source IS DISTINCT FROM "+src+
			" OR t.category_rule_id IS DISTINCT FROM "+noRule+"))")
	}
	if rule.SetsMerchantName() {
		parts = append(parts, "(t.merchant_name IS DISTINCT FROM "+w.arg(rule.MerchantName())+
			"::text OR t.merchant_rule_id IS DISTINCT FROM "+noRule+")")
	}
	if rule.Hides() {
		parts = append(parts, "(NOT t.hidden OR t.hidden_rule_id IS DISTINCT FROM "+noRule+")")
	}
	w.add("(" + strings.Join(parts, " OR ") + ")")
}

// countCertain counts the scope's transactions satisfying pf and what
// certain adds.
func (s *Store) countCertain(ctx context.Context, sc Scope, pf rules.Prefilter, certain func(*where)) (int, error) {
	var w where
	w.scope("t", sc)
	addPrefilter(&w, pf)
	certain(&w)
	var n int
	if err := s.reader(ctx).QueryRow(ctx, `SELECT count(*) FROM transactions t WHERE `+w.sql(), w.args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("preview rule: count certain changes: %w", err)
	}
	return n, nil
}

// newestCertain reads the first limit+1 rows after the position after,
// newest first, that satisfy pf and what certain adds, and evaluates each
// in Go: every one must change.
func (s *Store) newestCertain(ctx context.Context, sc Scope, set *rules.Set, rule *rules.Rule, pf rules.Prefilter, certain func(*where), after Keyset, limit int) ([]PreviewChange, error) {
	var w where
	w.scope("t", sc)
	addPrefilter(&w, pf)
	certain(&w)
	w.keyset("t.tx_date", "t.id", after)
	rows, err := scanRuleRows(s.reader(ctx).Query(ctx, `SELECT `+ruleRowColumns+` FROM transactions t WHERE `+w.sql()+
		` ORDER BY t.tx_date DESC, t.id DESC LIMIT `+w.arg(limit+1), w.args...))
	if err != nil {
		return nil, fmt.Errorf("preview rule: read certain changes: %w", err)
	}
	out := make([]PreviewChange, 0, len(rows))
	for i := range rows {
		ch, ok := previewRow(set, rule, &rows[i])
		if !ok {
			return nil, fmt.Errorf("preview rule: transaction %s: the database counts a change the rules do not make", rows[i].id)
		}
		out = append(out, ch)
	}
	return out, nil
}
