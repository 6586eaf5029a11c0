package storage

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// This file holds double links (docs/accounts.md): a user's account that a
// newer connection reaches while an account of an older connection already
// reaches the same real account is marked duplicate_of_account_id, and its
// transactions are left out of the transaction listings by default.

// Evidence a candidate pair needs before it is marked: of the newer
// account's latest posted transactions in the dates both accounts cover
// (at most duplicateSample of them, within duplicateSpanDays of the last
// such date), at least duplicateMinRows, and at least duplicateMinShare of
// those with a posted transaction of equal amount within duplicateDays
// days in the older account.
const (
	duplicateSample   = 200
	duplicateSpanDays = 365
	duplicateMinRows  = 5
	duplicateMinShare = 0.8
	duplicateDays     = 2
	// duplicateTheirs bounds the older account's rows read for one pair
	// (the newest of the sample's days): a very busy account then
	// confirms on fewer matches, never costs more.
	duplicateTheirs = 20_000
)

// institutionKey is the SQL of an account's institution as detection
// compares it (alias a, its connection c): lower case, letters and digits
// only, without the words that vary between providers' spellings of one
// bank ("Bank", "N.A.", "Credit Union", "PLC", ...).
const institutionKey = `regexp_replace(regexp_replace(
	lower(COALESCE(NULLIF(a.institution_name, ''), c.institution_name, '')), '[^a-z0-9]+', ' ', 'g'),
	'\m(the|of|and|bank|banks|banking|na|n|a|national|association|credit|union|federal|fcu|cu|savings|plc|ltd|limited|inc|corp|corporation|co|company|group|ag|sa|se|gmbh|bv|nv|spa)\M|\s',
	'', 'g')`

// duplicateCandidatesSQL marks, for user $1, every connected account that
// is not marked yet and fits an older connection's account that is not
// marked either: same institution (institutionKey equal, or one holding
// the other when the shorter has at least four characters), type,
// subtype, currency and non-empty mask (its last four letters or digits),
// confirmed by transactions (the evidence constants, $2 to $7), and not a
// pair the user rejected. An account that fits several older ones is
// marked with the oldest. It returns the marked accounts' ids.
const duplicateCandidatesSQL = `
WITH acct AS (
	SELECT a.id, a.bank_connection_id AS conn, c.created_at AS linked_at, a.duplicate_of_account_id AS dup,
		` + institutionKey + ` AS inst,
		lower(COALESCE(a.type, '')) AS typ, lower(COALESCE(a.subtype, '')) AS sub, upper(a.currency) AS cur,
		right(regexp_replace(COALESCE(a.mask, ''), '[^0-9A-Za-z]', '', 'g'), 4) AS mask
	FROM accounts a JOIN bank_connections c ON c.id = a.bank_connection_id AND c.user_id = a.user_id
	WHERE a.user_id = $1 AND NOT a.manual
), pair AS (
	SELECT n.id AS account_id, o.id AS original_id, o.linked_at
	FROM acct n JOIN acct o
		ON o.conn <> n.conn AND (o.linked_at, o.conn) < (n.linked_at, n.conn)
		AND o.typ = n.typ AND o.sub = n.sub AND o.cur = n.cur AND o.mask = n.mask
		AND (o.inst = n.inst OR least(length(o.inst), length(n.inst)) >= 4
			AND (strpos(o.inst, n.inst) > 0 OR strpos(n.inst, o.inst) > 0))
	WHERE n.dup IS NULL AND o.dup IS NULL AND n.mask <> '' AND n.inst <> ''
		AND NOT EXISTS (SELECT 1 FROM account_duplicate_rejections r
			WHERE r.account_id = n.id AND r.original_account_id = o.id AND r.user_id = $1)
), span AS (
	SELECT p.*, greatest(nb.lo, ob.lo) + $5::int AS lo, least(nb.hi, ob.hi) - $5::int AS hi
	FROM pair p
	CROSS JOIN LATERAL (SELECT min(t.tx_date) AS lo, max(t.tx_date) AS hi FROM transactions t
		WHERE t.account_id = p.account_id AND t.user_id = $1 AND t.status = 'posted') nb
	CROSS JOIN LATERAL (SELECT min(t.tx_date) AS lo, max(t.tx_date) AS hi FROM transactions t
		WHERE t.account_id = p.original_id AND t.user_id = $1 AND t.status = 'posted') ob
), sample AS (
	SELECT s.account_id, s.original_id, s.linked_at, x.id, x.tx_date, x.amount
	FROM span s CROSS JOIN LATERAL (
		SELECT nt.id, nt.tx_date, nt.amount FROM transactions nt
		WHERE nt.account_id = s.account_id AND nt.user_id = $1 AND nt.status = 'posted'
			AND nt.tx_date BETWEEN greatest(s.lo, s.hi - $6::int) AND s.hi
		ORDER BY nt.tx_date DESC, nt.id DESC LIMIT $2) x
	WHERE s.lo <= s.hi
), reach AS (
	SELECT account_id, original_id, min(tx_date) - $5::int AS lo, max(tx_date) + $5::int AS hi
	FROM sample GROUP BY account_id, original_id
), theirs AS MATERIALIZED (
	SELECT r.account_id, r.original_id, ot.tx_date, ot.amount
	FROM reach r CROSS JOIN LATERAL (
		SELECT t.tx_date, t.amount FROM transactions t
		WHERE t.account_id = r.original_id AND t.user_id = $1 AND t.status = 'posted' AND t.tx_date BETWEEN r.lo AND r.hi
		ORDER BY t.tx_date DESC, t.id DESC LIMIT $7) ot
), matched AS (
	SELECT DISTINCT s.account_id, s.original_id, s.id FROM sample s JOIN theirs t
		ON t.account_id = s.account_id AND t.original_id = s.original_id AND t.amount = s.amount
		AND t.tx_date BETWEEN s.tx_date - $5::int AND s.tx_date + $5::int
), evidence AS (
	SELECT s.account_id, s.original_id, s.linked_at, count(*) AS sampled, count(m.id) AS matched
	FROM sample s LEFT JOIN matched m ON m.id = s.id AND m.account_id = s.account_id AND m.original_id = s.original_id
	GROUP BY s.account_id, s.original_id, s.linked_at
), chosen AS (
	SELECT DISTINCT ON (account_id) account_id, original_id
	FROM evidence
	WHERE sampled >= $3 AND matched >= $4::float8 * sampled
	ORDER BY account_id, linked_at, original_id
)
UPDATE accounts a SET duplicate_of_account_id = ch.original_id, updated_at = now()
FROM chosen ch
WHERE a.id = ch.account_id AND a.user_id = $1 AND a.duplicate_of_account_id IS NULL
RETURNING a.id`

