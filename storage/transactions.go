package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/shopspring/decimal"

	"github.com/finsync/finsync/domain"
)

const transactionColumns = `t.id, t.user_id, t.bank_connection_id, t.account_id, t.provider, t.provider_id,
	t.status, t.summary, t.amount, t.currency, t.authorized_date, t.posted_date, t.merchant_name,
	t.category_id, t.category_source, t.category_rule_id, t.hidden, t.fees, t.fee_type, t.net_amount, t.sub_account,
	t.payment_channel, t.check_number, t.original_description, t.source, t.type, t.created_at, t.posted_at`

// txRow holds one row of transactionColumns in pgx's own types, which pgx
// decodes from the binary protocol without the database/sql detour. A
// listing reuses one txRow for all its rows: its scan destinations are
// built once, not once per row.
type txRow struct {
	id, userID, connID, accountID, categoryID, categoryRuleID                pgtype.UUID
	provider, providerID, status, summary, currency                          string
	merchant, catSource, feeType, subAccount, channel, check, desc, src, typ pgtype.Text
	amount, fees, net                                                        pgtype.Numeric
	authorized, posted                                                       pgtype.Date
	hidden                                                                   bool
	createdAt                                                                time.Time
	postedAt                                                                 pgtype.Timestamptz
	transferID                                                               pgtype.UUID
	// dest is transactionColumns' destinations, then transferIDColumn's
	// when withTransfer; built on first use.
	dest         []any
	withTransfer bool
}

// scanTransaction reads one row of transactionColumns.
func scanTransaction(row pgx.Row, t *domain.Transaction) error {
	var r txRow
	return r.scan(row, t)
}

// scan reads one row of transactionColumns through r.
func (r *txRow) scan(row pgx.Row, t *domain.Transaction) error {
	return r.scanRow(row, t, false)
}

// scanWithTransfer reads one row of transactionColumns followed by
// transferIDColumn. A txRow scans rows of one shape only: with or without
// the transfer.
func (r *txRow) scanWithTransfer(row pgx.Row, t *domain.Transaction) error {
	if err := r.scanRow(row, t, true); err != nil {
		return err
	}
	t.TransferID = uuidPtr(r.transferID)
	return nil
}

// destinations returns the scan destinations of one row, built once.
func (r *txRow) destinations(withTransfer bool) []any {
	if r.dest != nil && r.withTransfer == withTransfer {
		return r.dest
	}
	r.dest = []any{&r.id, &r.userID, &r.connID, &r.accountID, &r.provider, &r.providerID,
		&r.status, &r.summary, &r.amount, &r.currency, &r.authorized, &r.posted, &r.merchant,
		&r.categoryID, &r.catSource, &r.categoryRuleID, &r.hidden, &r.fees, &r.feeType, &r.net, &r.subAccount,
		&r.channel, &r.check, &r.desc, &r.src, &r.typ, &r.createdAt, &r.postedAt}
	if withTransfer {
		r.dest = append(r.dest, &r.transferID)
	}
	r.withTransfer = withTransfer
	return r.dest
}

