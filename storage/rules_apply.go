package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/rules"
)

// RuleBatchSize is how many transactions the rule job reads, decides and
// writes per database transaction.
const RuleBatchSize = 5000

// ApplyStats counts what one application of rules saw and changed.
type ApplyStats struct {
	Seen    int
	Changed int
}

// ApplyRulesToUser re-evaluates the user's active rules on every stored
// transaction of the user and writes the decisions that changed. It walks
// the transactions by keyset in batches of batchSize (RuleBatchSize when
// not positive), each batch in its own database transaction with the rules
// as they stand at that moment, so memory stays bounded by one batch.
func (s *Store) ApplyRulesToUser(ctx context.Context, userID uuid.UUID, batchSize int) (ApplyStats, error) {
	st, _, err := s.ApplyRulesFrom(ctx, userID, batchSize, nil, time.Time{}, nil)
	return st, err
}

// ApplyRulesFrom is ApplyRulesToUser from after on (nil: the start). Past
// until (zero: never) it stops after a committed batch and returns the
// keyset position (tx_date DESC, id DESC) to continue after; nil when the
// pass is done. Each batch compiles the rules it does not find in cache
// (nil: every rule, every batch), so a rule is compiled once per version
// by a cache that outlives the pass. Caveat: a batch committed before an
// error stays written.
func (s *Store) ApplyRulesFrom(ctx context.Context, userID uuid.UUID, batchSize int, after *Keyset, until time.Time, cache *rules.Cache) (ApplyStats, *Keyset, error) {
	if batchSize <= 0 {
		batchSize = RuleBatchSize
	}
	var st ApplyStats
	for {
		var rows []ruleRow
		err := s.inTx(ctx, func(tx pgx.Tx) error {
			set, _, err := prepareRules(ctx, tx, userID, cache)
			if err != nil {
				return err
			}
			if rows, err = loadBatch(ctx, tx, userID, after, batchSize); err != nil {
				return err
			}
			n, err := decideAndWrite(ctx, tx, set, rows)
			st.Changed += n
			return err
		})
		if err != nil {
			return st, nil, err
		}
		st.Seen += len(rows)
		if len(rows) < batchSize {
			return st, nil, nil
		}
		last := rows[len(rows)-1]
		after = &Keyset{Date: last.day, ID: last.id}
		if !until.IsZero() && !time.Now().Before(until) {
			return st, after, nil
		}
	}
}

// applyRulesTx applies the user's active rules to the given transactions
// inside the caller's database transaction (the sync calls it for the
// transactions of the page it just stored), compiling them through cache
// (nil: no cache).
func applyRulesTx(ctx context.Context, tx pgx.Tx, userID uuid.UUID, transactionIDs []uuid.UUID, cache *rules.Cache) error {
	if len(transactionIDs) == 0 {
		return nil
	}
	set, anyRules, err := prepareRules(ctx, tx, userID, cache)
	if err != nil {
		return err
	}
	if !anyRules {
		// A user who never had a rule has no outcome to apply or undo: the
		// rows are not read (a first sync of a million rows would read them
		// all back). One whose rules are all archived may have outcomes to
		// undo, and goes on.
		return nil
	}
	rows, err := scanRuleRows(tx.Query(ctx, `SELECT `+ruleRowColumns+` FROM transactions t
		WHERE t.user_id = $1 AND t.id = ANY($2)`, userID, transactionIDs))
	if err != nil {
		return fmt.Errorf("load transactions for rules: %w", err)
	}
	_, err = decideAndWrite(ctx, tx, set, rows)
	return err
}

