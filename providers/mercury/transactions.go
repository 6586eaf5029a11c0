package mercury

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/internal/wire"
)

// cursor is the opaque state behind TransactionRequest.Cursor.
type cursor struct {
	// Last is the end date (YYYY-MM-DD) of the last finished sync.
	Last string `json:"l,omitempty"`
	// Accounts, Index and Offset locate the loop in progress: the account
	// ids to walk, the current one, and the offset within it.
	Accounts []string `json:"a,omitempty"`
	Index    int      `json:"i,omitempty"`
	Offset   int      `json:"o,omitempty"`
	// Total is the current account's total as its last page gave it (0
	// before its first page): what GuessNext guesses from.
	Total int `json:"t,omitempty"`
	// Start and End are the loop's date window.
	Start string `json:"s,omitempty"`
	End   string `json:"e,omitempty"`
}

type exchangeInfo struct {
	FeeAmount *domain.Money `json:"feeAmount"`
}

type transaction struct {
	ID                   string        `json:"id"`
	AccountID            string        `json:"accountId"`
	Amount               domain.Money  `json:"amount"`
	Status               string        `json:"status"`
	Kind                 string        `json:"kind"`
	CreatedAt            time.Time     `json:"createdAt"`
	PostedAt             *time.Time    `json:"postedAt"`
	CounterpartyName     string        `json:"counterpartyName"`
	CounterpartyNickname *string       `json:"counterpartyNickname"`
	BankDescription      *string       `json:"bankDescription"`
	CheckNumber          *string       `json:"checkNumber"`
	MercuryCategory      *string       `json:"mercuryCategory"`
	CurrencyExchangeInfo *exchangeInfo `json:"currencyExchangeInfo"`
}

type transactionsResponse struct {
	Total        int           `json:"total"`
	Transactions []transaction `json:"transactions"`
}

// Transactions reads one page of one account's transactions in the sync's
// date window (from the last sync minus the overlap to today), walking each
// account by offset until offset ≥ total.
func (a *Adapter) Transactions(ctx context.Context, conn providers.Connection, req providers.TransactionRequest) (providers.TransactionPage, error) {
	var cur cursor
	if err := wire.DecodeCursor(req.Cursor, &cur); err != nil {
		return providers.TransactionPage{}, wire.InvalidCursor(name, err)
	}
	if cur.Accounts == nil {
		if err := a.startLoop(ctx, conn, req, &cur); err != nil {
			return providers.TransactionPage{}, err
		}
	}
	if cur.Index >= len(cur.Accounts) {
		return providers.TransactionPage{Next: wire.EncodeCursor(cursor{Last: cur.End}), Done: true}, nil
	}
	resp, err := a.listPage(ctx, conn, cur)
	if err != nil {
		return providers.TransactionPage{}, err
	}
	page := mapPage(resp.Transactions)
	cur.Offset += len(resp.Transactions)
	cur.Total = resp.Total
	if len(resp.Transactions) == 0 || cur.Offset >= resp.Total {
		cur.Index, cur.Offset, cur.Total = cur.Index+1, 0, 0
	}
	if cur.Index >= len(cur.Accounts) {
		page.Next, page.Done = wire.EncodeCursor(cursor{Last: cur.End}), true
		return page, nil
	}
	page.Next = wire.EncodeCursor(cur)
	return page, nil
}

// GuessNext guesses the Next of the page at c (providers.NextGuesser):
// within an account whose total is known, a full page further on; after
// its last page, the next account's first. It has no guess before an
// account's first page (its total is unknown) nor after the last account.
// The guess is right unless the account's rows change during the sync.
func (a *Adapter) GuessNext(c string) (string, bool) {
	var cur cursor
	if c == "" || wire.DecodeCursor(c, &cur) != nil || cur.Total == 0 || cur.Index >= len(cur.Accounts) {
		return "", false
	}
	cur.Offset += PageSize
	if cur.Offset >= cur.Total {
		if cur.Index+1 >= len(cur.Accounts) {
			return "", false
		}
		cur.Index, cur.Offset, cur.Total = cur.Index+1, 0, 0
	}
	return wire.EncodeCursor(cur), true
}

