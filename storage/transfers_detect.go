package storage

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/finsync/finsync/domain"
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
// tx, and returns how many pairs it stored: detectRows on the rows that
// are live, non-zero and unpaired.
func detectTransfers(ctx context.Context, tx pgx.Tx, userID uuid.UUID, changed []uuid.UUID) (int, error) {
	if len(changed) == 0 {
		return 0, nil
	}
	rows, accts, err := beginDetection(ctx, tx, userID, changed)
	if err != nil {
		return 0, err
	}
	return detectRows(ctx, tx, userID, rows, accts, nil)
}

// detectSynced pairs a sync batch's rows: copied (rows copied in fresh,
// as copied) and written (rows upserted, read as stored). A batch of at
// least windowFrom copied rows (and no other) is matched against the rows
// the session copied (mem: those before the batch, and the batch's once
// its match noted them), with the batch's in-memory match when it was
// started while the batch was copied (pre, may be nil); any other batch
// reads its window's rows from the database.
func detectSynced(ctx context.Context, tx pgx.Tx, conn domain.BankConnection, copied []detectRow, written []uuid.UUID, windowFrom int, mem *sessionRows, pre *windowMatch) error {
	rows, accts, err := beginDetection(ctx, tx, conn.UserID, written)
	if err != nil {
		return err
	}
	var window *windowSearch
	if len(copied) >= windowFrom && len(rows) == 0 {
		window = &windowSearch{connID: conn.ID, mem: mem, pre: pre}
	}
	_, err = detectRows(ctx, tx, conn.UserID, append(rows, copied...), accts, window)
	return err
}

// beginDetection starts a detection pass in tx, in one round trip: it
// takes a transaction-level advisory lock on the user's transfers, so that
// two syncs of the user's connections writing the two sides of a transfer
// at once detect it in turn (the second sees the first's committed row)
// instead of both missing it; then, each statement reading after the lock
// is held, it reads those of ids that detection pairs (loadDetectRows),
// the user's accounts and whether the user rejected any pair. It also
// turns JIT compilation off for the rest of tx: detection's statements are
// short index ranges and probes whose estimated cost can cross the JIT
// threshold on a large batch, and compiling them costs more than running
// them.
func beginDetection(ctx context.Context, tx pgx.Tx, userID uuid.UUID, ids []uuid.UUID) ([]detectRow, *userAccounts, error) {
	var rows []detectRow
	var accts *userAccounts
	var rejections bool
	var batch pgx.Batch
	batch.Queue(lockTransfersSQL+`, set_config('jit', 'off', true)`, userID)
	if len(ids) > 0 {
		batch.Queue(detectRowsSQL, userID, ids).Query(func(res pgx.Rows) error {
			var err error
			rows, err = scanDetectRows(res)
			return err
		})
	}
	batch.Queue(userAccountsSQL, userID).Query(func(res pgx.Rows) error {
		var err error
		accts, err = scanUserAccounts(res)
		return err
	})
	batch.Queue(`SELECT EXISTS (SELECT 1 FROM transfer_rejections WHERE user_id = $1)`, userID).QueryRow(func(row pgx.Row) error {
		return row.Scan(&rejections)
	})
	if err := tx.SendBatch(ctx, &batch).Close(); err != nil {
		return nil, nil, fmt.Errorf("detect transfers: begin: %w", err)
	}
	accts.rejections = rejections
	return rows, accts, nil
}

// detectRow is a row detection pairs, as candidate search reads it.
type detectRow struct {
	id, accountID uuid.UUID
	// minor is the amount in ten-thousandths (negative: an outflow) and
	// day the transaction's date (posted, else authorized) in days since
	// 2000-01-01, as transferSide has them.
	minor, day int64
	currency   string
	// text is the summary, original description and merchant, lower-cased,
	// for a row read from the database. A row just copied in keeps them as
	// reported (summary, original, merchant) and lower-cases them only when
	// read (lowerText): most rows are never scored.
	text               string
	summary            string
	original, merchant *string
	// paired is set on a row read from the database that was paired when
	// read (readWindow).
	paired bool
}

// lowerText is the row's text: the summary, original description and
// merchant, lower-cased, as the database's rows read them.
func (r *detectRow) lowerText() string {
	if r.text != "" || (r.summary == "" && r.original == nil && r.merchant == nil) {
		return r.text
	}
	n := len(r.summary)
	for _, p := range []*string{r.original, r.merchant} {
		if p != nil {
			n += 1 + len(*p)
		}
	}
	var b strings.Builder
	b.Grow(n)
	writeLower(&b, r.summary)
	for _, p := range []*string{r.original, r.merchant} {
		if p != nil {
			b.WriteByte(' ')
			writeLower(&b, *p)
		}
	}
	return b.String()
}