// prepareRules serialises rule application per user for the rest of the
// transaction (so that concurrent runs cannot write stale decisions) and
// compiles the user's active rules, through cache (nil: no cache); it
// also reports whether the user has any rule, archived ones included. The
// lock and the reads go in one round trip, each statement reading after
// the lock is held.
func prepareRules(ctx context.Context, tx pgx.Tx, userID uuid.UUID, cache *rules.Cache) (*rules.Set, bool, error) {
	var stored []Rule
	var anyRules bool
	var batch pgx.Batch
	batch.Queue(`SELECT pg_advisory_xact_lock(hashtextextended('finsync.rules:' || $1::text, 0))`, userID)
	batch.Queue(activeRulesSQL, userID).Query(func(rows pgx.Rows) error {
		var err error
		stored, err = scanActiveRules(rows)
		return err
	})
	batch.Queue(`SELECT EXISTS (SELECT 1 FROM rules WHERE user_id = $1)`, userID).QueryRow(func(row pgx.Row) error {
		return row.Scan(&anyRules)
	})
	if err := tx.SendBatch(ctx, &batch).Close(); err != nil {
		return nil, false, fmt.Errorf("lock and load rules of user %s: %w", userID, err)
	}
	compiled, err := compileStored(ctx, stored, cache)
	if err != nil {
		return nil, false, err
	}
	return rules.NewSet(compiled...), anyRules, nil
}

// compileStored compiles stored rules through cache (nil: no cache), each
// version once.
func compileStored(ctx context.Context, stored []Rule, cache *rules.Cache) ([]*rules.Rule, error) {
	compiled := make([]*rules.Rule, 0, len(stored)+1)
	for i := range stored {
		r := &stored[i]
		c, err := cache.Compile(ctx, r.DefinitionJSON(), rules.Meta{ID: r.ID, CreatedAt: r.CreatedAt, AllowedAccountIDs: r.AllowedAccountIDs}, r.UpdatedAt)
		if err != nil {
			return nil, err
		}
		compiled = append(compiled, c)
	}
	return compiled, nil
}

// ruleRow is what rule application reads of a transaction.
type ruleRow struct {
	id, account        uuid.UUID
	day                time.Time
	summary            string
	originalDesc       pgtype.Text
	amount             domain.Money
	categoryID         pgtype.UUID
	categorySource     pgtype.Text
	providerCategoryID pgtype.UUID
	categoryRuleID     pgtype.UUID
	merchantName       pgtype.Text
	providerMerchant   pgtype.Text
	merchantRuleID     pgtype.UUID
	hidden             bool
	hiddenRuleID       pgtype.UUID
}

const ruleRowColumns = `t.id, t.account_id, t.tx_date, t.summary, t.original_description, t.amount,
	t.category_id, t.category_source, t.provider_category_id, t.category_rule_id,
	t.merchant_name, t.provider_merchant_name, t.merchant_rule_id, t.hidden, t.hidden_rule_id`

// loadBatch reads the next batch of the user's transactions after the
// keyset position.
func loadBatch(ctx context.Context, tx pgx.Tx, userID uuid.UUID, after *Keyset, limit int) ([]ruleRow, error) {
	q := `SELECT ` + ruleRowColumns + ` FROM transactions t WHERE t.user_id = $1`
	args := []any{userID, limit}
	if after != nil {
		q += ` AND (t.tx_date, t.id) < ($3, $4)`
		args = append(args, after.Date, after.ID)
	}
	q += ` ORDER BY t.tx_date DESC, t.id DESC LIMIT $2`
	rows, err := scanRuleRows(tx.Query(ctx, q, args...))
	if err != nil {
		return nil, fmt.Errorf("load transactions for rules: %w", err)
	}
	return rows, nil
}

func scanRuleRows(rows pgx.Rows, err error) ([]ruleRow, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ruleRow
	for rows.Next() {
		out = append(out, ruleRow{})
		if err := scanRuleRow(rows, &out[len(out)-1]); err != nil {
			return nil, err
		}
	}
	return out, rows.Err()
}

// scanRuleRow reads one row of ruleRowColumns into r.
func scanRuleRow(rows pgx.Rows, r *ruleRow) error {
	var id, account pgtype.UUID
	var day pgtype.Date
	if err := rows.Scan(&id, &account, &day, &r.summary, &r.originalDesc, &r.amount,
		&r.categoryID, &r.categorySource, &r.providerCategoryID, &r.categoryRuleID,
		&r.merchantName, &r.providerMerchant, &r.merchantRuleID, &r.hidden, &r.hiddenRuleID); err != nil {
		return err
	}
	r.id, r.account, r.day = id.Bytes, account.Bytes, day.Time
	return nil
}

