package storage

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// DetectTransfers pairs the user's transactions ids (new or changed rows)
// with the other side of a transfer in another of the user's accounts, in
// one database transaction: the detection a sync runs on each batch, for a
// write that changes a manual account's transactions, or a re-run. It is
// idempotent: rows already paired are left alone and a pass over unchanged
// rows pairs nothing new. Caveat: it pairs only rows among ids (and their
// counterparts); it does not revisit the user's other unpaired rows.
func (s *Store) DetectTransfers(ctx context.Context, userID uuid.UUID, ids []uuid.UUID) (int, error) {
	var n int
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		n, err = detectTransfers(ctx, tx, userID, ids)
		return err
	})
	return n, err
}

// detectTransfers pairs rows among changed with their counterparts, inside
// tx, and returns how many pairs it stored. It takes a transaction-level
// advisory lock on the user first, so that two syncs of the user's
// connections writing the two sides of a transfer at once detect it in
// turn (the second sees the first's committed row) instead of both
// missing it. Candidates come from SQL (equal absolute amounts in the
// date window, on transactions_transfer_match_idx; cross-currency rows by
// date); scoring and the choice are scoreTransfer and chooseTransfers.
func detectTransfers(ctx context.Context, tx pgx.Tx, userID uuid.UUID, changed []uuid.UUID) (int, error) {
	if len(changed) == 0 {
		return 0, nil
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('transfers:' || $1::text, 0))`, userID); err != nil {
		return 0, fmt.Errorf("detect transfers: lock user: %w", err)
	}
	pairs, err := candidatePairs(ctx, tx, userID, changed)
	if err != nil || len(pairs) == 0 {
		return 0, err
	}
	want := make(map[[16]byte]bool, len(changed))
	for _, id := range changed {
		want[id] = true
	}
	// The candidates' own candidates decide whether a candidate fits one
	// changed row better than any other.
	var others []uuid.UUID
	seen := map[[16]byte]bool{}
	for _, p := range pairs {
		if !want[p[1]] && !seen[p[1]] {
			seen[p[1]] = true
			others = append(others, p[1])
		}
	}
	more, err := candidatePairs(ctx, tx, userID, others)
	if err != nil {
		return 0, err
	}
	edges, err := scoredEdges(ctx, tx, userID, append(pairs, more...))
	if err != nil {
		return 0, err
	}
	return insertDetected(ctx, tx, userID, chooseTransfers(edges, want))
}

// candidatePairs returns, for each of ids that is live and unpaired, the
// live, unpaired rows of the user's other accounts that could be its other
// side: the opposite sign, the same absolute amount and currency within
// the date window, or (a row whose description says transfer) another
// currency within the cross-currency window. Pairs the user rejected are
// left out.
func candidatePairs(ctx context.Context, tx pgx.Tx, userID uuid.UUID, ids []uuid.UUID) ([][2]uuid.UUID, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, candidatePairsSQL, userID, ids, maxTransferLagDays, maxCrossCurrencyDays, transferWordsPattern())
	if err != nil {
		return nil, fmt.Errorf("detect transfers: candidates: %w", err)
	}
	pairs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([2]uuid.UUID, error) {
		var p [2]uuid.UUID
		return p, r.Scan(&p[0], &p[1])
	})
	if err != nil {
		return nil, fmt.Errorf("detect transfers: candidates: %w", err)
	}
	return pairs, nil
}

// transferWordsPattern is transferWords as a POSIX regular expression.
func transferWordsPattern() string {
	p := ""
	for i, w := range transferWords {
		if i > 0 {
			p += "|"
		}
		p += w
	}
	return p
}

// candidatePairsSQL: $1 user, $2 the rows, $3 the same-currency window in
// days either side, $4 the cross-currency window, $5 the transfer words.
const candidatePairsSQL = `
WITH c AS (
	SELECT t.id, t.account_id, t.amount, t.currency, t.tx_date,
		lower(concat_ws(' ', t.summary, t.original_description, t.merchant_name)) AS text
	FROM transactions t
	WHERE t.id = ANY($2) AND t.user_id = $1 AND t.status <> 'deleted' AND t.amount <> 0
		AND NOT EXISTS (SELECT 1 FROM transfers z WHERE z.outflow_transaction_id = t.id AND z.user_id = $1)
		AND NOT EXISTS (SELECT 1 FROM transfers z WHERE z.inflow_transaction_id = t.id AND z.user_id = $1)
)
SELECT c.id, x.id FROM c
JOIN LATERAL (
	SELECT x.id FROM transactions x
	WHERE x.user_id = $1 AND abs(x.amount) = abs(c.amount) AND x.status <> 'deleted'
		AND x.tx_date BETWEEN c.tx_date - $3::int AND c.tx_date + $3::int
		AND x.currency = c.currency AND x.account_id <> c.account_id AND sign(x.amount) = -sign(c.amount)
	UNION ALL
	SELECT x.id FROM transactions x
	WHERE c.text ~ $5 AND x.user_id = $1 AND x.status <> 'deleted'
		AND x.tx_date BETWEEN c.tx_date - $4::int AND c.tx_date + $4::int
		AND x.currency <> c.currency AND x.account_id <> c.account_id AND sign(x.amount) = -sign(c.amount)
) x ON true
WHERE NOT EXISTS (SELECT 1 FROM transfers z WHERE z.outflow_transaction_id = x.id AND z.user_id = $1)
	AND NOT EXISTS (SELECT 1 FROM transfers z WHERE z.inflow_transaction_id = x.id AND z.user_id = $1)
	AND NOT EXISTS (SELECT 1 FROM transfer_rejections r WHERE r.user_id = $1
		AND ((r.outflow_transaction_id = c.id AND r.inflow_transaction_id = x.id)
			OR (r.outflow_transaction_id = x.id AND r.inflow_transaction_id = c.id)))`

// scoredEdges loads both sides of each distinct pair and scores it.
func scoredEdges(ctx context.Context, tx pgx.Tx, userID uuid.UUID, pairs [][2]uuid.UUID) ([]transferEdge, error) {
	var ids []uuid.UUID
	seen := map[[16]byte]bool{}
	for _, p := range pairs {
		for _, id := range p {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	sides, err := loadTransferSides(ctx, tx, userID, ids)
	if err != nil {
		return nil, err
	}
	edges := make([]transferEdge, 0, len(pairs))
	done := map[[2]uuid.UUID]bool{}
	for _, p := range pairs {
		a, b := sides[p[0]], sides[p[1]]
		if a == nil || b == nil {
			continue
		}
		if a.minor > 0 {
			a, b = b, a
		}
		key := [2]uuid.UUID{a.id, b.id}
		if done[key] {
			continue
		}
		done[key] = true
		edges = append(edges, transferEdge{out: a, in: b, score: scoreTransfer(a, b)})
	}
	return edges, nil
}

// loadTransferSides reads the rows ids as scoring sees them.
func loadTransferSides(ctx context.Context, tx pgx.Tx, userID uuid.UUID, ids []uuid.UUID) (map[[16]byte]*transferSide, error) {
	rows, err := tx.Query(ctx, `
		SELECT t.id, t.account_id, (t.amount * 10000)::bigint, t.currency, (t.tx_date - DATE '2000-01-01')::bigint,
			lower(concat_ws(' ', t.summary, t.original_description, t.merchant_name)), a.name, COALESCE(a.mask, '')
		FROM transactions t JOIN accounts a ON a.id = t.account_id AND a.user_id = t.user_id
		WHERE t.id = ANY($2) AND t.user_id = $1`, userID, ids)
	if err != nil {
		return nil, fmt.Errorf("detect transfers: load rows: %w", err)
	}
	out := make(map[[16]byte]*transferSide, len(ids))
	var s transferSide
	var id, acct uuid.UUID
	_, err = pgx.ForEachRow(rows, []any{&id, &acct, &s.minor, &s.currency, &s.day, &s.text, &s.accountName, &s.accountMask}, func() error {
		side := s
		side.id, side.accountID = id, acct
		out[id] = &side
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("detect transfers: load rows: %w", err)
	}
	return out, nil
}

// insertDetected stores the chosen pairs (source detected) and returns how
// many it stored; a pair one of whose rows got paired meanwhile is skipped.
func insertDetected(ctx context.Context, tx pgx.Tx, userID uuid.UUID, chosen []transferEdge) (int, error) {
	if len(chosen) == 0 {
		return 0, nil
	}
	outs, ins := make([]uuid.UUID, len(chosen)), make([]uuid.UUID, len(chosen))
	confs, reasons := make([]float64, len(chosen)), make([]string, len(chosen))
	for i, e := range chosen {
		outs[i], ins[i], confs[i] = e.out.id, e.in.id, e.score.confidence
		reasons[i] = joinReasons(e.score.reasons)
	}
	tag, err := tx.Exec(ctx, `
		INSERT INTO transfers (user_id, outflow_transaction_id, inflow_transaction_id, outflow_account_id,
			inflow_account_id, date, amount, currency, inflow_amount, inflow_currency, confidence, source, reasons)
		SELECT $1, o.id, i.id, o.account_id, i.account_id, o.tx_date, -o.amount, o.currency, i.amount, i.currency,
			c.conf, 'detected', string_to_array(c.reasons, ',')
		FROM unnest($2::uuid[], $3::uuid[], $4::float8[], $5::text[]) AS c(out_id, in_id, conf, reasons)
		JOIN transactions o ON o.id = c.out_id AND o.user_id = $1
		JOIN transactions i ON i.id = c.in_id AND i.user_id = $1
		ON CONFLICT DO NOTHING`, userID, outs, ins, confs, reasons)
	if err != nil {
		return 0, fmt.Errorf("detect transfers: store pairs: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// joinReasons joins reasons with commas (no reason contains one).
func joinReasons(rs []string) string {
	out := ""
	for i, r := range rs {
		if i > 0 {
			out += ","
		}
		out += r
	}
	return out
}

// dropDeletedTransfers removes the user's transfers one of whose
// transactions is deleted (a removal by the provider, a pending row that
// vanished). Rejections stay.
func dropDeletedTransfers(ctx context.Context, tx pgx.Tx, userID uuid.UUID) error {
	_, err := tx.Exec(ctx, `
		DELETE FROM transfers tr WHERE tr.user_id = $1 AND EXISTS (SELECT 1 FROM transactions t
			WHERE t.user_id = $1 AND t.id IN (tr.outflow_transaction_id, tr.inflow_transaction_id) AND t.status = 'deleted')`, userID)
	if err != nil {
		return fmt.Errorf("drop transfers of removed transactions: %w", err)
	}
	return nil
}

// carryTransfers moves transfers and rejections from pending transactions
// to the posted ones that replace them: ids are changed rows that name a
// pending transaction, pendingIDs the provider ids they name (as
// carryUserCategories). One indexed look-up finds whether any named
// pending row is paired or rejected at all; only then are rows moved.
func (w *transactionWriter) carryTransfers(ctx context.Context, ids []uuid.UUID, pendingIDs []string) error {
	if len(ids) == 0 {
		return nil
	}
	uid := w.conn.UserID
	rows, err := w.tx.Query(ctx, `
		SELECT c.id, p.id FROM unnest($2::uuid[], $3::text[]) AS c(id, pid)
		JOIN transactions p ON p.bank_connection_id = $1 AND p.provider_id = c.pid AND p.user_id = $4 AND p.id <> c.id
		WHERE EXISTS (SELECT 1 FROM transfers z WHERE z.outflow_transaction_id = p.id AND z.user_id = $4)
			OR EXISTS (SELECT 1 FROM transfers z WHERE z.inflow_transaction_id = p.id AND z.user_id = $4)
			OR EXISTS (SELECT 1 FROM transfer_rejections r WHERE r.outflow_transaction_id = p.id AND r.user_id = $4)
			OR EXISTS (SELECT 1 FROM transfer_rejections r WHERE r.inflow_transaction_id = p.id AND r.user_id = $4)`,
		w.conn.ID, ids, pendingIDs, uid)
	if err != nil {
		return fmt.Errorf("carry transfers to posted transactions: %w", err)
	}
	var posted, pending []uuid.UUID
	var a, b uuid.UUID
	if _, err := pgx.ForEachRow(rows, []any{&a, &b}, func() error {
		posted, pending = append(posted, a), append(pending, b)
		return nil
	}); err != nil {
		return fmt.Errorf("carry transfers to posted transactions: %w", err)
	}
	if len(posted) == 0 {
		return nil
	}
	for _, side := range []string{"outflow", "inflow"} {
		if _, err := w.tx.Exec(ctx, carryTransfersSQL(side), uid, posted, pending); err != nil {
			return fmt.Errorf("carry %s transfers to posted transactions: %w", side, err)
		}
	}
	return nil
}

// carryTransfersSQL moves side's transfers ($1 user; $2 posted rows, $3
// the pending rows they replace) unless the posted row is paired already,
// and copies side's rejections.
func carryTransfersSQL(side string) string {
	col := side + "_transaction_id"
	set := col + " = m.posted"
	if side == "outflow" {
		set += ", date = pt.tx_date, amount = abs(pt.amount), currency = pt.currency"
	} else {
		set += ", inflow_amount = abs(pt.amount), inflow_currency = pt.currency"
	}
	return `
WITH m AS (SELECT * FROM unnest($2::uuid[], $3::uuid[]) AS m(posted, pending)),
moved AS (
	UPDATE transfers tr SET ` + set + `
	FROM m JOIN transactions pt ON pt.id = m.posted AND pt.user_id = $1
	WHERE tr.user_id = $1 AND tr.` + col + ` = m.pending AND pt.amount <> 0
		AND NOT EXISTS (SELECT 1 FROM transfers z WHERE z.outflow_transaction_id = m.posted AND z.user_id = $1)
		AND NOT EXISTS (SELECT 1 FROM transfers z WHERE z.inflow_transaction_id = m.posted AND z.user_id = $1)
	RETURNING 1
)
INSERT INTO transfer_rejections (user_id, outflow_transaction_id, inflow_transaction_id)
SELECT $1, ` + rejectionCols(side) + `
FROM transfer_rejections r JOIN m ON r.` + col + ` = m.pending
WHERE r.user_id = $1
ON CONFLICT DO NOTHING`
}

// rejectionCols is the outflow and inflow columns of a rejection copied to
// the posted row on side.
func rejectionCols(side string) string {
	if side == "outflow" {
		return "m.posted, r.inflow_transaction_id"
	}
	return "r.outflow_transaction_id, m.posted"
}