// startLoop lists the accounts and fixes the loop's date window.
func (a *Adapter) startLoop(ctx context.Context, conn providers.Connection, req providers.TransactionRequest, cur *cursor) error {
	dep, credit, err := a.fetchAccounts(ctx, conn)
	if err != nil {
		return err
	}
	cur.Accounts = []string{}
	for _, acc := range append(dep, credit...) {
		cur.Accounts = append(cur.Accounts, acc.ID)
	}
	today := req.Today
	if today.IsZero() {
		today = domain.DateOf(a.now())
	}
	start := today.AddDate(0, 0, -a.historyDays)
	if last, err := domain.ParseDate(cur.Last); err == nil {
		start = last.AddDate(0, 0, -a.overlapDays)
	}
	cur.Start, cur.End = domain.DateOf(start).String(), today.String()
	cur.Index, cur.Offset = 0, 0
	return nil
}

func (a *Adapter) listPage(ctx context.Context, conn providers.Connection, cur cursor) (transactionsResponse, error) {
	q := url.Values{
		"limit":  {strconv.Itoa(PageSize)},
		"offset": {strconv.Itoa(cur.Offset)},
		"start":  {cur.Start},
		"end":    {cur.End},
		"order":  {"asc"},
	}
	var resp transactionsResponse
	path := "/account/" + url.PathEscape(cur.Accounts[cur.Index]) + "/transactions"
	if err := a.get(ctx, conn, path, q, &resp); err != nil {
		return resp, fmt.Errorf("mercury transactions: %w", err)
	}
	return resp, nil
}

// mapPage sorts Mercury rows into upserts and removals: cancelled, failed,
// blocked and reversed transactions are reported removed.
func mapPage(rows []transaction) providers.TransactionPage {
	// Room for every row at once: a row is large, and growing the slice
	// a row at a time copied a page's rows over and over.
	var page providers.TransactionPage
	if len(rows) > 0 {
		page.Upserts = make([]providers.Transaction, 0, len(rows))
	}
	names := categoryNames{}
	for _, t := range rows {
		switch t.Status {
		case "cancelled", "failed", "blocked", "reversed":
			page.Removed = append(page.Removed, t.ID)
		default:
			page.Upserts = append(page.Upserts, mapTransaction(t, names))
		}
	}
	return page
}

// categoryNames holds a page's category names by code (HumaniseCategory),
// made once for the page's few categories rather than once per row.
type categoryNames map[string]string

// of returns the name of category code.
func (n categoryNames) of(code string) string {
	name, ok := n[code]
	if !ok {
		name = HumaniseCategory(code)
		n[code] = name
	}
	return name
}

// cardKinds are the transaction kinds whose counterparty is a merchant.
var cardKinds = map[string]bool{"debitCardTransaction": true, "creditCardTransaction": true}

func mapTransaction(t transaction, names categoryNames) providers.Transaction {
	created := t.CreatedAt.UTC()
	tx := providers.Transaction{
		ProviderID:          t.ID,
		ProviderAccountID:   t.AccountID,
		Status:              domain.TxPending,
		Summary:             t.CounterpartyName,
		Amount:              t.Amount,
		Currency:            "USD",
		AuthorizedDate:      wire.DatePtr(created),
		CheckNumber:         t.CheckNumber,
		OriginalDescription: t.BankDescription,
		Type:                wire.StrPtr(t.Kind),
		CreatedAt:           created,
	}
	if t.CounterpartyNickname != nil && *t.CounterpartyNickname != "" {
		tx.Summary = *t.CounterpartyNickname
	}
	if tx.Summary == "" && t.BankDescription != nil {
		tx.Summary = *t.BankDescription
	}
	if cardKinds[t.Kind] && t.CounterpartyName != "" {
		tx.MerchantName = wire.Ptr(t.CounterpartyName)
	}
	if t.MercuryCategory != nil && *t.MercuryCategory != "" {
		tx.Category = &providers.CategoryRef{ProviderID: *t.MercuryCategory, Name: names.of(*t.MercuryCategory)}
	}
	if x := t.CurrencyExchangeInfo; x != nil && x.FeeAmount != nil && !x.FeeAmount.IsZero() {
		fee := *x.FeeAmount
		if fee.Decimal().IsPositive() {
			fee = fee.Neg()
		}
		tx.Fees = &fee
	}
	if t.Status == "sent" {
		tx.Status = domain.TxPosted
		posted := created
		if t.PostedAt != nil {
			posted = t.PostedAt.UTC()
		}
		tx.PostedDate, tx.PostedAt = wire.DatePtr(posted), &posted
	}
	return tx
}

// HumaniseCategory splits a Mercury category code into words:
// "FuelAndGas" → "Fuel and gas".
func HumaniseCategory(code string) string {
	var b strings.Builder
	for i, r := range code {
		if i > 0 && unicode.IsUpper(r) {
			b.WriteByte(' ')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
