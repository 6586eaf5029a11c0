package stripe

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/internal/wire"
	"github.com/finsync/finsync/resilience"
)

// cursor is the opaque state behind TransactionRequest.Cursor.
type cursor struct {
	// Max is the newest created time (Unix seconds) of a finished sync.
	Max int64 `json:"m,omitempty"`
	// Gte is the created[gte] of the loop in progress.
	Gte int64 `json:"g,omitempty"`
	// After is the id to list after; empty when no loop is in progress.
	After string `json:"a,omitempty"`
	// LoopMax is the newest created time seen in the loop in progress.
	LoopMax int64 `json:"l,omitempty"`
}

type feeDetail struct {
	Amount int64  `json:"amount"`
	Type   string `json:"type"`
}

type balanceTransaction struct {
	ID                string      `json:"id"`
	Amount            int64       `json:"amount"`
	Fee               int64       `json:"fee"`
	FeeDetails        []feeDetail `json:"fee_details"`
	Net               int64       `json:"net"`
	Currency          string      `json:"currency"`
	Type              string      `json:"type"`
	ReportingCategory string      `json:"reporting_category"`
	Description       *string     `json:"description"`
	Created           int64       `json:"created"`
	AvailableOn       int64       `json:"available_on"`
	Status            string      `json:"status"`
}

type list struct {
	Data    []balanceTransaction `json:"data"`
	HasMore bool                 `json:"has_more"`
}

// Transactions lists one page of balance transactions created since the
// newest one seen minus the overlap, paging with starting_after; the first
// page of each sync also re-checks req.PendingIDs one by one.
func (a *Adapter) Transactions(ctx context.Context, conn providers.Connection, req providers.TransactionRequest) (providers.TransactionPage, error) {
	var cur cursor
	if err := wire.DecodeCursor(req.Cursor, &cur); err != nil {
		return providers.TransactionPage{}, wire.InvalidCursor(name, err)
	}
	first := cur.After == ""
	if first {
		cur.Gte, cur.LoopMax = 0, 0
		if cur.Max > 0 {
			cur.Gte = cur.Max - int64(a.overlap/time.Second)
		}
	}
	q := url.Values{"limit": {strconv.Itoa(PageSize)}}
	if cur.Gte > 0 {
		q.Set("created[gte]", strconv.FormatInt(cur.Gte, 10))
	}
	if cur.After != "" {
		q.Set("starting_after", cur.After)
	}
	var l list
	if err := a.get(ctx, conn, "/v1/balance_transactions", q, &l); err != nil {
		return providers.TransactionPage{}, fmt.Errorf("stripe balance transactions: %w", err)
	}
	page := providers.TransactionPage{}
	seen := map[string]bool{}
	for _, bt := range l.Data {
		page.Upserts = append(page.Upserts, mapTransaction(bt))
		seen[bt.ID] = true
		cur.LoopMax = max(cur.LoopMax, bt.Created)
	}
	if first {
		if err := a.recheckPending(ctx, conn, req.PendingIDs, seen, &page); err != nil {
			return providers.TransactionPage{}, err
		}
	}
	if l.HasMore && len(l.Data) > 0 {
		cur.After = l.Data[len(l.Data)-1].ID
		page.Next = wire.EncodeCursor(cur)
		return page, nil
	}
	page.Next = wire.EncodeCursor(cursor{Max: max(cur.Max, cur.LoopMax)})
	page.Done = true
	return page, nil
}

// recheckPending fetches each stored pending transaction not in this page;
// one Stripe no longer knows is reported removed.
func (a *Adapter) recheckPending(ctx context.Context, conn providers.Connection, ids []string, seen map[string]bool, page *providers.TransactionPage) error {
	for _, id := range ids {
		if seen[id] {
			continue
		}
		var bt balanceTransaction
		err := a.get(ctx, conn, "/v1/balance_transactions/"+url.PathEscape(id), nil, &bt)
		if pe := resilience.AsError(err); pe != nil && pe.HTTPStatus == 404 {
			page.Removed = append(page.Removed, id)
			continue
		}
		if err != nil {
			return fmt.Errorf("stripe re-check pending %s: %w", id, err)
		}
		seen[id] = true
		page.Upserts = append(page.Upserts, mapTransaction(bt))
	}
	return nil
}

// mapTransaction converts a balance transaction: minor units to major,
// inflow positive as Stripe has it, fees negative.
func mapTransaction(bt balanceTransaction) providers.Transaction {
	created := time.Unix(bt.Created, 0).UTC()
	tx := providers.Transaction{
		ProviderID:          bt.ID,
		ProviderAccountID:   AccountID(bt.Currency),
		Status:              domain.TxPending,
		Summary:             bt.Type,
		Amount:              FromMinor(bt.Amount, bt.Currency),
		Currency:            strings.ToUpper(bt.Currency),
		AuthorizedDate:      wire.DatePtr(created),
		Fees:                wire.Ptr(FromMinor(bt.Fee, bt.Currency).Neg()),
		NetAmount:           wire.Ptr(FromMinor(bt.Net, bt.Currency)),
		OriginalDescription: bt.Description,
		Type:                wire.StrPtr(bt.Type),
		CreatedAt:           created,
	}
	if bt.Description != nil && *bt.Description != "" {
		tx.Summary = *bt.Description
	}
	if len(bt.FeeDetails) > 0 {
		tx.FeeType = feeTypes(bt.FeeDetails)
	}
	if bt.ReportingCategory != "" {
		tx.Category = &providers.CategoryRef{ProviderID: bt.ReportingCategory, Name: humanise(bt.ReportingCategory)}
	}
	if bt.Status == "available" {
		tx.Status = domain.TxPosted
		posted := time.Unix(bt.AvailableOn, 0).UTC()
		tx.PostedDate, tx.PostedAt = wire.DatePtr(posted), &posted
	}
	return tx
}

// feeTypes joins the distinct fee detail types with commas.
func feeTypes(details []feeDetail) *string {
	var types []string
	seen := map[string]bool{}
	for _, d := range details {
		if !seen[d.Type] {
			seen[d.Type] = true
			types = append(types, d.Type)
		}
	}
	return wire.StrPtr(strings.Join(types, ","))
}

// humanise turns "other_adjustment" into "Other adjustment".
func humanise(code string) string {
	s := strings.ReplaceAll(code, "_", " ")
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
