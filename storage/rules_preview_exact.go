package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/rules"
)

// previewByIDMax is how many uncertain rows the preview loads by id; past
// it, it reads them with one scan instead.
const previewByIDMax = 50_000

// previewCompiled is Store.PreviewRule's work on a rule already validated
// and compiled (its identity is ignored), compiling the user's active rules through
// cache (nil: no cache).
func previewCompiled(ctx context.Context, st *Store, sc Scope, rule *rules.Rule, allowed []uuid.UUID, after Keyset, limit int, cache *rules.Cache) (Preview, error) {
	set, rule, err := previewSet(ctx, st, sc, rule, allowed, cache)
	if err != nil {
		return Preview{}, err
	}
	out, err := previewOnce(ctx, st, sc, set, rule, after, limit, true)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == pgerrcode.InvalidRegularExpression {
		// PostgreSQL refused a regular expression built from the rules
		// (too complex for its engine): the rule engine decides every row.
		out, err = previewOnce(ctx, st, sc, set, rule, after, limit, false)
	}
	if err != nil {
		return Preview{}, fmt.Errorf("preview rule: %w", err)
	}
	return out, nil
}

// previewOnce runs previewIn in one read-only snapshot, on the read
// replica when ctx was routed there (Store.RouteRead).
func previewOnce(ctx context.Context, st *Store, sc Scope, set *rules.Set, rule *rules.Rule, after Keyset, limit int, inDatabase bool) (Preview, error) {
	var out Preview
	err := st.readTx(ctx, pgx.RepeatableRead, func(tx pgx.Tx) error {
		var err error
		out, err = previewIn(ctx, tx, sc, set, rule, after, limit, inDatabase)
		return err
	})
	return out, err
}

// previewIn is PreviewRule's work inside the read-only transaction tx.
// Without inDatabase, no SQL is built from the rules: the rule engine
// evaluates every transaction of the scope.
func previewIn(ctx context.Context, tx pgx.Tx, sc Scope, set *rules.Set, rule *rules.Rule, after Keyset, limit int, inDatabase bool) (Preview, error) {
	if !inDatabase {
		n, changes, err := previewScan(ctx, tx, sc, set, rule, rules.Prefilter{}, nil, after, limit)
		if err != nil {
			return Preview{}, err
		}
		return pageOf(n, changes, limit), nil
	}
	pf := rule.Prefilter()
	ex, exact := rule.Exact()
	if !exact {
		n, changes, err := previewScan(ctx, tx, sc, set, rule, pf, nil, after, limit)
		if err != nil {
			return Preview{}, err
		}
		return pageOf(n, changes, limit), nil
	}
	later := laterRules(set, rule)
	days, unsure, err := countCertain(ctx, tx, sc, rule, pf, &ex, later)
	if err != nil {
		return Preview{}, err
	}
	var (
		n       int
		changes []PreviewChange
	)
	if len(unsure) > previewByIDMax {
		n, changes, err = previewScan(ctx, tx, sc, set, rule, pf, func(w *where) { w.add(unsureSQL(w, &ex, later)) }, after, limit)
	} else {
		n, changes, err = previewByID(ctx, tx, sc, set, rule, unsure, after, limit)
	}
	if err != nil {
		return Preview{}, err
	}
	for _, d := range days {
		n += d.n
	}
	if pick := pageDays(days, after, limit); len(pick) > 0 {
		newest, err := newestCertain(ctx, tx, sc, set, rule, pf, &ex, later, pick, after, limit)
		if err != nil {
			return Preview{}, err
		}
		changes = newestFirst(append(changes, newest...), limit+1)
	}
	return pageOf(n, changes, limit), nil
}

// laterRule is a rule that runs after the previewed one and sets a field
// it sets: the only kind that can overrule it.
type laterRule struct {
	pf    rules.Prefilter
	ex    rules.Exact
	exact bool
	// the fields it sets that the previewed rule sets
	category, merchant, hide bool
}

