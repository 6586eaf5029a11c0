package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/finsync/finsync/domain"
)

// SyncedAccount is an account as a sync stores it.
type SyncedAccount struct {
	ProviderAccountID string
	Name              string
	Mask              string
	Type              string
	Subtype           string
	Currency          string
	CurrentBalance    *domain.Money
	AvailableBalance  *domain.Money
	CreditLimit       *domain.Money
	Liability         *domain.Liability
}

// UpsertAccounts stores a connection's accounts and records today's balance
// of each; it returns account ids by provider account id.
func UpsertAccounts(ctx context.Context, tx pgx.Tx, conn domain.BankConnection, accounts []SyncedAccount, today domain.Date) (map[string]uuid.UUID, error) {
	ids := make(map[string]uuid.UUID, len(accounts))
	for _, a := range accounts {
		var liability []byte
		if a.Liability != nil {
			var err error
			if liability, err = json.Marshal(a.Liability); err != nil {
				return nil, fmt.Errorf("encode liability: %w", err)
			}
		}
		var id uuid.UUID
		err := tx.QueryRow(ctx, `
			INSERT INTO accounts (user_id, bank_connection_id, provider_account_id, provider, manual, institution_name,
				name, mask, type, subtype, currency, current_balance, available_balance, credit_limit, balance_as_of, liability)
			VALUES ($1, $2, $3, $4, false, $5, $6, $7, $8, $9, $10, $11, $12, $13, now(), $14)
			ON CONFLICT (bank_connection_id, provider_account_id) DO UPDATE SET
				institution_name = excluded.institution_name, name = excluded.name, mask = excluded.mask,
				type = excluded.type, subtype = excluded.subtype, currency = excluded.currency,
				current_balance = excluded.current_balance, available_balance = excluded.available_balance,
				credit_limit = excluded.credit_limit, balance_as_of = now(), liability = excluded.liability, updated_at = now()
			RETURNING id`,
			conn.UserID, conn.ID, a.ProviderAccountID, conn.Provider, nullIfEmpty(conn.InstitutionName),
			a.Name, nullIfEmpty(a.Mask), nullIfEmpty(a.Type), nullIfEmpty(a.Subtype), a.Currency,
			a.CurrentBalance, a.AvailableBalance, a.CreditLimit, liability).Scan(&id)
		if err != nil {
			return nil, fmt.Errorf("upsert account %s: %w", a.ProviderAccountID, err)
		}
		ids[a.ProviderAccountID] = id
		if a.CurrentBalance != nil {
			if err := RecordBalance(ctx, tx, conn.UserID, id, today, *a.CurrentBalance, a.Currency); err != nil {
				return nil, err
			}
		}
	}
	return ids, nil
}

// ProviderCategory is a provider's category as a sync copies it for a user.
type ProviderCategory struct {
	ProviderID  string
	Name        string
	Group       string
	Description string
}

