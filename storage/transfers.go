package storage

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/shopspring/decimal"

	"github.com/finsync/finsync/domain"
)

// ErrTransferConflict is returned when a pair is asked for whose outflow
// or inflow is already a side of a transfer.
var ErrTransferConflict = errors.New("transaction already paired")

// TransferInvalidError says why two transactions cannot be paired; its
// message is for the API client.
type TransferInvalidError struct{ Msg string }

// Error returns the message for the client.
func (e *TransferInvalidError) Error() string { return e.Msg }

// Transfer listing filters: whether a transaction listing includes the
// transactions that are a side of a transfer the scope sees.
const (
	TransfersInclude = "include"
	TransfersExclude = "exclude"
	TransfersOnly    = "only"
)

// visibleTransfer is the SQL condition "transfer tr is one the scope
// sees": the user's, with both accounts in a scoped credential's scope.
func visibleTransfer(w *where, sc Scope) string {
	return w.expr(func(x *where) {
		x.add("tr.user_id = ?", sc.UserID)
		x.inScope("tr.outflow_account_id", sc)
		x.inScope("tr.inflow_account_id", sc)
	})
}

// transferIDColumn is the SQL expression of the transfer of transaction
// alias t that the scope sees, or NULL. A transfer's outflow is negative
// and its inflow positive (both detection and a user's pairing require
// it), so the row's sign says which side to look up: one index probe per
// listed row, not two (a listing's costliest part after the rows
// themselves, BENCHMARKS.md). Caveat: a side whose amount a later sync
// turned to the other sign no longer shows its transferId.
func transferIDColumn(w *where, sc Scope) string {
	vis := visibleTransfer(w, sc)
	return `CASE WHEN t.amount < 0
		THEN (SELECT tr.id FROM transfers tr WHERE tr.outflow_transaction_id = t.id AND ` + vis + `)
		ELSE (SELECT tr.id FROM transfers tr WHERE tr.inflow_transaction_id = t.id AND ` + vis + `) END`
}

// transfersFilter adds the listing's transfers=exclude|only predicate.
func transfersFilter(w *where, sc Scope, mode string) {
	if mode != TransfersExclude && mode != TransfersOnly {
		return
	}
	vis := visibleTransfer(w, sc)
	// One side looked up, by the row's sign, as in transferIDColumn.
	exists := `(CASE WHEN t.amount < 0
		THEN EXISTS (SELECT 1 FROM transfers tr WHERE tr.outflow_transaction_id = t.id AND ` + vis + `)
		ELSE EXISTS (SELECT 1 FROM transfers tr WHERE tr.inflow_transaction_id = t.id AND ` + vis + `) END)`
	if mode == TransfersExclude {
		exists = "NOT " + exists
	}
	w.add(exists)
}

// transferColumns are the columns scanTransfer reads, of alias tr.
const transferColumns = `tr.id, tr.user_id, tr.outflow_transaction_id, tr.inflow_transaction_id, tr.outflow_account_id,
	tr.inflow_account_id, tr.date, tr.amount, tr.currency, tr.inflow_amount, tr.inflow_currency,
	tr.confidence::float8, tr.source, tr.reasons, tr.created_at`

// scanTransfer reads one row of transferColumns.
func scanTransfer(row pgx.Row, t *domain.Transfer) error {
	var r transferRow
	return r.scan(row, t)
}

// transferRow is where a listing scans its rows: the destinations of
// transferColumns, built once for all of them.
type transferRow struct {
	t              domain.Transfer
	date           pgtype.Date
	amount, inflow pgtype.Numeric
	dest           []any
}