// laterRules returns the rules of set that run after rule and set a field
// it sets.
func laterRules(set *rules.Set, rule *rules.Rule) []laterRule {
	var out []laterRule
	seen := false
	for _, r := range set.Rules() {
		if r == rule {
			seen = true
			continue
		}
		l := laterRule{
			category: r.SetsCategory() && rule.SetsCategory(),
			merchant: r.SetsMerchantName() && rule.SetsMerchantName(),
			hide:     r.Hides() && rule.Hides(),
		}
		if !seen || !(l.category || l.merchant || l.hide) {
			continue
		}
		l.pf = r.Prefilter()
		l.ex, l.exact = r.Exact()
		out = append(out, l)
	}
	return out
}

// nonASCII is the predicate "one of the fields holds a non-ASCII
// character" (FALSE for none).
func nonASCII(fields []string) string {
	if len(fields) == 0 {
		return "FALSE"
	}
	parts := make([]string, len(fields))
	for i, f := range fields {
		col := prefilterColumn(f)
		parts[i] = "octet_length(" + col + ") <> char_length(" + col + ")"
	}
	return "(" + strings.Join(parts, " OR ") + ")"
}

// unsureSQL is the predicate of the rows on which the database cannot
// decide the previewed rule's effect: the row has no date, a text the rule
// reads holds a non-ASCII character, or a later rule may match where its
// exact form cannot tell (it has none, or a text it reads is not ASCII).
// Its placeholders are numbered after w's; it is never NULL.
func unsureSQL(w *where, ex *rules.Exact, later []laterRule) string {
	parts := []string{"t.tx_date IS NULL", nonASCII(ex.ASCIIFields)}
	for i := range later {
		l := &later[i]
		switch {
		case !l.exact:
			parts = append(parts, w.expr(func(s *where) { addPrefilter(s, l.pf) }))
		default:
			// The fields the previewed rule reads are tested above.
			var own []string
			for _, f := range l.ex.ASCIIFields {
				if !slices.Contains(ex.ASCIIFields, f) {
					own = append(own, f)
				}
			}
			if len(own) > 0 {
				parts = append(parts, "("+nonASCII(own)+" AND "+w.expr(func(s *where) { addPrefilter(s, l.pf) })+")")
			}
		}
	}
	return "COALESCE(" + strings.Join(parts, " OR ") + ", TRUE)"
}

// addExactTexts adds the exact text terms, on values known to be ASCII:
// lower under the C collation lowercases the ASCII letters, which is then
// the value's folded form; a regular expression reads the value under the
// C collation, as its term requires.
func addExactTexts(w *where, ex *rules.Exact) {
	for _, t := range ex.Texts {
		lowered := "lower((" + prefilterColumn(t.Field) + `) COLLATE "C")`
		var e string
		switch {
		case t.Regex != "":
			e = "((" + prefilterColumn(t.Field) + `) COLLATE "C") ~ ` + w.arg(t.Regex)
		case t.OneOf != nil:
			e = lowered + " = ANY(" + w.arg(t.OneOf) + "::text[])"
		default:
			e = lowered + " LIKE " + w.arg(t.Like)
		}
		if t.Negated {
			e = "NOT (" + e + ")"
		}
		w.add(e)
	}
}

