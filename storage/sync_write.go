package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/finsync/finsync/domain"
)

// upsertAccounts stores a connection's accounts and records today's balance
// of each whose balances are known; it returns account ids by provider
// account id. An account with BalancesUnknown keeps its last balances and
// their as-of time. All accounts and balances are one statement
// (upsertAccountsSQL), unless an account is reported twice.
func upsertAccounts(ctx context.Context, tx pgx.Tx, conn domain.BankConnection, accounts []domain.ReportedAccount, today domain.Date) (map[string]uuid.UUID, error) {
	ids := make(map[string]uuid.UUID, len(accounts))
	if len(accounts) == 0 {
		return ids, nil
	}
	if !reportedTwice(accounts) {
		return ids, upsertAccountGroup(ctx, tx, conn, accounts, today, ids)
	}
	// One statement cannot write a row twice: an account reported twice
	// (no provider is known to) is stored one report at a time, in order.
	for i := range accounts {
		if err := upsertAccountGroup(ctx, tx, conn, accounts[i:i+1], today, ids); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// reportedTwice reports whether a provider account id appears twice.
func reportedTwice(accounts []domain.ReportedAccount) bool {
	seen := make(map[string]bool, len(accounts))
	for _, a := range accounts {
		if seen[a.ProviderAccountID] {
			return true
		}
		seen[a.ProviderAccountID] = true
	}
	return false
}

// upsertAccountGroup stores accounts (each provider account id once) in
// one statement and notes their ids in ids.
func upsertAccountGroup(ctx context.Context, tx pgx.Tx, conn domain.BankConnection, accounts []domain.ReportedAccount, today domain.Date, ids map[string]uuid.UUID) error {
	var c reportedAccountColumns
	for _, a := range accounts {
		if err := c.add(a); err != nil {
			return err
		}
	}
	rows, err := tx.Query(ctx, upsertAccountsSQL, conn.UserID, conn.ID, conn.Provider, nullIfEmpty(conn.InstitutionName), today.Time,
		c.pids, c.names, c.masks, c.types, c.subtypes, c.currencies, c.current, c.available, c.limits, c.liabilities, c.unknown, c.record)
	if err != nil {
		return fmt.Errorf("upsert accounts: %w", err)
	}
	var pid string
	var id uuid.UUID
	if _, err := pgx.ForEachRow(rows, []any{&pid, &id}, func() error {
		ids[pid] = id
		return nil
	}); err != nil {
		return fmt.Errorf("upsert accounts: %w", err)
	}
	return nil
}

// reportedAccountColumns are reported accounts as upsertAccountsSQL's arrays.
type reportedAccountColumns struct {
	pids, names, currencies                 []string
	masks, types, subtypes                  []*string
	current, available, limits, liabilities []*string
	unknown, record                         []bool
}

// add appends a.
func (c *reportedAccountColumns) add(a domain.ReportedAccount) error {
	var liability *string
	if a.Liability != nil {
		b, err := json.Marshal(a.Liability)
		if err != nil {
			return fmt.Errorf("encode liability of account %s: %w", a.ProviderAccountID, err)
		}
		text := string(b)
		liability = &text
	}
	c.pids, c.names, c.currencies = append(c.pids, a.ProviderAccountID), append(c.names, a.Name), append(c.currencies, a.Currency)
	c.masks, c.types, c.subtypes = append(c.masks, nullIfEmpty(a.Mask)), append(c.types, nullIfEmpty(a.Type)), append(c.subtypes, nullIfEmpty(a.Subtype))
	c.current, c.available, c.limits = append(c.current, moneyText(a.CurrentBalance)), append(c.available, moneyText(a.AvailableBalance)), append(c.limits, moneyText(a.CreditLimit))
	c.liabilities = append(c.liabilities, liability)
	c.unknown = append(c.unknown, a.BalancesUnknown)
	c.record = append(c.record, !a.BalancesUnknown && a.CurrentBalance != nil)
	return nil
}

// upsertAccountsSQL stores reported accounts ($1 user, $2 connection, $3
// provider, $4 institution; the accounts as arrays from $6: provider
// account id, name, mask, type, subtype, currency, current and available
// balances, credit limit, liability, balances unknown) and records the
// current balance on day $5 of those whose $17 is set, as recordBalance
// does; it returns each account's provider account id and id. An account
// whose balances are unknown keeps its stored ones (its balance_as_of is
// null among the excluded values).
const upsertAccountsSQL = `
WITH r AS (
	SELECT * FROM unnest($6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[],
		$12::text[]::numeric[], $13::text[]::numeric[], $14::text[]::numeric[], $15::text[], $16::bool[], $17::bool[])
		AS r(pid, name, mask, type, subtype, currency, current, available, credit_limit, liability, unknown, record)
), a AS (
	INSERT INTO accounts (user_id, bank_connection_id, provider_account_id, provider, manual, institution_name,
		name, mask, type, subtype, currency, current_balance, available_balance, credit_limit, balance_as_of, liability)
	SELECT $1, $2, r.pid, $3, false, $4, r.name, r.mask, r.type, r.subtype, r.currency, r.current, r.available,
		r.credit_limit, CASE WHEN r.unknown THEN NULL ELSE now() END, r.liability::jsonb
	FROM r
	ON CONFLICT (bank_connection_id, provider_account_id, user_id) DO UPDATE SET
		institution_name = excluded.institution_name, name = excluded.name, mask = excluded.mask,
		type = excluded.type, subtype = excluded.subtype, currency = excluded.currency,
		current_balance = CASE WHEN excluded.balance_as_of IS NULL THEN accounts.current_balance ELSE excluded.current_balance END,
		available_balance = CASE WHEN excluded.balance_as_of IS NULL THEN accounts.available_balance ELSE excluded.available_balance END,
		credit_limit = CASE WHEN excluded.balance_as_of IS NULL THEN accounts.credit_limit ELSE excluded.credit_limit END,
		balance_as_of = COALESCE(excluded.balance_as_of, accounts.balance_as_of),
		liability = excluded.liability, updated_at = now()
	RETURNING provider_account_id, id
), balance AS (
	INSERT INTO balance_history (user_id, account_id, date, balance, currency)
	SELECT $1, a.id, $5, r.current, r.currency FROM a JOIN r ON r.pid = a.provider_account_id WHERE r.record
	` + recordBalanceConflict + `
)
SELECT provider_account_id, id FROM a`

// upsertProviderCategories copies provider categories for the user the
// first time they are seen (a user's edit is never overwritten: rows the
// user edited keep their name, group and description) and returns category
// ids by provider id. New categories are marked read-only when readOnly is
// set (the provider declares its categories read-only, as a business bank
// does); a category's read-only mark never changes after it is created.
func upsertProviderCategories(ctx context.Context, tx pgx.Tx, userID uuid.UUID, provider string, readOnly bool, cats []domain.ReportedCategory) (map[string]uuid.UUID, error) {
	ids := make(map[string]uuid.UUID, len(cats))
	if len(cats) == 0 {
		return ids, nil
	}
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

// markTransactionsDeleted marks the provider ids as deleted and returns
// how many stored rows it marked (ids unknown or already deleted count none).
func markTransactionsDeleted(ctx context.Context, tx pgx.Tx, connectionID uuid.UUID, providerIDs []string) (int64, error) {
	if len(providerIDs) == 0 {
		return 0, nil
	}
	// Each id is looked up on the unique index by a scalar subquery and the
	// rows are then updated by primary key: a plain "provider_id = ANY($2)"
	// or a join lets stale statistics (a first sync outgrows them at once)
	// pick a scan of the connection's whole history for every page.
	tag, err := tx.Exec(ctx, `UPDATE transactions SET status = 'deleted', updated_at = now()
		WHERE status <> 'deleted' AND id = ANY (ARRAY(
			SELECT (SELECT o.id FROM transactions o WHERE o.bank_connection_id = $1 AND o.provider_id = r.pid)
			FROM unnest($2::text[]) AS r(pid)))`, connectionID, providerIDs)
	if err != nil {
		return 0, fmt.Errorf("mark removed transactions deleted: %w", err)
	}
	return tag.RowsAffected(), nil
}

// anyStored reports whether any of providerIDs is a stored transaction of
// the connection not marked deleted, one look-up in the unique index each.
func anyStored(ctx context.Context, tx pgx.Tx, connectionID uuid.UUID, providerIDs []string) (bool, error) {
	var found bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM unnest($2::text[]) AS r(pid)
		WHERE (SELECT o.status FROM transactions o WHERE o.bank_connection_id = $1 AND o.provider_id = r.pid) <> 'deleted')`,
		connectionID, providerIDs).Scan(&found)
	if err != nil {
		return false, fmt.Errorf("look up removed transactions: %w", err)
	}
	return found, nil
}

// replacePending marks as deleted every stored pending transaction of the
// accounts that the sync under way has not listed as pending on any page
// stored so far (notePendingSeen: the provider's complete pending set once
// the accounts' last pages are in), and returns how many it marked.
func replacePending(ctx context.Context, tx pgx.Tx, connectionID uuid.UUID, accountIDs []uuid.UUID) (int64, error) {
	if len(accountIDs) == 0 {
		return 0, nil
	}
	tag, err := tx.Exec(ctx, `UPDATE transactions SET status = 'deleted', updated_at = now()
		WHERE bank_connection_id = $1 AND account_id = ANY($2) AND status = 'pending'
		AND NOT (provider_id = ANY (SELECT unnest(c.sync_pending_seen) FROM bank_connections c WHERE c.id = $1))`,
		connectionID, accountIDs)
	if err != nil {
		return 0, fmt.Errorf("replace pending transactions: %w", err)
	}
	return tag.RowsAffected(), nil
}

// notePendingSeen adds provider ids of pending transactions a page of the
// sync under way listed to those its later pages' pending sets include.
func notePendingSeen(ctx context.Context, tx pgx.Tx, connectionID uuid.UUID, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `UPDATE bank_connections
		SET sync_pending_seen = ARRAY(SELECT DISTINCT unnest(sync_pending_seen || $2::text[])) WHERE id = $1`, connectionID, ids)
	if err != nil {
		return fmt.Errorf("note pending transactions of the sync: %w", err)
	}
	return nil
}

// ListPendingProviderIDs lists the connection's stored pending transactions.
func (s *Store) ListPendingProviderIDs(ctx context.Context, connectionID uuid.UUID) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT provider_id FROM transactions WHERE bank_connection_id = $1 AND status = 'pending' ORDER BY provider_id`, connectionID)
	if err != nil {
		return nil, fmt.Errorf("pending transactions: %w", err)
	}
	defer rows.Close()
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// ErrCredentialsChanged says that a connection's credentials changed (a
// re-auth) while a sync with the old ones ran: what that sync read
// belongs to the old link, so its batch and its outcome are not stored,
// and the sync should start again, with the new credentials, from the
// cursor the re-auth reset.
var ErrCredentialsChanged = errors.New("the connection's credentials changed during the sync")

// saveCursor stores the cursor to resume the connection's sync from and
// records that its transactions were stored (markDataset), in one round
// trip; after the sync's last page, it forgets the pending rows the sync
// listed. When sealed (the credentials the sync used) is no longer what is
// stored, it stores nothing and returns ErrCredentialsChanged.
func saveCursor(ctx context.Context, tx pgx.Tx, connectionID uuid.UUID, cursor string, last bool, sealed []byte) error {
	var batch pgx.Batch
	batch.Queue(markDatasetSQL, connectionID, "transactions", true, "")
	batch.Queue(`UPDATE bank_connections SET sync_cursor = $2,
		sync_pending_seen = CASE WHEN $3 THEN '{}' ELSE sync_pending_seen END
		WHERE id = $1 AND ($4::bytea IS NULL OR credentials_encrypted = $4)`, connectionID, cursor, last, sealed).Exec(func(tag pgconn.CommandTag) error {
		if tag.RowsAffected() == 0 && sealed != nil {
			return fmt.Errorf("save cursor of connection %s: %w", connectionID, ErrCredentialsChanged)
		}
		return nil
	})
	if err := tx.SendBatch(ctx, &batch).Close(); err != nil {
		if errors.Is(err, ErrCredentialsChanged) {
			return err
		}
		return fmt.Errorf("save cursor: %w", err)
	}
	return nil
}

// markDataset records the outcome of fetching one of a connection's datasets.
func markDataset(ctx context.Context, q querier, connectionID uuid.UUID, dataset string, stored bool, errorClass string) error {
	_, err := q.Exec(ctx, markDatasetSQL, connectionID, dataset, stored, errorClass)
	if err != nil {
		return fmt.Errorf("record %s fetch: %w", dataset, err)
	}
	return nil
}

// markDatasetSQL records a fetch of dataset $2 of connection $1: stored
// ($3) or not, with its error class ($4, empty for none).
const markDatasetSQL = `
	INSERT INTO connection_datasets (user_id, bank_connection_id, dataset, stored_at, last_attempt_at, last_error_class)
	SELECT c.user_id, c.id, $2, CASE WHEN $3 THEN now() END, now(), NULLIF($4, '') FROM bank_connections c WHERE c.id = $1
	ON CONFLICT (bank_connection_id, dataset, user_id) DO UPDATE SET
		stored_at = COALESCE(excluded.stored_at, connection_datasets.stored_at),
		last_attempt_at = now(), last_error_class = excluded.last_error_class`

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
	// Changes counts the rows the whole sync stored (sync.completed's data).
	Changes RowChanges
	// ConsentExpiresAt is when the user's consent ends, as the provider
	// reported it in this sync; nil when it reports none. Recorded with an
	// OK outcome only.
	ConsentExpiresAt *time.Time
	// ConsentWarning, with an OK outcome, is how long before the consent's
	// end (ConsentExpiresAt) connection.consent_expiring is sent, once per
	// consent end; zero sends none.
	ConsentWarning time.Duration
	// Unschedule, on a failure, takes the connection off the periodic
	// schedule (next_sync_at null) until a re-auth puts it back: no
	// provider call can succeed until the user acts.
	Unschedule bool
	// Record, when set, is the finished sync to add to the connection's
	// history (RecordSync) in the same transaction as the outcome. On an OK
	// outcome its Removed counts, like sync.completed, the rows a finished
	// re-link removed too.
	Record *SyncRecord
	// LinkID, with an OK outcome, is the provider's id of the
	// connection's link (providers.AccountSet.LinkID), recorded for the
	// provider's notifications to name it by; empty keeps the stored one.
	LinkID string
	// ReadFrom, with an OK outcome, is when the sync began asking the
	// provider for data, by the database's clock (SyncRequest.Now): a
	// provider notification that asked for a sync after it leaves the next
	// sync due at once. Zero: every outstanding request counts as seen.
	ReadFrom time.Time
	// Credentials are the sealed credentials the sync used; when they are
	// no longer the connection's (a re-auth came during the sync), the
	// outcome is not recorded: ErrCredentialsChanged. Nil records it
	// whatever the credentials.
	Credentials []byte
	// ConsentNow is the time ConsentWarning counts from: the syncing
	// worker's clock (the provider data's; a simulator's in tests and
	// demos). Zero: the database's.
	ConsentNow time.Time
	// warnConsent is set by finishSyncTx when this outcome is the first to
	// see its consent's end within ConsentWarning.
	warnConsent bool
}

// noteConsentWarning records, when the consent's end the outcome reports
// lies within its ConsentWarning (and has not passed), that it was warned
// of, and reports whether this is the first time for that end: a consent
// is warned of once, a renewed one (another end) once more.
func noteConsentWarning(ctx context.Context, tx pgx.Tx, connectionID uuid.UUID, o SyncOutcome) (bool, error) {
	if o.ConsentExpiresAt == nil || o.ConsentWarning <= 0 {
		return false, nil
	}
	tag, err := tx.Exec(ctx, `UPDATE bank_connections SET consent_warned_for = $2
		WHERE id = $1 AND $2 > COALESCE($4, now()) AND $2 <= COALESCE($4, now()) + make_interval(secs => $3::float8)
			AND consent_warned_for IS DISTINCT FROM $2`, connectionID, *o.ConsentExpiresAt, o.ConsentWarning.Seconds(), timeOrNull(o.ConsentNow))
	if err != nil {
		return false, fmt.Errorf("note consent warning of connection %s: %w", connectionID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// finishSyncTx records a sync's outcome on the connection inside tx, with
// the consumer webhook events the outcome causes (docs/webhooks.md), and
// returns the webhook subscriptions that received events, whose drains
// the caller enqueues. A connection that no longer exists records nothing.
func finishSyncTx(ctx context.Context, tx pgx.Tx, connectionID uuid.UUID, o SyncOutcome) ([]uuid.UUID, error) {
	var prev connectionState
	var sealed []byte
	var relinking, linked bool
	err := tx.QueryRow(ctx, `SELECT c.user_id, c.status, c.last_error_class, c.credentials_encrypted, c.relinking, (`+linkedSQL("c.user_id")+`)
		FROM bank_connections c WHERE c.id = $1 FOR UPDATE`,
		connectionID).Scan(&prev.userID, &prev.status, &prev.errorClass, &sealed, &relinking, &linked)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("record sync outcome of connection %s: %w", connectionID, err)
	}
	if o.Credentials != nil && !bytes.Equal(o.Credentials, sealed) {
		return nil, fmt.Errorf("record sync outcome of connection %s: %w", connectionID, ErrCredentialsChanged)
	}
	if o.OK {
		_, err = tx.Exec(ctx, `UPDATE bank_connections SET
			status = CASE WHEN status = 'disabled' THEN status ELSE 'active' END,
			last_synced_at = now(), last_sync_attempt_at = now(),
			next_sync_at = CASE WHEN sync_requested_at > $9 AND $2::timestamptz IS NOT NULL THEN now() ELSE $2 END,
			sync_requested_at = CASE WHEN sync_requested_at > $9 THEN sync_requested_at END,
			provider_link_id = COALESCE(NULLIF($8, ''), provider_link_id),
			last_provider_error_code = NULL, last_provider_error_message = NULL, last_error_class = NULL,
			reconnect_url = NULL, has_investments = $3, consecutive_failures = 0,
			institution_name = COALESCE(NULLIF($4, ''), institution_name),
			institution_id = COALESCE(NULLIF($5, ''), institution_id),
			institution_logo_url = COALESCE(NULLIF($6, ''), institution_logo_url), consent_expires_at = $7, updated_at = now()
			WHERE id = $1`, connectionID, o.NextSyncAt, o.HasInvestments, o.Institution, o.InstitutionID, o.LogoURL, o.ConsentExpiresAt,
			o.LinkID, timeOrNull(o.ReadFrom))
		var relinked int64
		if err == nil && relinking {
			relinked, err = finishRelink(ctx, tx, connectionID)
			o.Changes.Removed += relinked
		}
		if err == nil && linked {
			err = markDuplicatesAtEnd(ctx, tx, prev.userID)
		}
		if err == nil {
			o.warnConsent, err = noteConsentWarning(ctx, tx, connectionID, o)
		}
		if err == nil && o.Record != nil {
			r := *o.Record
			r.Changes.Removed += relinked
			err = recordSync(ctx, tx, connectionID, r)
		}
	} else {
		_, err = tx.Exec(ctx, `UPDATE bank_connections SET
			status = CASE WHEN status = 'disabled' THEN status ELSE 'error' END,
			last_sync_attempt_at = now(), next_sync_at = CASE WHEN $7 THEN NULL ELSE COALESCE($2, next_sync_at) END,
			last_provider_error_code = $3, last_provider_error_message = $4, last_error_class = $5,
			reconnect_url = NULLIF($6, ''), consecutive_failures = consecutive_failures + 1, updated_at = now()
			WHERE id = $1`, connectionID, o.NextSyncAt, o.ErrorCode, o.ErrorMessage, o.ErrorClass, o.ReconnectURL, o.Unschedule)
		if err == nil && o.Record != nil {
			err = recordSync(ctx, tx, connectionID, *o.Record)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("record sync outcome of connection %s: %w", connectionID, err)
	}
	return syncWebhookEvents(ctx, tx, connectionID, prev, o)
}

// timeOrNull is t, or SQL null for the zero time.
func timeOrNull(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// FinishSync is finishSyncTx inside tx.
func (t *Tx) FinishSync(ctx context.Context, connectionID uuid.UUID, o SyncOutcome) ([]uuid.UUID, error) {
	return finishSyncTx(ctx, t.tx, connectionID, o)
}
