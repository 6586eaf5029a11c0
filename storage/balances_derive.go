package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

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
// index of recorded days (not a read of every derived day). Every step
// joins on the account alone or aggregates (the daily totals and
// the span's days are summed together rather than joined day by day), so
// that a long history costs time in proportion to its days whatever the
// planner estimates: a day-by-day join of two CTEs, planned as a nested
// loop, took over a minute for three accounts of 10,000 days.
const deriveBalancesSQL = `
WITH changed AS (
	SELECT c.account_id, c.since FROM unnest($2::uuid[], $3::date[]) AS c(account_id, since)
),
earliest AS (
	SELECT c.account_id, b.date, b.balance, b.currency, c.since,
		CASE WHEN a.type IN ('credit', 'loan') THEN -1 ELSE 1 END AS sign
	FROM changed c
	JOIN accounts a ON a.id = c.account_id AND a.user_id = $1
	CROSS JOIN LATERAL (
		SELECT b.date, b.balance, b.currency FROM balance_history b
		WHERE b.account_id = c.account_id AND b.user_id = $1 AND NOT b.derived
		ORDER BY b.date LIMIT 1
	) b
),
anchor AS (
	SELECT e.account_id, e.date, e.balance, e.currency, e.sign FROM earliest e
	WHERE e.since <= e.date OR e.date = $4::date AND NOT EXISTS (
		SELECT 1 FROM balance_history x WHERE x.account_id = e.account_id AND x.user_id = $1 AND x.derived)
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
// returns how many derived rows it inserted or changed. Guarantee: a
// recorded balance is never overwritten, and the derivation is exact
// (numeric arithmetic in PostgreSQL). Caveat: a derived day is only as
// right as the transactions stored; a posted transaction removed at the
// provider is only accounted for at the next derivation of its account.
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
	tag, err := q.Exec(ctx, deriveBalancesSQL, userID, ids, since, today.Time)
	if err != nil {
		return 0, fmt.Errorf("derive daily balances of %d accounts: %w", len(changes), err)
	}
	return tag.RowsAffected(), nil
}

// DeriveBalances is the package function DeriveBalances on the store's
// pool, in a statement of its own.
func (s *Store) DeriveBalances(ctx context.Context, userID uuid.UUID, changes []BalanceChange, today domain.Date) (int64, error) {
	return deriveBalances(ctx, s.pool, userID, changes, today)
}
