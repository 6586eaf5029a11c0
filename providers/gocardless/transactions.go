package gocardless

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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

// cursor is the opaque state behind TransactionRequest.Cursor. Booked and
// Quota survive between syncs; Accounts and Index locate a sync in
// progress (Accounts is nil between syncs).
type cursor struct {
	// Booked is each account's latest booking date (YYYY-MM-DD).
	Booked map[string]string `json:"b,omitempty"`
	// Quota is each account's transactions quota as last reported.
	Quota map[string]quota `json:"q,omitempty"`
	// Accounts are the account ids of the sync in progress.
	Accounts []string `json:"a,omitempty"`
	// Index is the next account to read.
	Index int `json:"i,omitempty"`
	// Skipped are the resets of accounts skipped on this sync (Unix s).
	Skipped []int64 `json:"s,omitempty"`
}

type txAmount = amount

type transaction struct {
	TransactionID                          string          `json:"transactionId"`
	InternalTransactionID                  string          `json:"internalTransactionId"`
	EntryReference                         string          `json:"entryReference"`
	EndToEndID                             string          `json:"endToEndId"`
	MandateID                              string          `json:"mandateId"`
	CheckID                                string          `json:"checkId"`
	BookingDate                            string          `json:"bookingDate"`
	BookingDateTime                        string          `json:"bookingDateTime"`
	ValueDate                              string          `json:"valueDate"`
	ValueDateTime                          string          `json:"valueDateTime"`
	TransactionAmount                      txAmount        `json:"transactionAmount"`
	CreditorName                           string          `json:"creditorName"`
	DebtorName                             string          `json:"debtorName"`
	RemittanceInformationUnstructured      string          `json:"remittanceInformationUnstructured"`
	RemittanceInformationUnstructuredArray []string        `json:"remittanceInformationUnstructuredArray"`
	RemittanceInformationStructured        string          `json:"remittanceInformationStructured"`
	AdditionalInformation                  string          `json:"additionalInformation"`
	BankTransactionCode                    string          `json:"bankTransactionCode"`
	ProprietaryBankTransactionCode         string          `json:"proprietaryBankTransactionCode"`
	MerchantCategoryCode                   string          `json:"merchantCategoryCode"`
	CreditorAccount                        json.RawMessage `json:"creditorAccount"`
	DebtorAccount                          json.RawMessage `json:"debtorAccount"`
}

type transactionsResponse struct {
	Transactions struct {
		Booked  []transaction `json:"booked"`
		Pending []transaction `json:"pending"`
	} `json:"transactions"`
}

// Transactions reads one account's transactions per call over the window
// from its last booked date minus OverlapDays to today. Booked rows are
// posted; pending rows are the account's complete pending set
// (ReplacePendingFor). An account whose daily quota is spent is skipped
// without a call, and the last page's NextAllowedAt says when every account
// can be read again.
func (a *Adapter) Transactions(ctx context.Context, conn providers.Connection, req providers.TransactionRequest) (providers.TransactionPage, error) {
	var cur cursor
	if err := wire.DecodeCursor(req.Cursor, &cur); err != nil {
		return providers.TransactionPage{}, wire.InvalidCursor(name, err)
	}
	if cur.Booked == nil {
		cur.Booked = map[string]string{}
	}
	if cur.Quota == nil {
		cur.Quota = map[string]quota{}
	}
	if cur.Accounts == nil {
		r, err := a.requisition(ctx, conn)
		if err != nil {
			return providers.TransactionPage{}, err
		}
		cur.Accounts, cur.Index, cur.Skipped = append([]string{}, r.Accounts...), 0, nil
	}
	today := req.Today
	if today.IsZero() {
		today = domain.DateOf(a.now())
	}
	page := providers.TransactionPage{}
	for ; cur.Index < len(cur.Accounts); cur.Index++ {
		id := cur.Accounts[cur.Index]
		if q, spent := a.spent(ctx, cur, id); spent {
			cur.Skipped = append(cur.Skipped, q.Reset)
			continue
		}
		p, err := a.fetchAccount(ctx, conn, id, today, &cur)
		if err != nil {
			return providers.TransactionPage{}, err
		}
		page = p
		cur.Index++
		break
	}
	return a.finish(cur, page), nil
}

