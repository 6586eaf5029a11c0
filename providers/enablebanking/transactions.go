package enablebanking

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/internal/wire"
)

const (
	// WindowDays is how far back a first sync reads (banks commonly give
	// 90 days without the user present).
	WindowDays = 90
	// OverlapDays is how many days before an account's last booking date a
	// later sync reads again, so that late bookings and postings are seen.
	OverlapDays = 7
	// maxPages bounds the continuation pages read for one account in one
	// call, against a server that never ends its paging.
	maxPages = 200
)

// cursor is the opaque state behind TransactionRequest.Cursor. Booked
// survives between syncs; Accounts, Index and Retry locate a sync in
// progress.
type cursor struct {
	Booked   map[string]string `json:"b,omitempty"`
	Accounts []string          `json:"a,omitempty"`
	Index    int               `json:"i,omitempty"`
	Retry    int64             `json:"r,omitempty"`
}

type party struct {
	Name string `json:"name"`
}

type transaction struct {
	EntryReference       string   `json:"entry_reference"`
	TransactionID        string   `json:"transaction_id"`
	TransactionAmount    amount   `json:"transaction_amount"`
	CreditDebitIndicator string   `json:"credit_debit_indicator"`
	Status               string   `json:"status"`
	BookingDate          string   `json:"booking_date"`
	ValueDate            string   `json:"value_date"`
	TransactionDate      string   `json:"transaction_date"`
	Creditor             *party   `json:"creditor"`
	Debtor               *party   `json:"debtor"`
	RemittanceInfo       []string `json:"remittance_information"`
	BankTransactionCode  *struct {
		Description string `json:"description"`
	} `json:"bank_transaction_code"`
}

type transactionsPage struct {
	Transactions    []transaction `json:"transactions"`
	ContinuationKey *string       `json:"continuation_key"`
}

// Transactions reads one account per call: every continuation page of its
// transactions from its last booking date minus OverlapDays (first sync:
// WindowDays back) to today, so that the page carries the account's whole
// pending set (ReplacePendingFor). An account whose daily quota is spent
// is skipped without a call; the last page's NextAllowedAt is when every
// account can be read again.
func (a *Adapter) Transactions(ctx context.Context, conn providers.Connection, req providers.TransactionRequest) (providers.TransactionPage, error) {
	var cur cursor
	if err := wire.DecodeCursor(req.Cursor, &cur); err != nil {
		return providers.TransactionPage{}, wire.InvalidCursor(Name, err)
	}
	if cur.Booked == nil {
		cur.Booked = map[string]string{}
	}
	if cur.Accounts == nil {
		s, err := a.readSession(ctx, conn)
		if err != nil {
			return providers.TransactionPage{}, err
		}
		cur.Accounts, cur.Index, cur.Retry = append([]string{}, s.Accounts...), 0, 0
	}
	today := req.Today
	if today.IsZero() {
		today = domain.DateOf(a.now())
	}
	var page providers.TransactionPage
	for ; cur.Index < len(cur.Accounts); cur.Index++ {
		uid := cur.Accounts[cur.Index]
		if ok, reset := a.spend(ctx, uid, "transactions"); !ok {
			cur.Retry = max(cur.Retry, reset.Unix())
			continue
		}
		p, err := a.account(ctx, conn, uid, today, &cur)
		if err != nil {
			a.noteSpent(ctx, uid, "transactions", err)
			return providers.TransactionPage{}, fmt.Errorf("enablebanking transactions of %s: %w", uid, err)
		}
		page = p
		cur.Index++
		break
	}
	if cur.Index < len(cur.Accounts) {
		page.Next = wire.EncodeCursor(cur)
		return page, nil
	}
	if cur.Retry > 0 {
		page.NextAllowedAt = time.Unix(cur.Retry, 0).UTC()
	}
	page.Next, page.Done = wire.EncodeCursor(cursor{Booked: cur.Booked}), true
	return page, nil
}