// scanRow reads one row of transactionColumns (and transferIDColumn when
// withTransfer) into t.
func (r *txRow) scanRow(row pgx.Row, t *domain.Transaction, withTransfer bool) error {
	err := row.Scan(r.destinations(withTransfer)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	if err != nil {
		return err
	}
	r.fill(t)
	return nil
}

// fill sets t from the row last scanned into r's transactionColumns.
func (r *txRow) fill(t *domain.Transaction) {
	t.ID, t.UserID, t.AccountID = r.id.Bytes, r.userID.Bytes, r.accountID.Bytes
	t.Provider, t.ProviderID, t.Status, t.Summary, t.Currency = r.provider, r.providerID, r.status, r.summary, r.currency
	t.Hidden, t.CreatedAt = r.hidden, r.createdAt
	t.BankConnectionID, t.CategoryID, t.CategoryRuleID = uuidPtr(r.connID), uuidPtr(r.categoryID), uuidPtr(r.categoryRuleID)
	t.Amount = domain.MoneyFromDecimal(decimal.NewFromBigInt(r.amount.Int, r.amount.Exp))
	t.Fees, t.NetAmount = moneyPtr(r.fees), moneyPtr(r.net)
	t.AuthorizedDate, t.PostedDate = datePtr(r.authorized), datePtr(r.posted)
	t.MerchantName, t.CategorySource, t.FeeType = textPtr(r.merchant), textPtr(r.catSource), textPtr(r.feeType)
	t.SubAccount, t.PaymentChannel, t.CheckNumber = textPtr(r.subAccount), textPtr(r.channel), textPtr(r.check)
	t.OriginalDescription, t.Source, t.Type = textPtr(r.desc), textPtr(r.src), textPtr(r.typ)
	if r.postedAt.Valid {
		at := r.postedAt.Time
		t.PostedAt = &at
	}
}

func uuidPtr(v pgtype.UUID) *uuid.UUID {
	if !v.Valid {
		return nil
	}
	id := uuid.UUID(v.Bytes)
	return &id
}

func textPtr(v pgtype.Text) *string {
	if !v.Valid {
		return nil
	}
	s := v.String
	return &s
}

func moneyPtr(v pgtype.Numeric) *domain.Money {
	if !v.Valid {
		return nil
	}
	m := domain.MoneyFromDecimal(decimal.NewFromBigInt(v.Int, v.Exp))
	return &m
}

func datePtr(v pgtype.Date) *domain.Date {
	if !v.Valid {
		return nil
	}
	d := domain.Date{Time: v.Time} // pgx decodes a date as midnight UTC already
	return &d
}

// TransactionFilter narrows a transaction listing. Nil fields do not filter.
type TransactionFilter struct {
	BankConnectionID *uuid.UUID
	AccountID        *uuid.UUID
	CategoryID       *uuid.UUID
	// IncludeDuplicates lists the rows of accounts marked as duplicates
	// too (docs/accounts.md); by default they are left out.
	IncludeDuplicates bool
	// Statuses lists the statuses to include; empty means all.
	Statuses      []string
	StartDate     *domain.Date
	EndDate       *domain.Date
	IncludeHidden bool
	// Transfers is TransfersInclude (or empty), TransfersExclude or
	// TransfersOnly: whether sides of the transfers the scope sees are
	// listed.
	Transfers string
}

// ListTransactions lists the scope's transactions newest first, by the
// transaction's date (posted, else authorized) and then id, after the
// keyset position. With the rows it returns the user's listing version
// (GetListingVersion) read in the same statement, or -1 when it found no
// row to carry it.
func (s *Store) ListTransactions(ctx context.Context, sc Scope, f TransactionFilter, after Keyset, limit int) ([]domain.Transaction, int64, error) {
	var w where
	w.scope("t", sc)
	if f.BankConnectionID != nil {
		w.add("t.bank_connection_id = ?", *f.BankConnectionID)
	}
	if f.AccountID != nil {
		w.add("t.account_id = ?", *f.AccountID)
	}
	if f.CategoryID != nil {
		w.add("t.category_id = ?", *f.CategoryID)
	}
	w.notDuplicate("t", sc, f.IncludeDuplicates)
	w.oneOf("t.status", f.Statuses)
	if f.StartDate != nil {
		w.add("t.tx_date >= ?", f.StartDate.Time)
	}
	if f.EndDate != nil {
		w.add("t.tx_date <= ?", f.EndDate.Time)
	}
	if !f.IncludeHidden {
		w.add("NOT t.hidden")
	}
	transfersFilter(&w, sc, f.Transfers)
	w.keyset("t.tx_date", "t.id", after)
	cols := transactionColumns + ", " + transferIDColumn(&w, sc) + ", " + listingVersionColumn(&w, sc.UserID)
	q := `SELECT ` + cols + ` FROM transactions t WHERE ` + w.sql() +
		` ORDER BY t.tx_date DESC, t.id DESC LIMIT ` + w.arg(limit)
	rows, err := s.reader(ctx).Query(ctx, q, w.args...)
	if err != nil {
		return nil, 0, fmt.Errorf("list transactions: %w", err)
	}
	defer rows.Close()
	out := make([]domain.Transaction, 0, limit)
	var r txRow
	version := int64(-1)
	dest := append(slices.Clip(r.destinations(true)), &version)
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, 0, fmt.Errorf("list transactions: %w", err)
		}
		out = append(out, domain.Transaction{})
		t := &out[len(out)-1]
		r.fill(t)
		t.TransferID = uuidPtr(r.transferID)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("list transactions: %w", err)
	}
	return out, version, nil
}