// scan reads one row of transferColumns through r into t.
func (r *transferRow) scan(row pgx.Row, t *domain.Transfer) error {
	if r.dest == nil {
		r.dest = []any{&r.t.ID, &r.t.UserID, &r.t.OutflowTransactionID, &r.t.InflowTransactionID, &r.t.OutflowAccountID,
			&r.t.InflowAccountID, &r.date, &r.amount, &r.t.Currency, &r.inflow, &r.t.InflowCurrency, &r.t.Confidence,
			&r.t.Source, &r.t.Reasons, &r.t.CreatedAt}
	}
	r.t.Reasons = nil
	err := row.Scan(r.dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	if err != nil {
		return err
	}
	*t = r.t
	t.Date = domain.DateOf(r.date.Time)
	t.Amount = domain.MoneyFromDecimal(decimal.NewFromBigInt(r.amount.Int, r.amount.Exp))
	t.InflowAmount = domain.MoneyFromDecimal(decimal.NewFromBigInt(r.inflow.Int, r.inflow.Exp))
	if t.Reasons == nil {
		t.Reasons = []string{}
	}
	return nil
}

// TransferFilter narrows a transfer listing. Nil fields do not filter.
type TransferFilter struct {
	// AccountID keeps transfers out of or into the account.
	AccountID *uuid.UUID
	// StartDate and EndDate bound the outflow's date, inclusive.
	StartDate, EndDate *domain.Date
}

// ListTransfers lists the transfers the scope sees (both accounts in a
// scoped credential's scope), newest outflow date first, then by id, after
// the keyset position.
func (s *Store) ListTransfers(ctx context.Context, sc Scope, f TransferFilter, after Keyset, limit int) ([]domain.Transfer, error) {
	var w where
	w.add("tr.user_id = ?", sc.UserID)
	w.inScope("tr.outflow_account_id", sc)
	w.inScope("tr.inflow_account_id", sc)
	if f.AccountID != nil {
		w.add("(tr.outflow_account_id = ? OR tr.inflow_account_id = ?)", *f.AccountID, *f.AccountID)
	}
	if f.StartDate != nil {
		w.add("tr.date >= ?", f.StartDate.Time)
	}
	if f.EndDate != nil {
		w.add("tr.date <= ?", f.EndDate.Time)
	}
	w.keyset("tr.date", "tr.id", after)
	q := `SELECT ` + transferColumns + ` FROM transfers tr WHERE ` + w.sql() +
		` ORDER BY tr.date DESC, tr.id DESC LIMIT ` + w.arg(limit)
	rows, err := s.reader(ctx).Query(ctx, q, w.args...)
	if err != nil {
		return nil, fmt.Errorf("list transfers: %w", err)
	}
	defer rows.Close()
	out := make([]domain.Transfer, 0, limit)
	var r transferRow
	for rows.Next() {
		out = append(out, domain.Transfer{})
		if err := r.scan(rows, &out[len(out)-1]); err != nil {
			return nil, fmt.Errorf("list transfers: %w", err)
		}
	}
	return out, rows.Err()
}

// pairSide is what CreateTransfer checks of a transaction.
type pairSide struct {
	accountID uuid.UUID
	amount    decimal.Decimal
	status    string
}

// CreateTransfer pairs outflowID and inflowID by hand (source user,
// confidence 1) and forgets any rejection of the pair. It returns a
// *TransferInvalidError unless they are a live outflow and a live inflow
// of two different accounts within the scope (a transaction outside it is
// unknown), and ErrTransferConflict when either is paired already.
func (s *Store) CreateTransfer(ctx context.Context, sc Scope, outflowID, inflowID uuid.UUID) (domain.Transfer, error) {
	var out domain.Transfer
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockTransfersSQL, sc.UserID); err != nil {
			return fmt.Errorf("create transfer: lock user: %w", err)
		}
		o, err := loadPairSide(ctx, tx, sc, outflowID, "outflowTransactionId")
		if err != nil {
			return err
		}
		i, err := loadPairSide(ctx, tx, sc, inflowID, "inflowTransactionId")
		if err != nil {
			return err
		}
		if err := checkPair(o, i); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM transfer_rejections WHERE user_id = $1
			AND outflow_transaction_id = $2 AND inflow_transaction_id = $3`, sc.UserID, outflowID, inflowID); err != nil {
			return fmt.Errorf("create transfer: forget rejection: %w", err)
		}
		row := tx.QueryRow(ctx, `
			INSERT INTO transfers AS tr (user_id, outflow_transaction_id, inflow_transaction_id, outflow_account_id,
				inflow_account_id, date, amount, currency, inflow_amount, inflow_currency, confidence, source, reasons)
			SELECT $1, o.id, i.id, o.account_id, i.account_id, o.tx_date, -o.amount, o.currency, i.amount, i.currency,
				1, 'user', '{paired_by_user}'
			FROM transactions o, transactions i
			WHERE o.id = $2 AND o.user_id = $1 AND i.id = $3 AND i.user_id = $1
			ON CONFLICT DO NOTHING
			RETURNING `+transferColumns, sc.UserID, outflowID, inflowID)
		err = scanTransfer(row, &out)
		if errors.Is(err, ErrNotFound) {
			return ErrTransferConflict
		}
		if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == "23505" {
			return ErrTransferConflict
		}
		if err != nil {
			return fmt.Errorf("create transfer: %w", err)
		}
		return nil
	})
	return out, err
}

// loadPairSide reads a transaction of the scope for CreateTransfer.
func loadPairSide(ctx context.Context, tx pgx.Tx, sc Scope, id uuid.UUID, field string) (pairSide, error) {
	var w where
	w.add("t.id = ?", id)
	w.scope("t", sc)
	var p pairSide
	var amount pgtype.Numeric
	err := tx.QueryRow(ctx, `SELECT t.account_id, t.amount, t.status FROM transactions t WHERE `+w.sql()+` FOR UPDATE`,
		w.args...).Scan(&p.accountID, &amount, &p.status)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, &TransferInvalidError{Msg: field + ": no such transaction"}
	}
	if err != nil {
		return p, fmt.Errorf("create transfer: read %s: %w", field, err)
	}
	p.amount = decimal.NewFromBigInt(amount.Int, amount.Exp)
	return p, nil
}

// checkPair says why o and i cannot be an outflow and its inflow.
func checkPair(o, i pairSide) error {
	switch {
	case o.status == domain.TxDeleted || i.status == domain.TxDeleted:
		return &TransferInvalidError{Msg: "a deleted transaction cannot be paired"}
	case o.amount.Sign() >= 0:
		return &TransferInvalidError{Msg: "outflowTransactionId: is not an outflow (its amount is not negative)"}
	case i.amount.Sign() <= 0:
		return &TransferInvalidError{Msg: "inflowTransactionId: is not an inflow (its amount is not positive)"}
	case o.accountID == i.accountID:
		return &TransferInvalidError{Msg: "the outflow and the inflow are of the same account"}
	}
	return nil
}

// DeleteTransfer unpairs a transfer the scope sees and remembers the pair
// as rejected, so that no detection pairs it again. ErrNotFound when the
// scope does not see it.
func (s *Store) DeleteTransfer(ctx context.Context, sc Scope, id uuid.UUID) error {
	var w where
	w.add("tr.id = ?", id)
	w.add("tr.user_id = ?", sc.UserID)
	w.inScope("tr.outflow_account_id", sc)
	w.inScope("tr.inflow_account_id", sc)
	return s.inTx(ctx, func(tx pgx.Tx) error {
		// Detection reads the user's pairs and rejections under this lock.
		if _, err := tx.Exec(ctx, lockTransfersSQL, sc.UserID); err != nil {
			return fmt.Errorf("delete transfer %s: lock: %w", id, err)
		}
		var uid, out, in uuid.UUID
		err := tx.QueryRow(ctx, `DELETE FROM transfers tr WHERE `+w.sql()+`
			RETURNING tr.user_id, tr.outflow_transaction_id, tr.inflow_transaction_id`, w.args...).Scan(&uid, &out, &in)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("delete transfer %s: %w", id, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("delete transfer %s: %w", id, err)
		}
		_, err = tx.Exec(ctx, `INSERT INTO transfer_rejections (user_id, outflow_transaction_id, inflow_transaction_id)
			VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, uid, out, in)
		if err != nil {
			return fmt.Errorf("delete transfer %s: remember rejection: %w", id, err)
		}
		return nil
	})
}

// lockTransfersSQL takes the user's ($1) transfers lock for the rest of the
// transaction: detection, pairing by hand and unpairing of one user run
// one at a time (beginDetection).
const lockTransfersSQL = `SELECT pg_advisory_xact_lock(hashtextextended('transfers:' || $1::text, 0))`