// account reads every page of one account's window and records its latest
// booking date in cur.
func (a *Adapter) account(ctx context.Context, conn providers.Connection, uid string, today domain.Date, cur *cursor) (providers.TransactionPage, error) {
	from := today.AddDate(0, 0, -WindowDays)
	if last, err := domain.ParseDate(cur.Booked[uid]); err == nil {
		from = last.AddDate(0, 0, -OverlapDays)
	}
	if from.After(today.Time) {
		from = today.Time
	}
	q := url.Values{"date_from": {domain.DateOf(from).String()}, "date_to": {today.String()}}
	page := providers.TransactionPage{ReplacePendingFor: []string{uid}}
	ids := map[string]int{}
	for n := 0; n < maxPages; n++ {
		var tp transactionsPage
		if err := a.call(ctx, conn, http.MethodGet, "/accounts/"+url.PathEscape(uid)+"/transactions", q, nil, &tp); err != nil {
			return page, err
		}
		for _, t := range tp.Transactions {
			tx := mapTransaction(uid, t, ids)
			page.Upserts = append(page.Upserts, tx)
			if tx.PostedDate != nil && tx.PostedDate.String() > cur.Booked[uid] {
				cur.Booked[uid] = tx.PostedDate.String()
			}
		}
		if tp.ContinuationKey == nil || *tp.ContinuationKey == "" {
			return page, nil
		}
		q.Set("continuation_key", *tp.ContinuationKey)
	}
	return page, &providers.Error{Provider: Name, Class: providers.Unavailable, Code: "TOO_MANY_PAGES",
		Message: fmt.Sprintf("account %s: more than %d pages", uid, maxPages)}
}

// mapTransaction converts a row: the amount is unsigned and DBIT is money
// out; the counterparty (the creditor of a debit, the debtor of a credit)
// is the summary and, for money out, the merchant; remittance lines are
// the original description. A row is identified within its account by its
// entry_reference (kept by the bank when a pending row books), else its
// transaction_id, else its content and occurrence among identical rows.
func mapTransaction(uid string, t transaction, seen map[string]int) providers.Transaction {
	amt := domain.MoneyFromDecimal(t.TransactionAmount.Amount.Abs())
	counterparty := t.Debtor
	if t.CreditDebitIndicator == "DBIT" {
		amt, counterparty = amt.Neg(), t.Creditor
	}
	name := ""
	if counterparty != nil {
		name = strings.TrimSpace(counterparty.Name)
	}
	remittance := strings.TrimSpace(strings.Join(t.RemittanceInfo, " "))
	tx := providers.Transaction{
		ProviderID:          uid + "/" + rowID(uid, t, seen),
		ProviderAccountID:   uid,
		Status:              domain.TxPending,
		Summary:             cmp.Or(name, remittance),
		Amount:              amt,
		Currency:            strings.ToUpper(t.TransactionAmount.Currency),
		AuthorizedDate:      wire.ParseDatePtr(cmp.Or(t.TransactionDate, t.ValueDate, t.BookingDate)),
		OriginalDescription: wire.StrPtr(remittance),
	}
	if t.BankTransactionCode != nil {
		tx.Type = wire.StrPtr(t.BankTransactionCode.Description)
	}
	if amt.Decimal().IsNegative() && name != "" {
		tx.MerchantName = wire.Ptr(name)
	}
	if tx.AuthorizedDate != nil {
		tx.CreatedAt = tx.AuthorizedDate.Time
	}
	if t.Status != "PDNG" {
		tx.Status = domain.TxPosted
		tx.PostedDate = wire.ParseDatePtr(cmp.Or(t.BookingDate, t.ValueDate, t.TransactionDate))
		if tx.PostedDate != nil {
			at := tx.PostedDate.Time
			tx.PostedAt = &at
		}
	}
	return tx
}

// rowID is a row's id within its account (see mapTransaction).
func rowID(uid string, t transaction, seen map[string]int) string {
	if id := cmp.Or(t.EntryReference, t.TransactionID); id != "" {
		return id
	}
	party := func(p *party) string {
		if p == nil {
			return ""
		}
		return p.Name
	}
	sum := sha256.Sum256([]byte(strings.Join([]string{uid, t.Status, t.BookingDate, t.ValueDate, t.TransactionDate,
		t.TransactionAmount.Amount.String(), t.TransactionAmount.Currency, t.CreditDebitIndicator,
		party(t.Creditor), party(t.Debtor), strings.Join(t.RemittanceInfo, "\x1f")}, "\x1e")))
	h := hex.EncodeToString(sum[:12])
	n := seen[h]
	seen[h] = n + 1
	return "h_" + h + "_" + strconv.Itoa(n)
}