// spent reports an account whose transactions quota is known to be spent.
func (a *Adapter) spent(ctx context.Context, cur cursor, id string) (quota, bool) {
	now := a.now()
	if q, ok := cur.Quota[id]; ok && q.exhausted(now) {
		return q, true
	}
	if q, ok := a.quotaFor(ctx, id, endpointTransactions); ok && q.exhausted(now) {
		return q, true
	}
	return quota{}, false
}

// finish sets page.Next and, on the last page, Done and NextAllowedAt.
func (a *Adapter) finish(cur cursor, page providers.TransactionPage) providers.TransactionPage {
	if cur.Index < len(cur.Accounts) {
		page.Next = wire.EncodeCursor(cur)
		return page
	}
	now := a.now()
	var next int64
	for _, r := range cur.Skipped {
		next = max(next, r)
	}
	for _, q := range cur.Quota {
		if q.exhausted(now) {
			next = max(next, q.Reset)
		}
	}
	if next > 0 {
		page.NextAllowedAt = time.Unix(next, 0).UTC()
	}
	page.Next = wire.EncodeCursor(cursor{Booked: cur.Booked, Quota: cur.Quota})
	page.Done = true
	return page
}

// fetchAccount reads one account's transactions and records its quota and
// latest booking date in cur.
func (a *Adapter) fetchAccount(ctx context.Context, conn providers.Connection, id string, today domain.Date, cur *cursor) (providers.TransactionPage, error) {
	q := url.Values{"date_to": {today.String()}}
	if last, err := domain.ParseDate(cur.Booked[id]); err == nil {
		from := last.AddDate(0, 0, -OverlapDays)
		if from.After(today.Time) {
			from = today.Time
		}
		q.Set("date_from", domain.DateOf(from).String())
	}
	var resp transactionsResponse
	raw, err := a.call(ctx, conn, request{method: http.MethodGet, path: "/accounts/" + url.PathEscape(id) + "/transactions/", query: q}, &resp)
	if qu, ok := a.observe(ctx, id, endpointTransactions, raw); ok {
		cur.Quota[id] = qu
	}
	if err != nil {
		return providers.TransactionPage{}, fmt.Errorf("gocardless transactions of account %s: %w", id, err)
	}
	page, latest := mapTransactions(id, resp)
	if latest > cur.Booked[id] {
		cur.Booked[id] = latest
	}
	return page, nil
}

// mapTransactions converts one account's answer and returns its latest
// booking date.
func mapTransactions(accountID string, resp transactionsResponse) (providers.TransactionPage, string) {
	page := providers.TransactionPage{ReplacePendingFor: []string{accountID}}
	latest := ""
	ids := newIDMaker(accountID)
	for _, t := range resp.Transactions.Booked {
		tx := mapTransaction(accountID, t, ids.id("booked", t), false)
		page.Upserts = append(page.Upserts, tx)
		if d := datePart(t.BookingDate, t.BookingDateTime); d > latest {
			latest = d
		}
	}
	for _, t := range resp.Transactions.Pending {
		page.Upserts = append(page.Upserts, mapTransaction(accountID, t, ids.id("pending", t), true))
	}
	return page, latest
}

// idMaker gives each row its provider id: transactionId, else
// internalTransactionId, else a hash of its content plus its occurrence
// index among identical rows of the same answer.
type idMaker struct {
	account string
	seen    map[string]int
}

func newIDMaker(account string) *idMaker { return &idMaker{account: account, seen: map[string]int{}} }

