package simplefin

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"github.com/shopspring/decimal"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/internal/wire"
)

// cursor is the opaque state behind TransactionRequest.Cursor.
type cursor struct {
	// Last is the end date (YYYY-MM-DD, exclusive) of the last finished sync.
	Last string `json:"l,omitempty"`
	// Start and End are the window (dates, end exclusive) still to read in
	// the sync in progress, one request of at most WindowDays at a time.
	Start string `json:"s,omitempty"`
	End   string `json:"e,omitempty"`
}

type transaction struct {
	ID           string          `json:"id"`
	Posted       int64           `json:"posted"`
	Amount       decimal.Decimal `json:"amount"`
	Description  string          `json:"description"`
	TransactedAt *int64          `json:"transacted_at"`
	Pending      bool            `json:"pending"`
}

// Transactions reads one window of every account's transactions, pending
// included: from the last sync minus the overlap (a first sync: WindowDays
// back) to tomorrow, WindowDays per request. The last window's page
// declares its pending rows complete for every account (ReplacePendingFor),
// so a pending row gone from the server is removed. Caveat: posted rows
// the server drops are not seen as removed.
func (a *Adapter) Transactions(ctx context.Context, conn providers.Connection, req providers.TransactionRequest) (providers.TransactionPage, error) {
	var cur cursor
	if err := wire.DecodeCursor(req.Cursor, &cur); err != nil {
		return providers.TransactionPage{}, wire.InvalidCursor(name, err)
	}
	if cur.Start == "" {
		today := req.Today
		if today.IsZero() {
			today = domain.DateOf(a.now())
		}
		end := today.AddDate(0, 0, 1)
		start := end.AddDate(0, 0, -WindowDays)
		if last, err := domain.ParseDate(cur.Last); err == nil {
			start = last.AddDate(0, 0, -a.overlapDays-1)
		}
		cur.Start, cur.End = domain.DateOf(start).String(), domain.DateOf(end).String()
	}
	start, err1 := domain.ParseDate(cur.Start)
	end, err2 := domain.ParseDate(cur.End)
	if err1 != nil || err2 != nil {
		return providers.TransactionPage{}, wire.InvalidCursor(name, fmt.Errorf("bad window %q..%q", cur.Start, cur.End))
	}
	stop := start.AddDate(0, 0, WindowDays)
	if !stop.Before(end.Time) {
		stop = end.Time
	}
	q := url.Values{
		"start-date": {strconv.FormatInt(start.Unix(), 10)},
		"end-date":   {strconv.FormatInt(stop.Unix(), 10)},
		"pending":    {"1"},
	}
	set, err := a.fetch(ctx, conn, q)
	if err != nil {
		return providers.TransactionPage{}, fmt.Errorf("simplefin transactions: %w", err)
	}
	var page providers.TransactionPage
	for _, acc := range set.Accounts {
		for _, t := range acc.Transactions {
			page.Upserts = append(page.Upserts, mapTransaction(acc, t))
		}
		if stop.Equal(end.Time) {
			page.ReplacePendingFor = append(page.ReplacePendingFor, acc.ID)
		}
	}
	if stop.Equal(end.Time) {
		page.Next, page.Done = wire.EncodeCursor(cursor{Last: cur.End}), true
		return page, nil
	}
	cur.Start = domain.DateOf(stop).String()
	page.Next = wire.EncodeCursor(cur)
	return page, nil
}

// mapTransaction maps a row: positive amounts are deposits (finsync's sign
// already); a pending row (pending, or posted 0) is dated by transacted_at.
func mapTransaction(acc account, t transaction) providers.Transaction {
	at := unixTime(t.Posted)
	if t.TransactedAt != nil && *t.TransactedAt > 0 {
		at = unixTime(*t.TransactedAt)
	}
	tx := providers.Transaction{
		ProviderID:        acc.ID + "/" + t.ID,
		ProviderAccountID: acc.ID,
		Status:            domain.TxPending,
		Summary:           t.Description,
		Amount:            wire.Money(t.Amount),
		Currency:          currency(acc.Currency),
		AuthorizedDate:    wire.DatePtr(at),
		CreatedAt:         at,
	}
	if t.Description != "" {
		tx.OriginalDescription = wire.Ptr(t.Description)
	}
	if !t.Pending && t.Posted > 0 {
		posted := unixTime(t.Posted)
		tx.Status, tx.PostedDate, tx.PostedAt = domain.TxPosted, wire.DatePtr(posted), &posted
	}
	return tx
}
