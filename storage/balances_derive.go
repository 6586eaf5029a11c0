package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/finsync/finsync/domain"
)

// BalanceChange says from which transaction date a sync changed an
// account's posted transactions.
type BalanceChange struct {
	AccountID uuid.UUID
	// Since is the earliest date of a posted transaction the sync stored
	// for the account; the zero Date stands for the whole history.
	Since domain.Date
}

// deriveDueSQL picks, of the accounts named in $2, those deriveBalancesSQL
// would derive: the sync changed a posted transaction dated on or before
// the account's earliest recorded (non-derived) balance day ($3), or that
// day is today ($4) and the account has no derived day yet. It makes one
// or two index look-ups per account and nothing else, so that a sync that
// changes nothing before any anchor, the usual incremental sync, costs
// well under a millisecond however long the history (the derivation
// statement itself costs about as much again just to plan).
//
// The earliest recorded day is looked up by account alone, so that the
// planner has only the partial index of recorded days to take it from;
// that the row is the user's is checked after. With user_id among the
// look-up's conditions, and no statistics yet on balance_history (no
// ANALYZE since the derived days were written), the planner chose the
// unique (account_id, date, user_id) index and walked every derived day
// to reach the first recorded one: about 1 ms per account of 10,000 days.
// The no-derived-day check is an ordered look-up with LIMIT in an index
// on (account_id, date), evaluated only when the earliest recorded day is
// today: it stops at the account's first derived day, or after its few
// recorded days (all today or later) when there is none, where a NOT
// EXISTS was planned as a hash of every derived row of the user.
const deriveDueSQL = `
SELECT c.account_id, c.since
FROM unnest($2::uuid[], $3::date[]) AS c(account_id, since)
` + earliestRecordedSQL + `
WHERE ` + dueSQL

// earliestRecordedSQL joins, to each changed account c, its earliest
// recorded (non-derived) balance b: date, balance, currency and user_id,
// for the caller to check is $1's. deriveDueSQL and deriveBalancesSQL
// share it, and dueSQL, so that both pick the same accounts.
const earliestRecordedSQL = `CROSS JOIN LATERAL (
	SELECT b.date, b.balance, b.currency, b.user_id FROM balance_history b
	WHERE b.account_id = c.account_id AND NOT b.derived
	ORDER BY b.date LIMIT 1
) b`

// dueSQL is the condition on c and b (earliestRecordedSQL) under which an
// account is derived.
const dueSQL = `b.user_id = $1 AND (c.since <= b.date OR b.date = $4::date AND (
	SELECT x.date FROM balance_history x
	WHERE x.account_id = c.account_id AND x.user_id = $1 AND x.derived
	ORDER BY x.date LIMIT 1) IS NULL)`