// addCertain adds, for rows that satisfy the rule's prefilter and are not
// unsure (unsureSQL), the predicate "the rule matches and changes the
// row": its exact text terms, and for one of the fields it sets, no later
// rule that sets it matches (on such rows a later rule's prefilter and
// exact form decide whether it matches) and the rule's value (with no rule
// id, the previewed rule having none) differs from the row's, a category
// the user chose being kept. It is what decide and changed conclude on
// such a row when its stored state is the active rules' decision.
func addCertain(w *where, rule *rules.Rule, ex *rules.Exact, later []laterRule) {
	addExactTexts(w, ex)
	overruled := func(field func(*laterRule) bool) string {
		var parts []string
		for i := range later {
			l := &later[i]
			if field(l) && l.exact {
				parts = append(parts, w.expr(func(s *where) { addPrefilter(s, l.pf); addExactTexts(s, &l.ex) }))
			}
		}
		if len(parts) == 0 {
			return ""
		}
		return " AND NOT (" + strings.Join(parts, " OR ") + ")"
	}
	noRule := w.arg(uuid.Nil) + "::uuid"
	var parts []string
	if rule.SetsCategory() {
		src := w.arg(domain.CategoryFromRule) + "::text"
		parts = append(parts, "(NOT category_kept(t.category_source, "+src+") AND (t.category_id IS DISTINCT FROM "+
			w.arg(rule.Category().ID)+"::uuid OR t.category_source IS DISTINCT FROM "+src+
			" OR t.category_rule_id IS DISTINCT FROM "+noRule+")"+overruled(func(l *laterRule) bool { return l.category })+")")
	}
	if rule.SetsMerchantName() {
		parts = append(parts, "((t.merchant_name IS DISTINCT FROM "+w.arg(rule.MerchantName())+
			"::text OR t.merchant_rule_id IS DISTINCT FROM "+noRule+")"+overruled(func(l *laterRule) bool { return l.merchant })+")")
	}
	if rule.Hides() {
		parts = append(parts, "((NOT t.hidden OR t.hidden_rule_id IS DISTINCT FROM "+noRule+")"+
			overruled(func(l *laterRule) bool { return l.hide })+")")
	}
	w.add("(" + strings.Join(parts, " OR ") + ")")
}

// dayCount is how many certain changes fall on one date.
type dayCount struct {
	day time.Time
	n   int
}

// countCertain scans the scope's transactions that satisfy the rule's
// prefilter once, and returns the certain changes counted per date, newest
// first, and the ids of the unsure rows. Grouping by hash keeps the scan
// parallel and the result small (one row per date and per unsure row); the
// planner, which cannot estimate a LIKE's selectivity, would otherwise
// sort every candidate (incremental sort included). It counts the unsure
// row's id as a group, so it expects as many groups as candidates and,
// with no text condition in the prefilter (a matches condition), would
// group them in one process: gathering partial groups is costed free,
// since few reach the leader.
func countCertain(ctx context.Context, tx pgx.Tx, sc Scope, rule *rules.Rule, pf rules.Prefilter, ex *rules.Exact, later []laterRule) ([]dayCount, []uuid.UUID, error) {
	q, args := countCertainSQL(sc, rule, pf, ex, later)
	if _, err := tx.Exec(ctx, `SET LOCAL enable_sort = off; SET LOCAL enable_incremental_sort = off; SET LOCAL parallel_tuple_cost = 0`); err != nil {
		return nil, nil, fmt.Errorf("count certain changes: %w", err)
	}
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("count certain changes: %w", err)
	}
	defer rows.Close()
	var (
		days []dayCount
		ids  []uuid.UUID
	)
	for rows.Next() {
		var (
			day pgtype.Date
			id  pgtype.UUID
			n   int
		)
		if err := rows.Scan(&day, &id, &n); err != nil {
			return nil, nil, fmt.Errorf("count certain changes: %w", err)
		}
		if id.Valid {
			ids = append(ids, id.Bytes)
			continue
		}
		if n > 0 {
			days = append(days, dayCount{day: day.Time, n: n})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("count certain changes: %w", err)
	}
	rows.Close()
	if _, err := tx.Exec(ctx, `RESET enable_sort; RESET enable_incremental_sort; RESET parallel_tuple_cost`); err != nil {
		return nil, nil, fmt.Errorf("count certain changes: %w", err)
	}
	slices.SortFunc(days, func(a, b dayCount) int { return b.day.Compare(a.day) })
	return days, ids, nil
}