// duplicateChainSQL points every mark of user $1 that names a marked
// account at that account's original instead, unless the user rejected
// that pair: a link that syncs before an older one may be marked against
// a copy that is later marked itself. It returns the re-pointed ids.
const duplicateChainSQL = `
UPDATE accounts a SET duplicate_of_account_id = o.duplicate_of_account_id, updated_at = now()
FROM accounts o
WHERE a.user_id = $1 AND a.duplicate_of_account_id IS NOT NULL
	AND o.id = a.duplicate_of_account_id AND o.user_id = $1 AND o.duplicate_of_account_id IS NOT NULL
	AND o.duplicate_of_account_id <> a.id
	AND NOT EXISTS (SELECT 1 FROM account_duplicate_rejections r
		WHERE r.account_id = a.id AND r.original_account_id = o.duplicate_of_account_id AND r.user_id = $1)
RETURNING a.id`

// maxDuplicateChain bounds the passes of duplicateChainSQL; each shortens
// every chain by one link.
const maxDuplicateChain = 8

// linkedSQL is a query: whether the accounts of the user (the SQL
// expression user) come through more than one connection (else none is
// another's double link).
func linkedSQL(user string) string {
	return `SELECT count(DISTINCT l.bank_connection_id) > 1 FROM accounts l
	WHERE l.user_id = ` + user + ` AND NOT l.manual AND l.duplicate_of_account_id IS NULL`
}

