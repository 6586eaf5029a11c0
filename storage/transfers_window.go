package storage

import (
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// windowDetectRows is from how many rows a sync batch's same-currency
// candidates are found by windowCandidates rather than looked up row by
// row (candidatePairsSQL).
const windowDetectRows = 1000

// windowRow is a stored row on a day of a batch's window, as
// windowCandidates matches it.
type windowRow struct {
	id, accountID uuid.UUID
	minor, day    int64
	currency      string
}

// windowCandidates is candidatePairs for a large batch (a first sync's
// thousands of new rows, which cover a few weeks): it reads the user's
// live rows on the days the batch's windows cover once, one range of
// transactions_user_order_idx per day, and matches them to the batch's
// rows by amount in memory, so that the cost is one narrow read per row
// in the window rather than an index look-up per row of the batch. The
// candidates found are then checked (unpaired, not rejected) in one
// statement. Cross-currency candidates, for the batch's rows whose
// description says transfer, come from candidatePairs.
func windowCandidates(ctx context.Context, tx pgx.Tx, userID uuid.UUID, rows []detectRow, cross bool) ([][2]uuid.UUID, map[[16]byte]bool, error) {
	stored, err := readWindow(ctx, tx, userID, windowDays(rows))
	if err != nil {
		return nil, nil, err
	}
	type key struct {
		minor    int64
		currency string
	}
	byAmount := map[key][]int{}
	for i := range stored {
		k := key{stored[i].minor, stored[i].currency}
		byAmount[k] = append(byAmount[k], i)
	}
	var cs, xs []uuid.UUID
	for _, r := range rows {
		for _, j := range byAmount[key{-r.minor, r.currency}] {
			x := &stored[j]
			if x.accountID != r.accountID && abs64(x.day-r.day) <= maxTransferLagDays {
				cs, xs = append(cs, r.id), append(xs, x.id)
			}
		}
	}
	pairs, err := freeCandidates(ctx, tx, userID, cs, xs)
	if err != nil {
		return nil, nil, err
	}
	pairs, crowded := boundCandidates(pairs, rows, stored)
	if cross {
		var says []detectRow
		for _, r := range rows {
			if saysTransfer(r.text) {
				says = append(says, r)
			}
		}
		more, _, err := candidatePairs(ctx, tx, userID, says, true, false)
		if err != nil {
			return nil, nil, err
		}
		pairs = append(pairs, more...)
	}
	return pairs, crowded, nil
}

// windowDays returns the days within maxTransferLagDays of a row's date.
func windowDays(rows []detectRow) []int64 {
	seen := map[int64]bool{}
	var out []int64
	for _, r := range rows {
		for d := r.day - maxTransferLagDays; d <= r.day+maxTransferLagDays; d++ {
			if !seen[d] {
				seen[d] = true
				out = append(out, d)
			}
		}
	}
	return out
}

// readWindow reads the user's live, non-zero rows dated on days (days
// since 2000-01-01), a lateral range per day.
func readWindow(ctx context.Context, tx pgx.Tx, userID uuid.UUID, days []int64) ([]windowRow, error) {
	rows, err := tx.Query(ctx, `
		SELECT x.id, x.account_id, (x.amount * 10000)::bigint, (x.tx_date - DATE '2000-01-01')::bigint, x.currency
		FROM unnest($2::int8[]) AS d(day)
		CROSS JOIN LATERAL (
			SELECT x.id, x.account_id, x.amount, x.tx_date, x.currency FROM transactions x
			WHERE x.user_id = $1 AND x.tx_date = DATE '2000-01-01' + d.day::int AND x.status <> 'deleted' AND x.amount <> 0
			OFFSET 0
		) x`, userID, days)
	if err != nil {
		return nil, fmt.Errorf("detect transfers: read window: %w", err)
	}
	var out []windowRow
	var w windowRow
	_, err = pgx.ForEachRow(rows, []any{&w.id, &w.accountID, &w.minor, &w.day, &w.currency}, func() error {
		out = append(out, w)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("detect transfers: read window: %w", err)
	}
	return out, nil
}

// freeCandidates keeps the pairs (cs[i], xs[i]) whose candidate is
// unpaired and that the user did not reject.
func freeCandidates(ctx context.Context, tx pgx.Tx, userID uuid.UUID, cs, xs []uuid.UUID) ([][2]uuid.UUID, error) {
	if len(cs) == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, `
		SELECT p.c, p.x FROM unnest($2::uuid[], $3::uuid[]) AS p(c, x)
		WHERE NOT EXISTS (SELECT 1 FROM transfers z WHERE z.outflow_transaction_id = p.x)
			AND NOT EXISTS (SELECT 1 FROM transfers z WHERE z.inflow_transaction_id = p.x)
			AND NOT EXISTS (SELECT 1 FROM transfer_rejections r WHERE r.user_id = $1
				AND ((r.outflow_transaction_id = p.c AND r.inflow_transaction_id = p.x)
					OR (r.outflow_transaction_id = p.x AND r.inflow_transaction_id = p.c)))`, userID, cs, xs)
	if err != nil {
		return nil, fmt.Errorf("detect transfers: check candidates: %w", err)
	}
	pairs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([2]uuid.UUID, error) {
		var p [2]uuid.UUID
		return p, r.Scan(&p[0], &p[1])
	})
	if err != nil {
		return nil, fmt.Errorf("detect transfers: check candidates: %w", err)
	}
	return pairs, nil
}

// boundCandidates keeps, per row, its maxTransferCandidates candidates
// closest in date (then by id), and returns the rows that had more:
// crowded, as candidatePairs reports them.
func boundCandidates(pairs [][2]uuid.UUID, rows []detectRow, stored []windowRow) ([][2]uuid.UUID, map[[16]byte]bool) {
	day := make(map[[16]byte]int64, len(rows))
	for _, r := range rows {
		day[r.id] = r.day
	}
	xday := map[[16]byte]int64{}
	for _, w := range stored {
		xday[w.id] = w.day
	}
	slices.SortFunc(pairs, func(a, b [2]uuid.UUID) int {
		if c := slices.Compare(a[0][:], b[0][:]); c != 0 {
			return c
		}
		ga, gb := abs64(xday[a[1]]-day[a[0]]), abs64(xday[b[1]]-day[b[0]])
		if ga != gb {
			return int(ga - gb)
		}
		return slices.Compare(a[1][:], b[1][:])
	})
	crowded := map[[16]byte]bool{}
	var out [][2]uuid.UUID
	var prev uuid.UUID
	n := 0
	for i, p := range pairs {
		if i == 0 || p[0] != prev {
			n, prev = 0, p[0]
		}
		n++
		if n > maxTransferCandidates {
			crowded[p[0]] = true
			continue
		}
		out = append(out, p)
	}
	return out, crowded
}

// abs64 is |v|.
func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