// decision is the rule-dependent state of one transaction.
type decision struct {
	categoryID         pgtype.UUID
	categorySource     pgtype.Text
	categoryRuleID     pgtype.UUID
	providerCategoryID pgtype.UUID
	merchantName       pgtype.Text
	providerMerchant   pgtype.Text
	merchantRuleID     pgtype.UUID
	hidden             bool
	hiddenRuleID       pgtype.UUID
}

// providerCategory is the category the provider gave: provider_category_id,
// or, for rows whose category no rule or user set, the category itself.
func (r *ruleRow) providerCategory() pgtype.UUID {
	if r.providerCategoryID.Valid || !isProviderSource(r.categorySource) {
		return r.providerCategoryID
	}
	return r.categoryID
}

func isProviderSource(s pgtype.Text) bool {
	return !domain.CategoryKept(s.String, domain.CategoryFromProvider)
}

// providerMerchantName is the merchant name the provider gave:
// provider_merchant_name, or, for rows whose name no rule set, the name
// itself (rows stored before the provider's name was kept apart).
func (r *ruleRow) providerMerchantName() pgtype.Text {
	if r.providerMerchant.Valid || r.merchantRuleID.Valid {
		return r.providerMerchant
	}
	return r.merchantName
}

// input is what the rules see of the row: the provider's values.
func (r *ruleRow) input() rules.Input {
	in := rules.Input{
		AccountID:           r.account,
		Summary:             r.summary,
		OriginalDescription: r.originalDesc.String,
		MerchantName:        r.providerMerchantName().String,
		Amount:              r.amount.Decimal(),
	}
	if !r.day.IsZero() {
		in.Day = r.day.Day()
	}
	return in
}

// decide returns the row's new state under the rules' result. A category
// the user chose is kept; without a rule's decision each field falls back
// to the provider's value (hidden falls back to false only when a rule had
// hidden the row).
func (r *ruleRow) decide(res *rules.Result) decision {
	d := decision{
		categoryID: r.categoryID, categorySource: r.categorySource, categoryRuleID: r.categoryRuleID,
		providerCategoryID: r.providerCategory(), providerMerchant: r.providerMerchantName(),
		hidden: r.hidden,
	}
	switch {
	case domain.CategoryKept(r.categorySource.String, domain.CategoryFromRule): // the user chose
	case res.Category.Decided:
		d.categoryID = pgtype.UUID{Bytes: res.Category.Value.ID, Valid: true}
		d.categorySource = pgtype.Text{String: domain.CategoryFromRule, Valid: true}
		d.categoryRuleID = pgtype.UUID{Bytes: res.Category.RuleID, Valid: true}
	default:
		d.categoryID, d.categoryRuleID = d.providerCategoryID, pgtype.UUID{}
		if !isProviderSource(r.categorySource) { // a rule had set it
			d.categorySource = pgtype.Text{String: domain.CategoryFromProvider, Valid: d.categoryID.Valid}
		}
	}
	if res.MerchantName.Decided {
		d.merchantName = pgtype.Text{String: res.MerchantName.Value, Valid: true}
		d.merchantRuleID = pgtype.UUID{Bytes: res.MerchantName.RuleID, Valid: true}
	} else {
		d.merchantName = d.providerMerchant
	}
	if res.Hidden.Decided {
		d.hidden = res.Hidden.Value
		d.hiddenRuleID = pgtype.UUID{Bytes: res.Hidden.RuleID, Valid: true}
	} else if r.hiddenRuleID.Valid {
		d.hidden = false
	}
	return d
}