// countCertainSQL is countCertain's statement and its arguments.
func countCertainSQL(sc Scope, rule *rules.Rule, pf rules.Prefilter, ex *rules.Exact, later []laterRule) (string, []any) {
	var w where
	w.scope("t", sc)
	addPrefilter(&w, pf)
	unsure := unsureSQL(&w, ex, later)
	var c where
	c.args = w.args
	addCertain(&c, rule, ex, later)
	w.args = c.args
	// An unsure row is a group of its own, whose count the caller drops:
	// the filter need not test unsure again.
	return `SELECT t.tx_date, CASE WHEN ` + unsure + ` THEN t.id END, count(*) FILTER (WHERE ` + c.sql() + `)
		FROM transactions t WHERE ` + w.sql() + ` GROUP BY 1, 2`, w.args
}

// pageDays returns the dates, newest first, that hold the first limit+1
// certain changes after the position after: dates up to after's, until
// those before after's date hold limit+1 (the changes on after's date may
// all come before it).
func pageDays(days []dayCount, after Keyset, limit int) []time.Time {
	var (
		out []time.Time
		n   int
	)
	for _, d := range days {
		if !after.IsZero() && d.day.After(after.Date) {
			continue
		}
		out = append(out, d.day)
		if after.IsZero() || d.day.Before(after.Date) {
			n += d.n
		}
		if n > limit {
			break
		}
	}
	return out
}

// previewByID loads the rows with the given ids and evaluates them as
// previewScan does.
func previewByID(ctx context.Context, tx pgx.Tx, sc Scope, set *rules.Set, rule *rules.Rule, ids []uuid.UUID, after Keyset, limit int) (int, []PreviewChange, error) {
	var (
		count   int
		changes []PreviewChange
	)
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), RuleBatchSize)]
		ids = ids[len(chunk):]
		var w where
		w.scope("t", sc)
		w.add("t.id = ANY(?)", chunk)
		rows, err := scanRuleRows(tx.Query(ctx, `SELECT `+ruleRowColumns+` FROM transactions t WHERE `+w.sql(), w.args...))
		if err != nil {
			return 0, nil, fmt.Errorf("read uncertain changes: %w", err)
		}
		for i := range rows {
			if err := ctx.Err(); err != nil { // every row: see previewScan
				return 0, nil, fmt.Errorf("evaluate uncertain changes: %w", err)
			}
			ch, ok := previewRow(set, rule, &rows[i])
			if !ok {
				continue
			}
			count++
			if after.IsZero() || listedAfter(ch.Key, after) {
				changes = append(changes, ch)
			}
		}
		changes = newestFirst(changes, limit+1)
	}
	return count, changes, nil
}

// newestCertain reads, among the given dates, the first limit+1 certain
// changes after the position after, newest first, and evaluates each with
// the rule engine: every one must change.
func newestCertain(ctx context.Context, tx pgx.Tx, sc Scope, set *rules.Set, rule *rules.Rule, pf rules.Prefilter, ex *rules.Exact, later []laterRule, days []time.Time, after Keyset, limit int) ([]PreviewChange, error) {
	var w where
	w.scope("t", sc)
	w.add("t.tx_date = ANY(?::date[])", days)
	addPrefilter(&w, pf)
	w.add("NOT " + unsureSQL(&w, ex, later))
	addCertain(&w, rule, ex, later)
	w.keyset("t.tx_date", "t.id", after)
	rows, err := scanRuleRows(tx.Query(ctx, `SELECT `+ruleRowColumns+` FROM transactions t WHERE `+w.sql()+
		` ORDER BY t.tx_date DESC, t.id DESC LIMIT `+w.arg(limit+1), w.args...))
	if err != nil {
		return nil, fmt.Errorf("read certain changes: %w", err)
	}
	out := make([]PreviewChange, 0, len(rows))
	for i := range rows {
		if err := ctx.Err(); err != nil { // every row: see previewScan
			return nil, fmt.Errorf("evaluate certain changes: %w", err)
		}
		ch, ok := previewRow(set, rule, &rows[i])
		if !ok {
			return nil, fmt.Errorf("transaction %s: the database counts a change the rule engine does not make", rows[i].id)
		}
		out = append(out, ch)
	}
	return out, nil
}
