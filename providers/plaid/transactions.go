package plaid

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/internal/wire"
	"github.com/finsync/finsync/resilience"
)

// maxRestarts bounds how many times in a row a sync loop restarts after
// TRANSACTIONS_SYNC_MUTATION_DURING_PAGINATION before the adapter reports
// the provider unavailable.
const maxRestarts = 5

// cursor is the opaque state behind TransactionRequest.Cursor: the Plaid
// cursor the current /transactions/sync loop started from, the one to send
// next, and how many times in a row the loop restarted.
type cursor struct {
	Start    string `json:"s"`
	Current  string `json:"c"`
	Restarts int    `json:"r,omitempty"`
}

type pfc struct {
	Primary  string `json:"primary"`
	Detailed string `json:"detailed"`
}

type transaction struct {
	TransactionID          string       `json:"transaction_id"`
	AccountID              string       `json:"account_id"`
	Amount                 domain.Money `json:"amount"`
	IsoCurrencyCode        *string      `json:"iso_currency_code"`
	UnofficialCurrencyCode *string      `json:"unofficial_currency_code"`
	Date                   string       `json:"date"`
	AuthorizedDate         *domain.Date `json:"authorized_date"`
	Datetime               *string      `json:"datetime"`
	AuthorizedDatetime     *string      `json:"authorized_datetime"`
	Pending                bool         `json:"pending"`
	PendingTransactionID   *string      `json:"pending_transaction_id"`
	MerchantName           *string      `json:"merchant_name"`
	Name                   string       `json:"name"`
	OriginalDescription    *string      `json:"original_description"`
	PaymentChannel         *string      `json:"payment_channel"`
	CheckNumber            *string      `json:"check_number"`
	TransactionCode        *string      `json:"transaction_code"`
	PersonalFinanceCat     *pfc         `json:"personal_finance_category"`
}

type removedTransaction struct {
	TransactionID string `json:"transaction_id"`
}

type syncResponse struct {
	Added      []transaction        `json:"added"`
	Modified   []transaction        `json:"modified"`
	Removed    []removedTransaction `json:"removed"`
	NextCursor string               `json:"next_cursor"`
	HasMore    bool                 `json:"has_more"`
}

// Transactions runs one /transactions/sync call. The returned Next carries
// both the cursor the loop started from and the next one, so a
// TRANSACTIONS_SYNC_MUTATION_DURING_PAGINATION answer restarts the loop from
// its start (an empty page whose Next is the loop start).
func (a *Adapter) Transactions(ctx context.Context, conn providers.Connection, req providers.TransactionRequest) (providers.TransactionPage, error) {
	var cur cursor
	if err := wire.DecodeCursor(req.Cursor, &cur); err != nil {
		return providers.TransactionPage{}, wire.InvalidCursor(name, err)
	}
	body := map[string]any{
		"count":   SyncPageSize,
		"options": map[string]any{"include_original_description": true},
	}
	if cur.Current != "" {
		body["cursor"] = cur.Current
	}
	var resp syncResponse
	if err := a.post(ctx, conn, "/transactions/sync", body, &resp); err != nil {
		return restartOnMutation(cur, err)
	}
	page, err := mapSyncPage(resp)
	if err != nil {
		return providers.TransactionPage{}, err
	}
	switch {
	case resp.NextCursor == "":
		// Transactions are not ready yet: nothing to store, try later.
		page.Next, page.Done = req.Cursor, true
	case resp.HasMore:
		page.Next = wire.EncodeCursor(cursor{Start: cur.Start, Current: resp.NextCursor})
	default:
		page.Next = wire.EncodeCursor(cursor{Start: resp.NextCursor, Current: resp.NextCursor})
		page.Done = true
	}
	return page, nil
}