// writeLower writes s lower-cased to b: byte by byte when s is ASCII (as
// strings.ToLower would, without its copy), else by strings.ToLower.
func writeLower(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			b.WriteString(strings.ToLower(s))
			return
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
}

// dayZero is the date detectRow and transferSide count days from.
var dayZero = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// daysSinceZero is d in days since dayZero.
func daysSinceZero(d domain.Date) int64 {
	return int64(d.Sub(dayZero).Hours() / 24)
}

// freshDetectRows are rows just copied in (with their new ids, in order)
// as detection reads them: a fresh batch's rows are not read back.
func freshDetectRows(txs []domain.Transaction, ids []uuid.UUID) []detectRow {
	out := make([]detectRow, 0, len(ids))
	for i := range ids {
		t := &txs[i]
		d := t.Day()
		if d == nil || t.Amount.IsZero() {
			continue
		}
		out = append(out, detectRow{id: ids[i], accountID: t.AccountID,
			minor: tenThousandths(t.Amount.Decimal()), day: daysSinceZero(*d),
			currency: t.Currency, summary: t.Summary, original: t.OriginalDescription, merchant: t.MerchantName})
	}
	return out
}

// tenThousandths is d in ten-thousandths, rounded as the database's
// (amount * 10000)::bigint rounds: exactly from the coefficient when d has
// at most four decimals and fourteen digits (every amount a provider
// reports in minor units), else by decimal arithmetic.
func tenThousandths(d decimal.Decimal) int64 {
	exp := d.Exponent()
	if exp > 0 || exp < -4 || d.NumDigits() > 14 {
		return d.Shift(4).Round(0).IntPart()
	}
	n := d.CoefficientInt64()
	for ; exp > -4; exp-- {
		n *= 10
	}
	return n
}

// loadDetectRows reads those of ids that are the user's, live, non-zero
// and unpaired (detectRowsSQL).
func loadDetectRows(ctx context.Context, tx pgx.Tx, userID uuid.UUID, ids []uuid.UUID) ([]detectRow, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, detectRowsSQL, userID, ids)
	if err != nil {
		return nil, fmt.Errorf("detect transfers: load changed rows: %w", err)
	}
	return scanDetectRows(rows)
}

// detectRowsSQL reads those of ids ($2) that are the user's ($1), live,
// non-zero and unpaired, as detectRow: one primary-key look-up per id (a
// lateral probe, whatever the planner's statistics of a table a sync is
// filling say).
const detectRowsSQL = `
	SELECT t.id, t.account_id, (t.amount * 10000)::bigint, (t.tx_date - DATE '2000-01-01')::bigint, t.currency, t.text
	FROM unnest($2::uuid[]) AS i(id)
	CROSS JOIN LATERAL (
		SELECT t.id, t.account_id, t.amount, t.currency, t.tx_date,
			lower(concat_ws(' ', t.summary, t.original_description, t.merchant_name)) AS text
		FROM transactions t
		WHERE t.id = i.id AND t.user_id = $1 AND t.status <> 'deleted' AND t.amount <> 0 AND t.tx_date IS NOT NULL
		LIMIT 1
	) t
	WHERE NOT EXISTS (SELECT 1 FROM transfers z WHERE z.outflow_transaction_id = t.id)
		AND NOT EXISTS (SELECT 1 FROM transfers z WHERE z.inflow_transaction_id = t.id)`

