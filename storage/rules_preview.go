package storage

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/rules"
)

// merchantForRules is the merchant name rules see: the provider's
// (provider_merchant_name, or merchant_name on rows whose name no rule set
// and that were stored before the provider's name was kept apart).
const merchantForRules = `COALESCE(CASE WHEN t.provider_merchant_name IS NOT NULL OR t.merchant_rule_id IS NOT NULL
	THEN t.provider_merchant_name ELSE t.merchant_name END, '')`

// prefilterColumn is the SQL value a text term tests.
func prefilterColumn(field string) string {
	switch field {
	case rules.TextOriginalDescription:
		return "COALESCE(t.original_description, '')"
	case rules.TextMerchantName:
		return merchantForRules
	default:
		return "t.summary"
	}
}

// addPrefilter adds pf's terms to w.
func addPrefilter(w *where, pf rules.Prefilter) {
	if pf.Accounts != nil {
		w.add("t.account_id = ANY(?)", pf.Accounts)
	}
	if len(pf.NotAccounts) > 0 {
		w.add("NOT (t.account_id = ANY(?))", pf.NotAccounts)
	}
	for _, a := range pf.Amounts {
		if a.Cmp == rules.CmpBetween {
			w.add("t.amount BETWEEN ?::numeric AND ?::numeric", a.Lo.String(), a.Hi.String())
		} else {
			w.add("t.amount "+a.Cmp+" ?::numeric", a.Lo.String())
		}
	}
	for _, d := range pf.Days {
		day := "extract(day FROM t.tx_date)::int"
		if d.Cmp == rules.CmpBetween {
			w.add(day+" BETWEEN ? AND ?", d.Lo, d.Hi)
		} else {
			w.add(day+" "+d.Cmp+" ?", d.Lo)
		}
	}
	for _, tt := range pf.Texts {
		addTextTerm(w, tt)
	}
}

// addTextTerm adds a text term: first the case-sensitive literal, then
// LIKE on the value with its ASCII letters lowercased (lower under the C
// collation touches only those, and is several times cheaper than ILIKE
// under a UTF-8 locale), or the orbit regular expression on values that
// hold a non-ASCII character (octet_length differs from char_length).
func addTextTerm(w *where, tt rules.TextTerm) {
	col := prefilterColumn(tt.Field)
	if tt.Literal != "" {
		w.add(col+" LIKE ?", "%"+likeEscape(tt.Literal)+"%")
	}
	lowered := "lower((" + col + `) COLLATE "C")`
	nonASCII := "octet_length(" + col + ") <> char_length(" + col + ")"
	switch {
	case tt.Regex == "":
		w.add(lowered+" LIKE ?", tt.Like)
	case tt.Like != "":
		w.add("("+lowered+" LIKE ? OR ("+nonASCII+" AND "+col+" ~ ?))", tt.Like, tt.Regex)
	case tt.NonASCIIOnly:
		w.add("("+nonASCII+" AND "+col+" ~ ?)", tt.Regex)
	default:
		w.add(col+" ~ ?", tt.Regex)
	}
}

// likeEscape quotes LIKE's metacharacters (backslash is LIKE's escape).
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// ruleCandidates reads, in no particular order (so that the database can
// scan the table instead of sorting or walking an index over the whole
// history), the columns of every transaction within the scope that can
// satisfy the prefilter, narrowed further by the predicates more adds
// (nil: none), and calls each for every row. The comparisons in pf are only
// the fixed set of rules.Cmp* operators, pasted as SQL; every value is a
// parameter. Caveat: it reads the whole candidate set in one statement on
// one connection; its cost follows the user's history when the prefilter
// narrows nothing.
func ruleCandidates(ctx context.Context, q querier, sc Scope, pf rules.Prefilter, more func(*where), columns string, each func(pgx.Rows) error) error {
	var w where
	w.scope("t", sc)
	addPrefilter(&w, pf)
	if more != nil {
		more(&w)
	}
	rows, err := q.Query(ctx, `SELECT `+columns+` FROM transactions t WHERE `+w.sql(), w.args...)
	if err != nil {
		return fmt.Errorf("read rule candidates: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(rows); err != nil {
			return fmt.Errorf("read rule candidates: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read rule candidates: %w", err)
	}
	return nil
}

// ListTransactionsByID loads the scope's transactions with the given ids, in
// no particular order; ids outside the scope are left out.
func (s *Store) ListTransactionsByID(ctx context.Context, sc Scope, ids []uuid.UUID) ([]domain.Transaction, error) {
	var w where
	w.scope("t", sc)
	w.add("t.id = ANY(?)", ids)
	rows, err := s.reader(ctx).Query(ctx, `SELECT `+transactionColumns+` FROM transactions t WHERE `+w.sql(), w.args...)
	if err != nil {
		return nil, fmt.Errorf("load transactions: %w", err)
	}
	defer rows.Close()
	out := make([]domain.Transaction, 0, len(ids))
	var r txRow
	for rows.Next() {
		out = append(out, domain.Transaction{})
		if err := r.scan(rows, &out[len(out)-1]); err != nil {
			return nil, fmt.Errorf("load transactions: %w", err)
		}
	}
	return out, rows.Err()
}