// restartOnMutation answers a mutation-during-pagination error with an
// empty page that points back at the loop's start; other errors pass.
func restartOnMutation(cur cursor, err error) (providers.TransactionPage, error) {
	pe := resilience.AsError(err)
	if pe == nil || pe.Code != codeMutation {
		return providers.TransactionPage{}, fmt.Errorf("plaid transactions sync: %w", err)
	}
	if cur.Restarts >= maxRestarts {
		return providers.TransactionPage{}, fmt.Errorf("plaid transactions sync: %d restarts in a row: %w", cur.Restarts, err)
	}
	next := cursor{Start: cur.Start, Current: cur.Start, Restarts: cur.Restarts + 1}
	return providers.TransactionPage{Next: wire.EncodeCursor(next)}, nil
}

func mapSyncPage(resp syncResponse) (providers.TransactionPage, error) {
	page := providers.TransactionPage{}
	for _, list := range [][]transaction{resp.Added, resp.Modified} {
		for _, t := range list {
			tx, err := mapTransaction(t)
			if err != nil {
				return page, err
			}
			page.Upserts = append(page.Upserts, tx)
		}
	}
	for _, r := range resp.Removed {
		page.Removed = append(page.Removed, r.TransactionID)
	}
	return page, nil
}

// mapTransaction converts a Plaid transaction: the amount is negated
// (Plaid counts money out as positive), the date is the posting date of a
// posted transaction and the authorization date of a pending one.
func mapTransaction(t transaction) (providers.Transaction, error) {
	date, err := domain.ParseDate(t.Date)
	if err != nil {
		return providers.Transaction{}, &resilience.Error{
			Provider: name, Class: resilience.Unavailable, Code: resilience.CodeMalformed,
			Message: fmt.Sprintf("transaction %s: bad date %q", t.TransactionID, t.Date), Err: err,
		}
	}
	tx := providers.Transaction{
		ProviderID:          t.TransactionID,
		ProviderAccountID:   t.AccountID,
		Status:              domain.TxPosted,
		Summary:             t.Name,
		Amount:              t.Amount.Neg(),
		Currency:            currency(t.IsoCurrencyCode, t.UnofficialCurrencyCode),
		AuthorizedDate:      t.AuthorizedDate,
		MerchantName:        t.MerchantName,
		Category:            category(t.PersonalFinanceCat),
		PaymentChannel:      t.PaymentChannel,
		CheckNumber:         t.CheckNumber,
		OriginalDescription: t.OriginalDescription,
		Type:                t.TransactionCode,
		PendingProviderID:   t.PendingTransactionID,
		CreatedAt:           firstTime(date.Time, t.AuthorizedDatetime, t.Datetime),
	}
	if t.MerchantName != nil && *t.MerchantName != "" {
		tx.Summary = *t.MerchantName
	}
	if t.Pending {
		tx.Status = domain.TxPending
		if tx.AuthorizedDate == nil {
			tx.AuthorizedDate = &date
		}
		return tx, nil
	}
	tx.PostedDate = &date
	posted := firstTime(date.Time, t.Datetime)
	tx.PostedAt = &posted
	return tx, nil
}

// firstTime returns the first RFC 3339 time that parses, or def.
func firstTime(def time.Time, ts ...*string) time.Time {
	for _, s := range ts {
		if s == nil {
			continue
		}
		if t, err := time.Parse(time.RFC3339Nano, *s); err == nil {
			return t.UTC()
		}
	}
	return def
}

// category maps a personal finance category: the detailed code is the id,
// its name is the detailed code humanised without the primary prefix, and
// the group is the primary code.
func category(p *pfc) *providers.CategoryRef {
	if p == nil || p.Detailed == "" {
		return nil
	}
	rest := strings.TrimPrefix(strings.TrimPrefix(p.Detailed, p.Primary), "_")
	if rest == "" {
		rest = p.Detailed
	}
	return &providers.CategoryRef{ProviderID: p.Detailed, Name: Humanise(rest), Group: p.Primary}
}

// Humanise turns an upper snake code into a sentence-case name:
// "FOOD_AND_DRINK" → "Food and drink".
func Humanise(code string) string {
	words := strings.Fields(strings.ToLower(strings.ReplaceAll(code, "_", " ")))
	if len(words) == 0 {
		return ""
	}
	r := []rune(strings.Join(words, " "))
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}