// deriveBalancesSQL derives, in one set-based statement, the end-of-day
// balances of each account named in $2 from the day of its first posted
// transaction up to the day before its earliest recorded (non-derived)
// balance, the anchor:
//
//	balance(d) = anchor - sign * (sum of posted amounts dated after d, up to the anchor day)
//
// where a transaction's amount is its net amount when it has one (Stripe:
// the gross amount less fees, which is what moves the balance),
// and sign is -1 on credit and loan accounts (whose balance is the amount
// owed, while a purchase has a negative amount) and +1 elsewhere. Pending
// and deleted transactions are left out: a provider's current balance is
// the booked one. The anchor day's transactions count as part of the
// anchor. An account is derived only when the sync changed a transaction
// dated on or before its anchor ($3), or when its anchor was recorded
// today ($4) and it has no derived day yet (its first sync, or a first
// balance after syncs that could not fetch one).
//
// Derived rows are upserted and derived rows outside the new span deleted;
// a recorded row is never touched. Unchanged derived rows are not rewritten.
// The earliest recorded day is one look-up per account in the partial
// index of recorded days (not a read of every derived day; deriveDueSQL
// says why it names the account alone). Every step
// joins on the account alone or aggregates (the daily totals and
// the span's days are summed together rather than joined day by day), so
// that a long history costs time in proportion to its days whatever the
// planner estimates: a day-by-day join of two CTEs, planned as a nested
// loop, took over a minute for three accounts of 10,000 days.
const deriveBalancesSQL = `
WITH anchor AS (
	SELECT c.account_id, b.date, b.balance, b.currency,
		CASE WHEN a.type IN ('credit', 'loan') THEN -1 ELSE 1 END AS sign
	FROM unnest($2::uuid[], $3::date[]) AS c(account_id, since)
	JOIN accounts a ON a.id = c.account_id AND a.user_id = $1
	` + earliestRecordedSQL + `
	WHERE ` + dueSQL + `
),
daily AS (
	SELECT t.account_id, t.tx_date AS day, sum(COALESCE(t.net_amount, t.amount)) AS total
	FROM anchor n JOIN transactions t ON t.account_id = n.account_id AND t.user_id = $1
	WHERE t.status = 'posted' AND t.tx_date <= n.date
	GROUP BY t.account_id, t.tx_date
),
firsts AS (
	SELECT account_id, min(day) AS first FROM daily GROUP BY account_id
),
span AS (
	SELECT n.account_id, g.day::date AS day
	FROM anchor n
	JOIN firsts f ON f.account_id = n.account_id
	CROSS JOIN LATERAL generate_series(f.first::timestamp, n.date::timestamp, interval '1 day') AS g(day)
),
totals AS (
	SELECT u.account_id, u.day, sum(u.total) AS total
	FROM (SELECT account_id, day, 0::numeric AS total FROM span
		UNION ALL SELECT account_id, day, total FROM daily) u
	GROUP BY u.account_id, u.day
),
computed AS (
	SELECT t.account_id, t.day, n.date AS anchor_day, n.currency,
		n.balance - n.sign * COALESCE(sum(t.total) OVER (PARTITION BY t.account_id ORDER BY t.day DESC
			ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS balance
	FROM totals t JOIN anchor n ON n.account_id = t.account_id
),
wanted AS (
	SELECT account_id, day, balance, currency FROM computed WHERE day < anchor_day
),
gone AS (
	DELETE FROM balance_history b USING anchor n LEFT JOIN firsts f ON f.account_id = n.account_id
	WHERE b.account_id = n.account_id AND b.user_id = $1 AND b.derived
		AND (f.first IS NULL OR b.date < f.first OR b.date >= n.date)
)
INSERT INTO balance_history (user_id, account_id, date, balance, currency, derived)
SELECT $1, w.account_id, w.day, w.balance, w.currency, true FROM wanted w
ON CONFLICT (account_id, date, user_id) DO UPDATE SET
	balance = excluded.balance, currency = excluded.currency, updated_at = now()
WHERE balance_history.derived
	AND (balance_history.balance, balance_history.currency) IS DISTINCT FROM (excluded.balance, excluded.currency)`

// deriveBalances re-derives the daily balances before each changed
// account's earliest recorded balance from that balance and the account's
// posted transactions (deriveBalancesSQL says exactly when and how), and
// returns how many derived rows it inserted or changed. It first asks
// which accounts qualify (deriveDueSQL): when none does, the usual case of
// an incremental sync, that one query is all it costs; otherwise the
// derivation statement runs for those accounts only, and checks their
// anchors again in its own snapshot. Guarantee: a recorded balance is
// never overwritten, and the derivation is exact (numeric arithmetic in
// PostgreSQL). Caveats: a derived day is only as right as the transactions
// stored; a posted transaction removed at the provider is only accounted
// for at the next derivation of its account; and the two statements are
// not one snapshot, so an account that comes to qualify between them (a
// balance recorded meanwhile) is derived at its next sync, not this one.
func deriveBalances(ctx context.Context, q querier, userID uuid.UUID, changes []BalanceChange, today domain.Date) (int64, error) {
	if len(changes) == 0 {
		return 0, nil
	}
	ids := make([]uuid.UUID, len(changes))
	since := make([]time.Time, len(changes))
	for i, c := range changes {
		ids[i] = c.AccountID
		since[i] = c.Since.Time // the zero time is 0001-01-01: every date
	}
	rows, err := q.Query(ctx, deriveDueSQL, userID, ids, since, today.Time)
	if err != nil {
		return 0, fmt.Errorf("find the accounts to derive of %d: %w", len(changes), err)
	}
	var dueIDs []uuid.UUID
	var dueSince []time.Time
	var dueID uuid.UUID
	var dueDay time.Time
	_, err = pgx.ForEachRow(rows, []any{&dueID, &dueDay}, func() error {
		dueIDs, dueSince = append(dueIDs, dueID), append(dueSince, dueDay)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("find the accounts to derive of %d: %w", len(changes), err)
	}
	if len(dueIDs) == 0 {
		return 0, nil
	}
	tag, err := q.Exec(ctx, deriveBalancesSQL, userID, dueIDs, dueSince, today.Time)
	if err != nil {
		return 0, fmt.Errorf("derive daily balances of %d accounts: %w", len(dueIDs), err)
	}
	return tag.RowsAffected(), nil
}

// DeriveBalances is deriveBalances on the store's pool, outside any other
// transaction: one query when nothing is due, two when something is.
func (s *Store) DeriveBalances(ctx context.Context, userID uuid.UUID, changes []BalanceChange, today domain.Date) (int64, error) {
	return deriveBalances(ctx, s.pool, userID, changes, today)
}
