package enablebanking

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/internal/wire"
	"github.com/finsync/finsync/resilience"
)

// WindowDays is how far back a first sync reads, OverlapDays how far before the last
// booking date a later one reads again, maxPages the most pages of an account a call.
const WindowDays, OverlapDays, maxPages = 90, 7, 200

type session struct {
	Status   string   `json:"status"`
	Accounts []string `json:"accounts"`
	ASPSP    struct {
		Name    string `json:"name"`
		Country string `json:"country"`
	} `json:"aspsp"`
	Access struct {
		ValidUntil string `json:"valid_until"`
	} `json:"access"`
}

type details struct {
	AccountID struct {
		IBAN string `json:"iban"`
	} `json:"account_id"`
	Name               string `json:"name"`
	Product            string `json:"product"`
	Currency           string `json:"currency"`
	CashAccountType    string `json:"cash_account_type"`
	IdentificationHash string `json:"identification_hash"` // the same in every session: a re-link's match
}

type amount struct {
	Currency string          `json:"currency"`
	Amount   decimal.Decimal `json:"amount"`
}
type balance struct {
	BalanceAmount amount `json:"balance_amount"`
	BalanceType   string `json:"balance_type"`
}
type party struct {
	Name string `json:"name"`
}

// readSession reads the connection's session: one not AUTHORIZED (expired,
// closed, revoked) by the server's word, not our clock, needs the user.
func (a *Adapter) readSession(ctx context.Context, conn providers.Connection) (session, error) {
	var s session
	if err := a.call(ctx, conn, "/sessions/{session}", nil, &s); err != nil {
		return s, fmt.Errorf("enablebanking session: %w", err)
	}
	if s.Status != "" && s.Status != "AUTHORIZED" {
		return s, &resilience.Error{Provider: Name, Class: resilience.ReauthRequired, Code: s.Status + "_SESSION",
			Message: "session " + strings.ToLower(s.Status) + ", valid until " + s.Access.ValidUntil}
	}
	return s, nil
}

// Accounts reads the session (valid_until: the consent's end), then each
// account's details and balances. Balances that cannot be had (quota spent,
// a 429, an outage) are BalancesUnknown; NextAllowedAt is a quota's reset.
func (a *Adapter) Accounts(ctx context.Context, conn providers.Connection) (providers.AccountSet, error) {
	s, err := a.readSession(ctx, conn)
	if err != nil {
		return providers.AccountSet{}, err
	}
	set := providers.AccountSet{Institution: providers.Institution{ID: s.ASPSP.Country + "/" + s.ASPSP.Name, Name: s.ASPSP.Name}}
	set.ConsentExpiresAt, _ = time.Parse(time.RFC3339Nano, s.Access.ValidUntil)
	for _, uid := range s.Accounts {
		var d details
		if err := a.call(ctx, conn, "/accounts/"+url.PathEscape(uid)+"/details", nil, &d); err != nil {
			return providers.AccountSet{}, fmt.Errorf("enablebanking account %s: %w", uid, err)
		}
		acc := mapAccount(uid, d)
		bals, retry, err := a.balances(ctx, conn, uid)
		if err != nil {
			return providers.AccountSet{}, err
		}
		applyBalances(&acc, bals)
		if acc.CurrentBalance == nil {
			acc.AvailableBalance, acc.BalancesUnknown = nil, true
		}
		if retry.After(set.NextAllowedAt) {
			set.NextAllowedAt = retry
		}
		set.Accounts = append(set.Accounts, acc)
	}
	return set, nil
}

// balances reads an account's balances within its daily quota: none, and
// no error, when a later call may have them; retry is a spent quota's end.
func (a *Adapter) balances(ctx context.Context, conn providers.Connection, uid string) ([]balance, time.Time, error) {
	if ok, reset := a.spend(ctx, uid, "balances"); !ok {
		return nil, reset, nil
	}
	var b struct {
		Balances []balance `json:"balances"`
	}
	err := a.call(ctx, conn, "/accounts/"+url.PathEscape(uid)+"/balances", nil, &b)
	a.noteSpent(ctx, uid, "balances", err)
	if pe := resilience.AsError(err); err != nil && ctx.Err() == nil && pe != nil && pe.Class == resilience.RateLimited {
		return nil, a.d.Now().Add(pe.RetryAfter), nil
	} else if err != nil && (ctx.Err() != nil || pe == nil || pe.Class != resilience.Unavailable) {
		return nil, time.Time{}, fmt.Errorf("enablebanking balances of %s: %w", uid, err)
	}
	return b.Balances, time.Time{}, nil
}