// scanDetectRows reads the rows of detectRowsSQL and closes them.
func scanDetectRows(rows pgx.Rows) ([]detectRow, error) {
	var out []detectRow
	var r detectRow
	_, err := pgx.ForEachRow(rows, []any{&r.id, &r.accountID, &r.minor, &r.day, &r.currency, &r.text}, func() error {
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("detect transfers: load changed rows: %w", err)
	}
	return out, nil
}

// windowSearch is where windowCandidates finds a batch's rows' other
// sides besides the database: the connection whose session copied the
// batch, the rows the session copied before (nil: read every day of the
// window from the database), and the batch's in-memory match when it was
// started already (nil: found in place). The zero value reads the
// database only.
type windowSearch struct {
	connID uuid.UUID
	mem    *sessionRows
	pre    *windowMatch
}

// detectRows pairs rows with their counterparts and stores the pairs
// chosen. Candidates come from windowCandidates (window nil: from the
// database alone); the candidates' own candidates decide whether a
// candidate fits one row better than any other; scoring and the choice
// are scoreTransfer and chooseTransfers. Caveat: the caller began the
// pass (beginDetection: the lock, rows and accts).
func detectRows(ctx context.Context, tx pgx.Tx, userID uuid.UUID, rows []detectRow, accts *userAccounts, window *windowSearch) (int, error) {
	if len(rows) == 0 {
		return 0, nil
	}
	if window == nil {
		window = &windowSearch{}
	}
	want := make(map[[16]byte]bool, len(rows))
	for _, r := range rows {
		want[r.id] = true
	}
	pairs, crowded, known, err := windowCandidates(ctx, tx, userID, window.connID, rows, accts, window.mem, window.pre)
	if err != nil || len(pairs) == 0 {
		return 0, err
	}
	edges, err := scoredEdges(ctx, tx, userID, pairs, known, accts)
	if err != nil {
		return 0, err
	}
	return insertDetected(ctx, tx, userID, chooseTransfers(edges, want, crowded))
}

// userAccounts are the user's accounts as one detection pass reads them,
// once: their names and masks (scoring), whether they are in more than one
// currency (only then is there a cross-currency candidate to look for) and
// their connections (which accounts lie outside a connection); and whether
// the user rejected any pair (only then are candidates checked against
// the rejections).
type userAccounts struct {
	byID       map[[16]byte]accountFacts
	cross      bool
	rejections bool
}

// accountFacts is what detection reads of an account.
type accountFacts struct {
	name, mask string
	// conn is the account's connection (invalid: a manual account).
	conn uuid.NullUUID
}

// userAccountsSQL reads the user's ($1) accounts (scanUserAccounts).
const userAccountsSQL = `SELECT id, name, COALESCE(mask, ''), currency, bank_connection_id FROM accounts WHERE user_id = $1`

// scanUserAccounts reads the rows of userAccountsSQL and closes them.
func scanUserAccounts(rows pgx.Rows) (*userAccounts, error) {
	out := &userAccounts{byID: map[[16]byte]accountFacts{}}
	var id uuid.UUID
	var f accountFacts
	var currency, first string
	if _, err := pgx.ForEachRow(rows, []any{&id, &f.name, &f.mask, &currency, &f.conn}, func() error {
		out.byID[id] = f
		if first == "" {
			first = currency
		}
		out.cross = out.cross || currency != first
		return nil
	}); err != nil {
		return nil, fmt.Errorf("detect transfers: accounts: %w", err)
	}
	return out, nil
}

// outside returns the accounts outside connection conn (manual ones
// included).
func (a *userAccounts) outside(conn uuid.UUID) []uuid.UUID {
	var out []uuid.UUID
	for id, f := range a.byID {
		if !f.conn.Valid || f.conn.UUID != conn {
			out = append(out, id)
		}
	}
	return out
}

// maxTransferCandidates is the most same-currency candidates a row
// considers: a row with more (a common amount among many equal rows in
// the user's other accounts within the window) is crowded and stays
// unpaired, since no candidate among so many can beat the others by the
// margin on the evidence scoring weighs. The bound keeps the pairs scored
// per row constant; the rows matched in memory still grow with the equal
// amounts in the window.
const maxTransferCandidates = 8

// crossPairs returns, for each of rows whose description says transfer,
// the live, unpaired rows of the user's accounts in another currency with
// the opposite sign dated within maxCrossCurrencyDays, as pairs (the
// row's id first). Pairs the user rejected are left out.
func crossPairs(ctx context.Context, tx pgx.Tx, userID uuid.UUID, rows []detectRow) ([][2]uuid.UUID, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	ids, accts := make([]uuid.UUID, len(rows)), make([]uuid.UUID, len(rows))
	minors, days := make([]int64, len(rows)), make([]int64, len(rows))
	currencies, texts := make([]string, len(rows)), make([]string, len(rows))
	for i, r := range rows {
		ids[i], accts[i], minors[i], days[i], currencies[i], texts[i] = r.id, r.accountID, r.minor, r.day, r.currency, r.lowerText()
	}
	res, err := tx.Query(ctx, crossPairsSQL, userID, ids, accts, minors, currencies, days, texts,
		maxCrossCurrencyDays, transferWordsPattern())
	if err != nil {
		return nil, fmt.Errorf("detect transfers: cross-currency candidates: %w", err)
	}
	pairs, err := pgx.CollectRows(res, func(row pgx.CollectableRow) ([2]uuid.UUID, error) {
		var p [2]uuid.UUID
		return p, row.Scan(&p[0], &p[1])
	})
	if err != nil {
		return nil, fmt.Errorf("detect transfers: cross-currency candidates: %w", err)
	}
	return pairs, nil
}

// transferWordsPattern is transferWords as a POSIX regular expression.
func transferWordsPattern() string {
	return strings.Join(transferWords, "|")
}

// crossPairsSQL: $1 user; the rows as arrays: $2 ids, $3 accounts, $4
// amounts in ten-thousandths, $5 currencies, $6 dates in days since
// 2000-01-01, $7 texts; $8 the cross-currency window in days either side,
// $9 the transfer words. For a row whose text says transfer, it reads the
// window of each of the user's accounts in another currency on
// transactions_account_order_idx; each result is the row's id and the
// candidate's.
const crossPairsSQL = `
WITH c AS (
	SELECT c.id, c.account_id, sign(c.minor)::numeric AS sign, c.currency, DATE '2000-01-01' + c.day::int AS tx_date, c.text
	FROM unnest($2::uuid[], $3::uuid[], $4::int8[], $5::text[], $6::int8[], $7::text[])
		AS c(id, account_id, minor, currency, day, text)
)
SELECT c.id, x.id FROM c
JOIN accounts a ON a.user_id = $1 AND a.currency <> c.currency AND a.id <> c.account_id
JOIN transactions x ON x.account_id = a.id AND x.user_id = $1
	AND x.tx_date BETWEEN c.tx_date - $8::int AND c.tx_date + $8::int
WHERE c.text ~ $9 AND x.status <> 'deleted' AND x.currency <> c.currency AND sign(x.amount) = -c.sign
	AND NOT EXISTS (SELECT 1 FROM transfers z WHERE z.outflow_transaction_id = x.id)
	AND NOT EXISTS (SELECT 1 FROM transfers z WHERE z.inflow_transaction_id = x.id)
	AND NOT EXISTS (SELECT 1 FROM transfer_rejections r WHERE r.user_id = $1
		AND ((r.outflow_transaction_id = c.id AND r.inflow_transaction_id = x.id)
			OR (r.outflow_transaction_id = x.id AND r.inflow_transaction_id = c.id)))`

// scoredEdges loads both sides of each distinct pair and scores it.
// Sides already known (known, may be nil) are not read again; the others
// take their account's name and mask from accts.
func scoredEdges(ctx context.Context, tx pgx.Tx, userID uuid.UUID, pairs [][2]uuid.UUID, known map[[16]byte]*transferSide, accts *userAccounts) ([]transferEdge, error) {
	var ids []uuid.UUID
	seen := map[[16]byte]bool{}
	for _, p := range pairs {
		for _, id := range p {
			if !seen[id] && known[id] == nil {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	sides := known
	if len(ids) > 0 {
		loaded, err := loadTransferSides(ctx, tx, userID, ids, accts)
		if err != nil {
			return nil, err
		}
		if sides == nil {
			sides = loaded
		} else {
			for id, side := range loaded {
				sides[id] = side
			}
		}
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

// loadTransferSides reads the rows ids as scoring sees them: a primary-key
// look-up per id (a lateral probe, whatever the statistics of a table a
// sync is filling say), each with its account's name and mask from
// accts (the pass read the user's accounts once).
func loadTransferSides(ctx context.Context, tx pgx.Tx, userID uuid.UUID, ids []uuid.UUID, accts *userAccounts) (map[[16]byte]*transferSide, error) {
	rows, err := tx.Query(ctx, `
		SELECT t.id, t.account_id, (t.amount * 10000)::bigint, t.currency, (t.tx_date - DATE '2000-01-01')::bigint,
			lower(concat_ws(' ', t.summary, t.original_description, t.merchant_name))
		FROM unnest($2::uuid[]) AS i(id)
		CROSS JOIN LATERAL (SELECT t.* FROM transactions t WHERE t.id = i.id AND t.user_id = $1 LIMIT 1) t`, userID, ids)
	if err != nil {
		return nil, fmt.Errorf("detect transfers: load rows: %w", err)
	}
	out := make(map[[16]byte]*transferSide, len(ids))
	var s transferSide
	var id, acct uuid.UUID
	_, err = pgx.ForEachRow(rows, []any{&id, &acct, &s.minor, &s.currency, &s.day, &s.text}, func() error {
		a, ok := accts.byID[acct]
		if !ok {
			return nil // the account went meanwhile: no side to score
		}
		side := s
		side.id, side.accountID, side.accountName, side.accountMask = id, acct, a.name, a.mask
		out[id] = &side
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("detect transfers: load rows: %w", err)
	}
	return out, nil
}

// insertDetected stores the chosen pairs as detected transfers, from the
// sides as scoring read them (each amount in ten-thousandths, as the
// column's scale stores it: exact), with ids in time order
// (newOrderedIDs: a batch's pairs land together in the primary key), and
// returns how many it stored. A pair whose row was paired meanwhile is
// skipped (ON CONFLICT).
func insertDetected(ctx context.Context, tx pgx.Tx, userID uuid.UUID, chosen []transferEdge) (int, error) {
	if len(chosen) == 0 {
		return 0, nil
	}
	n := len(chosen)
	ids, err := newOrderedIDs(n)
	if err != nil {
		return 0, fmt.Errorf("detect transfers: %w", err)
	}
	outs, ins, outAccts, inAccts := make([]uuid.UUID, n), make([]uuid.UUID, n), make([]uuid.UUID, n), make([]uuid.UUID, n)
	days, amounts, inAmounts := make([]int64, n), make([]int64, n), make([]int64, n)
	currencies, inCurrencies := make([]string, n), make([]string, n)
	confs, reasons := make([]float64, n), make([]string, n)
	for i, e := range chosen {
		outs[i], ins[i], outAccts[i], inAccts[i] = e.out.id, e.in.id, e.out.accountID, e.in.accountID
		days[i], amounts[i], inAmounts[i] = e.out.day, -e.out.minor, e.in.minor
		currencies[i], inCurrencies[i] = e.out.currency, e.in.currency
		confs[i], reasons[i] = e.score.confidence, joinReasons(e.score.reasons)
	}
	tag, err := tx.Exec(ctx, `
		INSERT INTO transfers (id, user_id, outflow_transaction_id, inflow_transaction_id, outflow_account_id,
			inflow_account_id, date, amount, currency, inflow_amount, inflow_currency, confidence, source, reasons)
		SELECT c.id, $1, c.out_id, c.in_id, c.out_acct, c.in_acct, DATE '2000-01-01' + c.day::int, c.amount * 0.0001, c.currency,
			c.in_amount * 0.0001, c.in_currency, c.conf, 'detected', string_to_array(c.reasons, ',')
		FROM unnest($2::uuid[], $3::uuid[], $4::uuid[], $5::uuid[], $6::int8[], $7::int8[], $8::text[], $9::int8[], $10::text[],
			$11::float8[], $12::text[], $13::uuid[])
			AS c(out_id, in_id, out_acct, in_acct, day, amount, currency, in_amount, in_currency, conf, reasons, id)
		ON CONFLICT DO NOTHING`, userID, outs, ins, outAccts, inAccts, days, amounts, currencies, inAmounts, inCurrencies, confs, reasons, ids)
	if err != nil {
		return 0, fmt.Errorf("detect transfers: store pairs: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// joinReasons joins reasons with commas (no reason contains one).
func joinReasons(rs []string) string {
	return strings.Join(rs, ",")
}

// carryTransfers moves transfers and rejections from pending transactions
// to the posted ones that replace them: ids are changed rows that name a
// pending transaction, pendingIDs the provider ids they name (as
// carryUserCategories). One indexed look-up finds whether any named
// pending row is paired or rejected at all; only then are rows moved.
// When the writer knows every pending row the connection has stored
// (pendingStored), only rows naming one of them are looked up: a first
// sync's posted rows mostly name pending rows it never received.
func (w *transactionWriter) carryTransfers(ctx context.Context, ids []uuid.UUID, pendingIDs []string) error {
	ids, pendingIDs = w.namingStoredPending(ids, pendingIDs)
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

// namingStoredPending keeps the rows (ids, with the pending provider ids
// they name) whose pending row may be stored: all of them unless the
// writer knows the connection's stored pending rows (pendingStored).
// Caveat: with pendingStored known, a row the run stored as posted and a
// later row names as its pending one carries nothing; no provider names a
// posted row so (Plaid, the one that names pending rows, gives them ids of
// their own).
func (w *transactionWriter) namingStoredPending(ids []uuid.UUID, pendingIDs []string) ([]uuid.UUID, []string) {
	if w.pendingStored == nil {
		return ids, pendingIDs
	}
	var keptIDs []uuid.UUID
	var keptPending []string
	for i, pid := range pendingIDs {
		if _, ok := w.pendingStored[pid]; ok {
			keptIDs, keptPending = append(keptIDs, ids[i]), append(keptPending, pid)
		}
	}
	return keptIDs, keptPending
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