func (m *idMaker) id(list string, t transaction) string {
	if t.TransactionID != "" {
		return t.TransactionID
	}
	if t.InternalTransactionID != "" {
		return t.InternalTransactionID
	}
	h := ContentHash(m.account, list, t)
	n := m.seen[h]
	m.seen[h] = n + 1
	return "h_" + h + "_" + strconv.Itoa(n)
}

// ContentHash is a stable hash of the fields that describe a transaction
// without a bank id (used, with an occurrence index, as its provider id).
func ContentHash(account, list string, t transaction) string {
	parts := []string{
		account, list, t.BookingDate, t.BookingDateTime, t.ValueDate, t.ValueDateTime,
		t.TransactionAmount.Amount.String(), t.TransactionAmount.Currency,
		t.CreditorName, t.DebtorName, t.RemittanceInformationUnstructured,
		strings.Join(t.RemittanceInformationUnstructuredArray, "\x1f"), t.RemittanceInformationStructured,
		t.AdditionalInformation, t.EntryReference, t.EndToEndID, t.MandateID, t.CheckID,
		t.BankTransactionCode, t.ProprietaryBankTransactionCode, t.MerchantCategoryCode,
		string(t.CreditorAccount), string(t.DebtorAccount),
	}
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x1e")))
	return hex.EncodeToString(sum[:12])
}

func datePart(date, datetime string) string {
	if date != "" {
		return date
	}
	if d := wire.ParseDatePtr(datetime); d != nil {
		return d.String()
	}
	return ""
}

func mapTransaction(accountID string, t transaction, id string, pending bool) providers.Transaction {
	amt := domain.MoneyFromDecimal(t.TransactionAmount.Amount)
	tx := providers.Transaction{
		ProviderID:          id,
		ProviderAccountID:   accountID,
		Status:              domain.TxPosted,
		Summary:             summary(t, amt),
		Amount:              amt,
		Currency:            t.TransactionAmount.Currency,
		AuthorizedDate:      wire.ParseDatePtr(datePart(t.ValueDate, t.ValueDateTime)),
		CheckNumber:         wire.StrPtr(t.CheckID),
		OriginalDescription: wire.StrPtr(t.RemittanceInformationUnstructured),
		Type:                wire.StrPtr(firstNonEmpty(t.BankTransactionCode, t.ProprietaryBankTransactionCode)),
	}
	if amt.Decimal().IsNegative() && t.CreditorName != "" {
		tx.MerchantName = wire.Ptr(t.CreditorName)
	}
	booked := wire.ParseDatePtr(datePart(t.BookingDate, t.BookingDateTime))
	tx.CreatedAt = firstTime(t.BookingDateTime, t.ValueDateTime, datePart(t.ValueDate, ""), datePart(t.BookingDate, ""))
	if pending {
		tx.Status = domain.TxPending
		if tx.AuthorizedDate == nil {
			tx.AuthorizedDate = booked
		}
		return tx
	}
	tx.PostedDate = booked
	if booked != nil {
		at := firstTime(t.BookingDateTime, booked.String())
		tx.PostedAt = &at
	}
	return tx
}

func summary(t transaction, amt domain.Money) string {
	counterparty := t.DebtorName
	if amt.Decimal().IsNegative() {
		counterparty = t.CreditorName
	}
	return firstNonEmpty(counterparty, t.CreditorName, t.DebtorName, t.RemittanceInformationUnstructured,
		strings.Join(t.RemittanceInformationUnstructuredArray, " "), t.RemittanceInformationStructured,
		t.AdditionalInformation)
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s = strings.TrimSpace(s); s != "" {
			return s
		}
	}
	return ""
}

// firstTime parses the first RFC 3339 time or YYYY-MM-DD date that parses.
func firstTime(ss ...string) time.Time {
	for _, s := range ss {
		if s == "" {
			continue
		}
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t.UTC()
		}
		if d, err := domain.ParseDate(s); err == nil {
			return d.Time
		}
	}
	return time.Time{}
}