// accountTypes maps ISO 20022 cash account types to type and subtype.
var accountTypes = map[string][2]string{"CACC": {"depository", "checking"}, "CASH": {"depository", "checking"},
	"TRAN": {"depository", "checking"}, "SVGS": {"depository", "savings"}, "CARD": {"credit", "credit card"}, "LOAN": {"loan", "loan"}}

func mapAccount(uid string, d details) providers.Account {
	acc := providers.Account{ProviderAccountID: uid, Name: cmp.Or(d.Name, d.Product, d.AccountID.IBAN),
		Currency: strings.ToUpper(d.Currency), Type: "other", Subtype: "other", Mask: wire.Last4(d.AccountID.IBAN),
		PersistentID: d.IdentificationHash}
	if t, ok := accountTypes[d.CashAccountType]; ok {
		acc.Type, acc.Subtype = t[0], t[1]
	}
	return acc
}

// applyBalances picks current (CLBD ?? XPCD ?? ITBD ?? OPBD) and available
// (CLAV ?? ITAV ?? FWAV). A credit or loan account's negative current
// balance becomes the amount owed; its available one is the credit left.
func applyBalances(acc *providers.Account, bals []balance) {
	pick := func(owed bool, types ...string) *domain.Money {
		for _, t := range types {
			for _, b := range bals {
				if m := domain.MoneyFromDecimal(b.BalanceAmount.Amount); b.BalanceType == t {
					if owed && (acc.Type == "credit" || acc.Type == "loan") {
						m = m.Neg()
					}
					acc.Currency = cmp.Or(acc.Currency, strings.ToUpper(b.BalanceAmount.Currency))
					return &m
				}
			}
		}
		return nil
	}
	acc.CurrentBalance, acc.AvailableBalance = pick(true, "CLBD", "XPCD", "ITBD", "OPBD"), pick(false, "CLAV", "ITAV", "FWAV")
}

// cursor is the opaque Cursor: each account's last booking date; the next
// account and the latest reset of accounts skipped in the sync under way.
type cursor struct {
	Booked map[string]string `json:"b,omitempty"`
	Index  int               `json:"i,omitempty"`
	Retry  int64             `json:"r,omitempty"`
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
}

// Transactions reads one account per call: every continuation page from
// its last booking date minus OverlapDays (first sync: WindowDays back) to
// req.Today, so that ids made of content count occurrences over the whole window.
// An account whose quota is spent is skipped; the last page's NextAllowedAt
// is its reset. The session read costs no bank quota.
func (a *Adapter) Transactions(ctx context.Context, conn providers.Connection, req providers.TransactionRequest) (providers.TransactionPage, error) {
	cur := cursor{Booked: map[string]string{}}
	if err := wire.DecodeCursor(req.Cursor, &cur); err != nil {
		return providers.TransactionPage{}, wire.InvalidCursor(Name, err)
	}
	s, err := a.readSession(ctx, conn)
	if err != nil {
		return providers.TransactionPage{}, err
	}
	page, today := providers.TransactionPage{}, cmp.Or(req.Today, domain.DateOf(a.d.Now()))
	for ; cur.Index < len(s.Accounts) && page.ReplacePendingFor == nil; cur.Index++ {
		uid := s.Accounts[cur.Index]
		if ok, reset := a.spend(ctx, uid, "transactions"); !ok {
			cur.Retry = max(cur.Retry, reset.Unix())
		} else if page, err = a.account(ctx, conn, uid, today, cur.Booked); err != nil {
			a.noteSpent(ctx, uid, "transactions", err)
			return providers.TransactionPage{}, fmt.Errorf("enablebanking transactions of %s: %w", uid, err)
		}
	}
	if page.Done = cur.Index >= len(s.Accounts); page.Done && cur.Retry > 0 {
		page.NextAllowedAt = time.Unix(cur.Retry, 0).UTC()
	}
	if page.Done {
		cur = cursor{Booked: cur.Booked}
	}
	page.Next = wire.EncodeCursor(cur)
	return page, nil
}