// changed reports whether the decision differs from the row's stored
// state in anything a reader sees or a later run depends on.
func (r *ruleRow) changed(d *decision) bool {
	return d.categoryID != r.categoryID || d.categorySource != r.categorySource ||
		d.categoryRuleID != r.categoryRuleID || d.merchantName != r.merchantName ||
		d.merchantRuleID != r.merchantRuleID || d.hidden != r.hidden || d.hiddenRuleID != r.hiddenRuleID
}

// changes holds the changed rows as column arrays for one UPDATE.
type changes struct {
	ids                []uuid.UUID
	categoryIDs        []pgtype.UUID
	categorySources    []pgtype.Text
	categoryRuleIDs    []pgtype.UUID
	providerCategories []pgtype.UUID
	merchantNames      []pgtype.Text
	providerMerchants  []pgtype.Text
	merchantRuleIDs    []pgtype.UUID
	hidden             []bool
	hiddenRuleIDs      []pgtype.UUID
}

func (c *changes) add(id uuid.UUID, d *decision) {
	c.ids = append(c.ids, id)
	c.categoryIDs = append(c.categoryIDs, d.categoryID)
	c.categorySources = append(c.categorySources, d.categorySource)
	c.categoryRuleIDs = append(c.categoryRuleIDs, d.categoryRuleID)
	c.providerCategories = append(c.providerCategories, d.providerCategoryID)
	c.merchantNames = append(c.merchantNames, d.merchantName)
	c.providerMerchants = append(c.providerMerchants, d.providerMerchant)
	c.merchantRuleIDs = append(c.merchantRuleIDs, d.merchantRuleID)
	c.hidden = append(c.hidden, d.hidden)
	c.hiddenRuleIDs = append(c.hiddenRuleIDs, d.hiddenRuleID)
}

// decideAndWrite evaluates the rules on each row and writes the rows whose
// decision changed; it returns how many it wrote.
func decideAndWrite(ctx context.Context, tx pgx.Tx, set *rules.Set, rows []ruleRow) (int, error) {
	var c changes
	for i := range rows {
		// Every row: one row can cost tens of milliseconds (long texts
		// against the heaviest patterns), and ctx.Err is cheap.
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("apply rules: %w", err)
		}
		r := &rows[i]
		p := rules.Prepare(r.input())
		res := set.Apply(&p)
		d := r.decide(&res)
		if r.changed(&d) {
			c.add(r.id, &d)
		}
	}
	if len(c.ids) == 0 {
		return 0, nil
	}
	// A category the user chose meanwhile is kept (the CASEs: category_kept
	// of migration 00016 holds the precedence), whatever this run decided
	// from the row as it read it.
	tag, err := tx.Exec(ctx, `
		UPDATE transactions t SET
			category_id = CASE WHEN category_kept(t.category_source, 'rule') THEN t.category_id ELSE u.category_id END,
			category_source = CASE WHEN category_kept(t.category_source, 'rule') THEN t.category_source ELSE u.category_source END,
			category_rule_id = CASE WHEN category_kept(t.category_source, 'rule') THEN t.category_rule_id ELSE u.category_rule_id END,
			provider_category_id = CASE WHEN category_kept(t.category_source, 'rule') THEN t.provider_category_id ELSE u.provider_category_id END,
			merchant_name = u.merchant_name,
			provider_merchant_name = u.provider_merchant_name,
			merchant_rule_id = u.merchant_rule_id,
			hidden = u.hidden,
			hidden_rule_id = u.hidden_rule_id,
			updated_at = now()
		FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::uuid[], $5::uuid[], $6::text[], $7::text[], $8::uuid[], $9::bool[], $10::uuid[])
			AS u(id, category_id, category_source, category_rule_id, provider_category_id, merchant_name,
				provider_merchant_name, merchant_rule_id, hidden, hidden_rule_id)
		WHERE t.id = u.id`,
		c.ids, c.categoryIDs, c.categorySources, c.categoryRuleIDs, c.providerCategories,
		c.merchantNames, c.providerMerchants, c.merchantRuleIDs, c.hidden, c.hiddenRuleIDs)
	if err != nil {
		return 0, fmt.Errorf("write rule decisions: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