// markDuplicateAccounts marks the user's double-linked accounts inside q,
// a database transaction (duplicateCandidatesSQL), and returns the ids it
// marked; it turns JIT compilation off for the rest of the transaction. It
// reads only the user's accounts, then, for each candidate pair (which
// only accounts of one institution, type and mask on two connections
// make), at most duplicateSample transactions of the newer account and
// the older account's in the same days (index range scans, matched by a
// hash join); it is idempotent.
// Caveat: a mark is never taken back by detection, only by the user
// (ClearDuplicateMark) or the deletion of the original account.
func markDuplicateAccounts(ctx context.Context, q querier, userID uuid.UUID) ([]uuid.UUID, error) {
	// Accounts of one connection are never each other's double links: a
	// user whose accounts come through fewer than two connections (the
	// usual case) has nothing to mark, for one index look-up.
	var linked bool
	if err := q.QueryRow(ctx, linkedSQL("$1"), userID).Scan(&linked); err != nil {
		return nil, fmt.Errorf("mark duplicate accounts of user %s: %w", userID, err)
	}
	if !linked {
		return nil, nil
	}
	// The planner prices the evidence's look-ups at thousands of rows each
	// (it cannot know the two-day window holds a few), which would make it
	// compile the statement (JIT) for longer than the statement runs.
	if _, err := q.Exec(ctx, `SELECT set_config('jit', 'off', true)`); err != nil {
		return nil, fmt.Errorf("mark duplicate accounts of user %s: %w", userID, err)
	}
	rows, err := q.Query(ctx, duplicateCandidatesSQL, userID, duplicateSample, duplicateMinRows, duplicateMinShare, duplicateDays,
		duplicateSpanDays, duplicateTheirs)
	if err != nil {
		return nil, fmt.Errorf("mark duplicate accounts of user %s: %w", userID, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("mark duplicate accounts of user %s: %w", userID, err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	for range maxDuplicateChain {
		tag, err := q.Exec(ctx, duplicateChainSQL, userID)
		if err != nil {
			return nil, fmt.Errorf("shorten duplicate chains of user %s: %w", userID, err)
		}
		if tag.RowsAffected() == 0 {
			break
		}
	}
	return ids, nil
}

// MarkDuplicateAccounts is markDuplicateAccounts on its own: the marks a
// sync's end sets (finishSyncTx), for callers outside a sync (tests,
// operators). It returns the ids it marked.
func (s *Store) MarkDuplicateAccounts(ctx context.Context, userID uuid.UUID) ([]uuid.UUID, error) {
	var ids []uuid.UUID
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		ids, err = markDuplicateAccounts(ctx, tx, userID)
		return err
	})
	return ids, err
}

// ClearDuplicateMark clears the duplicate mark of the scope's account id
// and records the pair so that detection never marks it again, in one
// database transaction, and returns the account. An unmarked account is
// returned unchanged (a retry is harmless). Caveat: the rejection holds
// for that pair of finsync account ids; the account may still be marked
// as a duplicate of another account.
func (s *Store) ClearDuplicateMark(ctx context.Context, sc Scope, id uuid.UUID) (AccountWithConnection, error) {
	var out AccountWithConnection
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		a, err := getAccount(ctx, tx, sc, id, " FOR UPDATE OF a")
		if err != nil {
			return err
		}
		if a.DuplicateOfAccountID == nil {
			out = a
			return nil
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO account_duplicate_rejections (user_id, account_id, original_account_id)
			VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, sc.UserID, id, *a.DuplicateOfAccountID); err != nil {
			return fmt.Errorf("reject duplicate pair of account %s: %w", id, err)
		}
		if _, err := tx.Exec(ctx, `UPDATE accounts SET duplicate_of_account_id = NULL, updated_at = now()
			WHERE id = $1 AND user_id = $2`, id, sc.UserID); err != nil {
			return fmt.Errorf("clear duplicate mark of account %s: %w", id, err)
		}
		out, err = getAccount(ctx, tx, sc, id, "")
		return err
	})
	return out, err
}

// notDuplicate adds, unless include is set, "the transaction's account is
// not a duplicate whose original the scope sees" on alias.account_id: a
// marked account's rows are left out, except for a scoped credential that
// does not reach its original (it would otherwise see neither copy). The
// marked accounts are few; PostgreSQL reads them once (a hashed subplan
// on accounts_duplicates_idx).
func (w *where) notDuplicate(alias string, sc Scope, include bool) {
	if include {
		return
	}
	if !sc.Scoped() {
		w.add(alias+".account_id NOT IN (SELECT d.id FROM accounts d WHERE d.user_id = ? AND d.duplicate_of_account_id IS NOT NULL)",
			sc.UserID)
		return
	}
	w.add(alias+".account_id NOT IN (SELECT d.id FROM accounts d WHERE d.user_id = ? AND d.duplicate_of_account_id IS NOT NULL"+
		" AND d.duplicate_of_account_id IN "+scopeAccounts+")", sc.UserID, sc.CredentialID, sc.UserID)
}

// markDuplicatesAtEnd runs markDuplicateAccounts for the user at the end
// of a successful sync, inside its transaction, once every batch of the run
// is stored (a sliced sync's partial runs mark nothing); finishSyncTx calls
// it only when the user's accounts come through more than one connection
// (linkedSQL). It is a best effort in a savepoint: a statement timeout
// there (seen on a 600,000-row second link) must not fail a sync whose rows
// are stored, and the next sync's end tries again; any other error is
// returned.
func markDuplicatesAtEnd(ctx context.Context, tx pgx.Tx, userID uuid.UUID) error {
	err := pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
		_, err := markDuplicateAccounts(ctx, sp, userID)
		return markTimeout(err)
	})
	if errors.Is(err, ErrStatementTimeout) {
		return nil
	}
	return err
}