// account reads every page of one account's window and records its latest
// booking date in booked.
func (a *Adapter) account(ctx context.Context, conn providers.Connection, uid string, today domain.Date, booked map[string]string) (providers.TransactionPage, error) {
	from := today.AddDate(0, 0, -WindowDays)
	if last, err := domain.ParseDate(booked[uid]); err == nil && last.Before(today.Time) {
		from = last.AddDate(0, 0, -OverlapDays)
	}
	q := url.Values{"date_from": {domain.DateOf(from).String()}, "date_to": {today.String()}}
	page, seen := providers.TransactionPage{ReplacePendingFor: []string{uid}}, map[string]int{}
	for range maxPages {
		var tp struct {
			Transactions    []transaction `json:"transactions"`
			ContinuationKey string        `json:"continuation_key"`
		}
		if err := a.call(ctx, conn, "/accounts/"+url.PathEscape(uid)+"/transactions", q, &tp); err != nil {
			return page, err
		}
		for _, t := range tp.Transactions {
			tx := mapTransaction(uid, t, seen)
			page.Upserts = append(page.Upserts, tx)
			if tx.PostedDate != nil {
				booked[uid] = max(booked[uid], tx.PostedDate.String())
			}
		}
		if tp.ContinuationKey == "" {
			return page, nil
		}
		q.Set("continuation_key", tp.ContinuationKey)
	}
	return page, &resilience.Error{Provider: Name, Class: resilience.Unavailable, Code: "TOO_MANY_PAGES", Message: "account " + uid + ": too many pages"}
}

// mapTransaction converts a row: DBIT is money out; the counterparty (a
// debit's creditor, a credit's debtor) is the summary and a debit's
// merchant; remittance lines the original description. The id is
// entry_reference (kept as a pending row books), else transaction_id, else
// the content and its occurrence among identical rows.
func mapTransaction(uid string, t transaction, seen map[string]int) providers.Transaction {
	amt, counterparty := domain.MoneyFromDecimal(t.TransactionAmount.Amount.Abs()), t.Debtor
	if t.CreditDebitIndicator == "DBIT" {
		amt, counterparty = amt.Neg(), t.Creditor
	}
	name, remittance := "", strings.TrimSpace(strings.Join(t.RemittanceInfo, " "))
	if counterparty != nil {
		name = strings.TrimSpace(counterparty.Name)
	}
	id := cmp.Or(t.EntryReference, t.TransactionID)
	if id == "" {
		id = strings.Join([]string{t.Status, t.BookingDate, t.TransactionDate, t.CreditDebitIndicator, t.TransactionAmount.Amount.String(), name, remittance}, "|")
		id, seen[id] = id+"|"+strconv.Itoa(seen[id]), seen[id]+1
	}
	tx := providers.Transaction{ProviderID: uid + "/" + id, ProviderAccountID: uid, Status: domain.TxPending,
		Summary: cmp.Or(name, remittance), Amount: amt, Currency: strings.ToUpper(t.TransactionAmount.Currency),
		AuthorizedDate:      wire.ParseDatePtr(cmp.Or(t.TransactionDate, t.ValueDate, t.BookingDate)),
		OriginalDescription: wire.StrPtr(remittance)}
	if amt.Decimal().IsNegative() && name != "" {
		tx.MerchantName = &name
	}
	if tx.AuthorizedDate != nil {
		tx.CreatedAt = tx.AuthorizedDate.Time
	}
	if t.Status != "PDNG" {
		tx.Status, tx.PostedDate = domain.TxPosted, wire.ParseDatePtr(cmp.Or(t.BookingDate, t.ValueDate, t.TransactionDate))
		if tx.PostedDate != nil {
			tx.PostedAt = &tx.PostedDate.Time
		}
	}
	return tx
}