// UpsertProviderCategories copies provider categories for the user the
// first time they are seen (a user's edit is never overwritten: rows the
// user edited keep their name, group and description) and returns category
// ids by provider id. Business-bank categories are marked read-only.
func UpsertProviderCategories(ctx context.Context, tx pgx.Tx, userID uuid.UUID, provider string, cats []ProviderCategory) (map[string]uuid.UUID, error) {
	ids := make(map[string]uuid.UUID, len(cats))
	if len(cats) == 0 {
		return ids, nil
	}
	readOnly := provider == domain.ProviderMercury
	groups := map[string]struct{}{}
	pids, names, grps, descs := make([]string, 0, len(cats)), make([]string, 0, len(cats)), make([]string, 0, len(cats)), make([]string, 0, len(cats))
	for _, c := range cats {
		pids, names, grps, descs = append(pids, c.ProviderID), append(names, c.Name), append(grps, c.Group), append(descs, c.Description)
		groups[c.Group] = struct{}{}
	}
	groupNames := make([]string, 0, len(groups))
	for g := range groups {
		if g != "" {
			groupNames = append(groupNames, g)
		}
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO category_groups (user_id, name, provider) SELECT $1, g, $2 FROM unnest($3::text[]) g
		ON CONFLICT (user_id, provider, name) DO NOTHING`, userID, provider, groupNames); err != nil {
		return nil, fmt.Errorf("upsert category groups: %w", err)
	}
	rows, err := tx.Query(ctx, `
		INSERT INTO categories (user_id, provider, provider_id, name, group_id, description, read_only)
		SELECT $1, $2, c.pid, c.name, g.id, c.descr, $3
		FROM unnest($4::text[], $5::text[], $6::text[], $7::text[]) AS c(pid, name, grp, descr)
		LEFT JOIN category_groups g ON g.user_id = $1 AND g.provider = $2 AND g.name = c.grp
		ON CONFLICT (user_id, provider, provider_id) DO UPDATE SET
			name = CASE WHEN categories.user_edited THEN categories.name ELSE excluded.name END,
			group_id = CASE WHEN categories.user_edited THEN categories.group_id ELSE excluded.group_id END,
			description = CASE WHEN categories.user_edited THEN categories.description ELSE excluded.description END
		RETURNING provider_id, id`, userID, provider, readOnly, pids, names, grps, descs)
	if err != nil {
		return nil, fmt.Errorf("upsert categories: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var pid string
		var id uuid.UUID
		if err := rows.Scan(&pid, &id); err != nil {
			return nil, fmt.Errorf("upsert categories: %w", err)
		}
		ids[pid] = id
	}
	return ids, rows.Err()
}

// UpsertTransactions stores new and changed transactions of a connection in
// one statement and returns the ids of rows inserted or actually changed
// (unchanged rows are skipped). Each transaction's CategoryID is the
// provider's category; a category chosen by the user or a rule is kept, and
// a user's choice on a pending transaction carries over to the posted one
// that replaces it.
func UpsertTransactions(ctx context.Context, tx pgx.Tx, conn domain.BankConnection, txs []domain.Transaction) ([]uuid.UUID, error) {
	if len(txs) == 0 {
		return nil, nil
	}
	n := len(txs)
	ids, err := newRowIDs(n)
	if err != nil {
		return nil, err
	}
	var (
		accounts                                           = make([][16]byte, n)
		pids, statuses, summaries, amounts, currencies     = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		authDates, postDates                               = make([]*time.Time, n), make([]*time.Time, n)
		merchants, feeTypes, subs, channels, checks, descs = make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
		types, pendingIDs, fees, nets                      = make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
		cats                                               = make([]pgtype.UUID, n)
		created, postedAt                                  = make([]time.Time, n), make([]*time.Time, n)
	)
	for i := range txs {
		t := &txs[i]
		accounts[i], pids[i], statuses[i], summaries[i] = t.AccountID, t.ProviderID, t.Status, t.Summary
		amounts[i], currencies[i] = t.Amount.String(), t.Currency
		authDates[i], postDates[i] = dateTime(t.AuthorizedDate), dateTime(t.PostedDate)
		merchants[i], feeTypes[i], subs[i], channels[i], checks[i], descs[i] = t.MerchantName, t.FeeType, t.SubAccount, t.PaymentChannel, t.CheckNumber, t.OriginalDescription
		types[i], pendingIDs[i], fees[i], nets[i] = t.Type, t.PendingProviderID, moneyText(t.Fees), moneyText(t.NetAmount)
		if t.CategoryID != nil {
			cats[i] = pgtype.UUID{Bytes: *t.CategoryID, Valid: true}
		}
		created[i], postedAt[i] = t.CreatedAt, t.PostedAt
	}
	rows, err := tx.Query(ctx, upsertTransactionsSQL,
		conn.UserID, conn.ID, conn.Provider,
		accounts, pids, statuses, summaries, amounts, currencies, authDates, postDates, merchants, cats,
		fees, feeTypes, nets, subs, channels, checks, descs, types, pendingIDs, created, postedAt, ids)
	if err != nil {
		return nil, fmt.Errorf("upsert transactions: %w", err)
	}
	var changed, carryIDs []uuid.UUID
	var carryPending []string
	var id uuid.UUID
	var pending *string
	_, err = pgx.ForEachRow(rows, []any{&id, &pending}, func() error {
		changed = append(changed, id)
		if pending != nil {
			carryIDs, carryPending = append(carryIDs, id), append(carryPending, *pending)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("upsert transactions: %w", err)
	}
	if err := carryUserCategories(ctx, tx, conn.ID, carryIDs, carryPending); err != nil {
		return nil, err
	}
	return changed, nil
}

// newRowIDs returns n time-ordered (version 7) ids for new rows: the
// primary key index then grows at its right edge instead of at random
// places, which makes bulk inserts markedly cheaper. A row that already
// exists keeps its id.
func newRowIDs(n int) ([][16]byte, error) {
	ids := make([][16]byte, n)
	for i := range ids {
		id, err := uuid.NewV7()
		if err != nil {
			return nil, fmt.Errorf("new transaction id: %w", err)
		}
		ids[i] = id
	}
	return ids, nil
}

const upsertTransactionsSQL = `
INSERT INTO transactions AS t (id, user_id, bank_connection_id, provider, source, account_id, provider_id, status, summary,
	amount, currency, authorized_date, posted_date, merchant_name, provider_merchant_name, category_id,
	provider_category_id, category_source, fees, fee_type, net_amount, sub_account, payment_channel, check_number,
	original_description, type, pending_provider_id, created_at, posted_at)
SELECT r.id, $1, $2, $3, $3, r.account_id, r.pid, r.status, r.summary, r.amount, r.currency, r.auth, r.posted,
	r.merchant, r.merchant, r.cat, r.cat, CASE WHEN r.cat IS NULL THEN NULL ELSE 'provider' END,
	r.fees, r.fee_type, r.net, r.sub, r.channel, r.check_no, r.descr, r.type, r.pending_pid,
	r.created, r.posted_at
FROM (SELECT u.id, u.account_id, u.pid, u.status, u.summary, u.amount::numeric(19, 4) AS amount, u.currency, u.auth,
		u.posted, u.merchant, u.cat, u.fees::numeric(19, 4) AS fees, u.fee_type, u.net::numeric(19, 4) AS net, u.sub,
		u.channel, u.check_no, u.descr, u.type, u.pending_pid, u.created, u.posted_at
	FROM unnest($4::uuid[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::date[], $11::date[],
		$12::text[], $13::uuid[], $14::text[], $15::text[], $16::text[], $17::text[], $18::text[], $19::text[],
		$20::text[], $21::text[], $22::text[], $23::timestamptz[], $24::timestamptz[], $25::uuid[])
		AS u(account_id, pid, status, summary, amount, currency, auth, posted, merchant, cat, fees, fee_type, net,
		sub, channel, check_no, descr, type, pending_pid, created, posted_at, id)) r
-- Unchanged rows are left out before the insert: read by index, they
-- take neither a row lock nor WAL, as ON CONFLICT DO UPDATE ... WHERE
-- would. The scalar subquery keeps the look-up on the unique index
-- whatever the statistics say; the WHERE below still guards concurrent
-- writers.
WHERE (SELECT (x.account_id, x.status, x.summary, x.amount, x.currency, x.authorized_date, x.posted_date,
		x.provider_merchant_name, x.provider_category_id, x.fees, x.fee_type, x.net_amount, x.sub_account,
		x.payment_channel, x.check_number, x.original_description, x.type, x.pending_provider_id, x.posted_at)
		IS NOT DISTINCT FROM
		(r.account_id, r.status, r.summary, r.amount, r.currency, r.auth, r.posted, r.merchant, r.cat, r.fees,
		r.fee_type, r.net, r.sub, r.channel, r.check_no, r.descr, r.type, r.pending_pid, r.posted_at)
	FROM transactions x WHERE x.bank_connection_id = $2 AND x.provider_id = r.pid) IS NOT TRUE
ON CONFLICT (bank_connection_id, provider_id) DO UPDATE SET
	account_id = excluded.account_id, status = excluded.status, summary = excluded.summary,
	amount = excluded.amount, currency = excluded.currency, authorized_date = excluded.authorized_date,
	posted_date = excluded.posted_date,
	provider_merchant_name = excluded.provider_merchant_name,
	merchant_name = CASE WHEN t.merchant_rule_id IS NULL THEN excluded.merchant_name ELSE t.merchant_name END,
	provider_category_id = excluded.provider_category_id,
	category_id = CASE WHEN t.category_source IN ('user', 'rule') THEN t.category_id ELSE excluded.category_id END,
	category_source = CASE WHEN t.category_source IN ('user', 'rule') THEN t.category_source ELSE excluded.category_source END,
	fees = excluded.fees, fee_type = excluded.fee_type, net_amount = excluded.net_amount,
	sub_account = excluded.sub_account, payment_channel = excluded.payment_channel,
	check_number = excluded.check_number, original_description = excluded.original_description,
	type = excluded.type, pending_provider_id = excluded.pending_provider_id, posted_at = excluded.posted_at,
	updated_at = now()
WHERE (t.account_id, t.status, t.summary, t.amount, t.currency, t.authorized_date, t.posted_date,
	t.provider_merchant_name, t.provider_category_id, t.fees, t.fee_type, t.net_amount, t.sub_account,
	t.payment_channel, t.check_number, t.original_description, t.type, t.pending_provider_id, t.posted_at)
	IS DISTINCT FROM
	(excluded.account_id, excluded.status, excluded.summary, excluded.amount, excluded.currency,
	excluded.authorized_date, excluded.posted_date, excluded.provider_merchant_name, excluded.provider_category_id,
	excluded.fees, excluded.fee_type, excluded.net_amount, excluded.sub_account, excluded.payment_channel,
	excluded.check_number, excluded.original_description, excluded.type, excluded.pending_provider_id,
	excluded.posted_at)
RETURNING t.id, t.pending_provider_id`

// carryUserCategories gives posted transactions that replace a pending one
// the category the user chose for the pending one. ids are changed rows
// that name a pending transaction, pendingIDs the provider ids they name;
// each pair is looked up by index, so the cost follows the page, not the
// connection's history.
func carryUserCategories(ctx context.Context, tx pgx.Tx, connectionID uuid.UUID, ids []uuid.UUID, pendingIDs []string) error {
	if len(ids) == 0 {
		return nil
	}
	// A scalar subquery per posted row keeps the lookup on the unique
	// (bank_connection_id, provider_id) index whatever the table's statistics
	// say; a join lets a stale estimate scan the whole connection per page.
	_, err := tx.Exec(ctx, `
		UPDATE transactions p SET category_id = c.cat, category_source = 'user', updated_at = now()
		FROM (SELECT c.id, (SELECT o.category_id FROM transactions o
				WHERE o.bank_connection_id = $1 AND o.provider_id = c.pending_pid AND o.category_source = 'user') AS cat
			FROM unnest($2::uuid[], $3::text[]) AS c(id, pending_pid)) c
		WHERE p.id = c.id AND c.cat IS NOT NULL AND p.category_source IS DISTINCT FROM 'user'`,
		connectionID, ids, pendingIDs)
	if err != nil {
		return fmt.Errorf("carry user categories to posted transactions: %w", err)
	}
	return nil
}

// MarkTransactionsDeleted marks the provider ids as deleted.
func MarkTransactionsDeleted(ctx context.Context, tx pgx.Tx, connectionID uuid.UUID, providerIDs []string) error {
	if len(providerIDs) == 0 {
		return nil
	}
	// Each id is looked up on the unique index by a scalar subquery and the
	// rows are then updated by primary key: a plain "provider_id = ANY($2)"
	// or a join lets stale statistics (a first sync outgrows them at once)
	// pick a scan of the connection's whole history for every page.
	_, err := tx.Exec(ctx, `UPDATE transactions SET status = 'deleted', updated_at = now()
		WHERE status <> 'deleted' AND id = ANY (ARRAY(
			SELECT (SELECT o.id FROM transactions o WHERE o.bank_connection_id = $1 AND o.provider_id = r.pid)
			FROM unnest($2::text[]) AS r(pid)))`, connectionID, providerIDs)
	if err != nil {
		return fmt.Errorf("mark removed transactions deleted: %w", err)
	}
	return nil
}

// ReplacePending marks as deleted every stored pending transaction of the
// accounts that is not among keep (the provider's complete pending set).
func ReplacePending(ctx context.Context, tx pgx.Tx, connectionID uuid.UUID, accountIDs []uuid.UUID, keep []string) error {
	if len(accountIDs) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `UPDATE transactions SET status = 'deleted', updated_at = now()
		WHERE bank_connection_id = $1 AND account_id = ANY($2) AND status = 'pending' AND NOT (provider_id = ANY($3))`,
		connectionID, accountIDs, keep)
	if err != nil {
		return fmt.Errorf("replace pending transactions: %w", err)
	}
	return nil
}

// PendingProviderIDs lists the connection's stored pending transactions.
func (s *Store) PendingProviderIDs(ctx context.Context, connectionID uuid.UUID) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT provider_id FROM transactions WHERE bank_connection_id = $1 AND status = 'pending' ORDER BY provider_id`, connectionID)
	if err != nil {
		return nil, fmt.Errorf("pending transactions: %w", err)
	}
	defer rows.Close()
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// SaveCursor stores the cursor to resume the connection's sync from.
func SaveCursor(ctx context.Context, tx pgx.Tx, connectionID uuid.UUID, cursor string) error {
	if _, err := tx.Exec(ctx, `UPDATE bank_connections SET sync_cursor = $2 WHERE id = $1`, connectionID, cursor); err != nil {
		return fmt.Errorf("save cursor: %w", err)
	}
	return nil
}

// MarkDataset records the outcome of fetching one of a connection's datasets.
func MarkDataset(ctx context.Context, q Querier, connectionID uuid.UUID, dataset string, stored bool, errorClass string) error {
	_, err := q.Exec(ctx, `
		INSERT INTO connection_datasets (bank_connection_id, dataset, stored_at, last_attempt_at, last_error_class)
		VALUES ($1, $2, CASE WHEN $3 THEN now() END, now(), NULLIF($4, ''))
		ON CONFLICT (bank_connection_id, dataset) DO UPDATE SET
			stored_at = COALESCE(excluded.stored_at, connection_datasets.stored_at),
			last_attempt_at = now(), last_error_class = excluded.last_error_class`,
		connectionID, dataset, stored, errorClass)
	if err != nil {
		return fmt.Errorf("record %s fetch: %w", dataset, err)
	}
	return nil
}

// SyncOutcome is how a sync ended, recorded on the connection.
type SyncOutcome struct {
	// OK clears any previous error and returns the connection to active.
	OK           bool
	ErrorCode    string
	ErrorMessage string
	ErrorClass   string
	ReconnectURL string
	NextSyncAt   *time.Time
	// HasInvestments is set when the provider offers investments.
	HasInvestments bool
	Institution    string
	InstitutionID  string
	LogoURL        string
}

// FinishSync records a sync's outcome on the connection (a disabled
// connection stays disabled).
func (s *Store) FinishSync(ctx context.Context, connectionID uuid.UUID, o SyncOutcome) error {
	var err error
	if o.OK {
		_, err = s.pool.Exec(ctx, `UPDATE bank_connections SET
			status = CASE WHEN status = 'disabled' THEN status ELSE 'active' END,
			last_synced_at = now(), last_sync_attempt_at = now(), next_sync_at = $2,
			last_provider_error_code = NULL, last_provider_error_message = NULL, last_error_class = NULL,
			reconnect_url = NULL, has_investments = $3,
			institution_name = COALESCE(NULLIF($4, ''), institution_name),
			institution_id = COALESCE(NULLIF($5, ''), institution_id),
			institution_logo_url = COALESCE(NULLIF($6, ''), institution_logo_url), updated_at = now()
			WHERE id = $1`, connectionID, o.NextSyncAt, o.HasInvestments, o.Institution, o.InstitutionID, o.LogoURL)
	} else {
		_, err = s.pool.Exec(ctx, `UPDATE bank_connections SET
			status = CASE WHEN status = 'disabled' THEN status ELSE 'error' END,
			last_sync_attempt_at = now(), next_sync_at = COALESCE($2, next_sync_at),
			last_provider_error_code = $3, last_provider_error_message = $4, last_error_class = $5,
			reconnect_url = NULLIF($6, ''), updated_at = now()
			WHERE id = $1`, connectionID, o.NextSyncAt, o.ErrorCode, o.ErrorMessage, o.ErrorClass, o.ReconnectURL)
	}
	if err != nil {
		return fmt.Errorf("record sync outcome of connection %s: %w", connectionID, err)
	}
	return nil
}

func dateTime(d *domain.Date) *time.Time {
	if d == nil {
		return nil
	}
	return &d.Time
}

func moneyText(m *domain.Money) *string {
	if m == nil {
		return nil
	}
	s := m.String()
	return &s
}
