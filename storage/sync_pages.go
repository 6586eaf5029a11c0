package storage

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
)

// ErrUnknownAccount is a reported transaction whose account the provider
// did not list in the same sync (ApplyAccounts). No retry of the same data
// can help.
var ErrUnknownAccount = errors.New("transaction for an account the provider did not list")

// storedPage is one provider page of transactions as the session stores
// it: the page's rows as domain records of the connection's accounts.
type storedPage struct {
	// Upserts are the page's new and changed transactions; their
	// CategoryID is set by the session from Categories (rows).
	Upserts []domain.Transaction
	// Categories are the provider's categories of Upserts, by index; one
	// with an empty ProviderID (or past the end) is none.
	Categories []domain.ReportedCategory
	// Removed are provider ids the provider deleted.
	Removed []string
	// ReplacePendingFor are provider account ids whose whole pending set
	// this page and the earlier pages of the same sync list: their stored
	// pending transactions not among those pages' pending rows are
	// removed. The pending rows of a sync's pages are kept (in the
	// database, so across batches and slices) until its Last page.
	ReplacePendingFor []string
	// Next is the cursor after the page.
	Next string
	// Last marks the sync's last page: after it, the pending rows its
	// pages listed are forgotten, and the next sync's pages start afresh.
	Last bool
}

// pages converts the provider's pages to the rows the session stores.
func (ss *SyncSession) pages(reported []domain.ReportedPage) ([]storedPage, error) {
	out := make([]storedPage, len(reported))
	for i := range reported {
		var err error
		if out[i], err = ss.page(&reported[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// page converts one provider page.
func (ss *SyncSession) page(p *domain.ReportedPage) (storedPage, error) {
	out := storedPage{Upserts: make([]domain.Transaction, 0, len(p.Upserts)), Removed: p.Removed,
		ReplacePendingFor: p.ReplacePendingFor, Next: p.Next, Last: p.Done}
	for i := range p.Upserts {
		t, err := ss.transaction(&p.Upserts[i])
		if err != nil {
			return storedPage{}, err
		}
		out.Upserts = append(out.Upserts, t)
		if c := p.Upserts[i].Category; c != nil && c.ProviderID != "" {
			if out.Categories == nil {
				out.Categories = make([]domain.ReportedCategory, len(p.Upserts))
			}
			out.Categories[i] = *c
		}
	}
	return out, nil
}

// transaction converts one reported transaction to a row of the
// connection's account.
func (ss *SyncSession) transaction(t *domain.ReportedTransaction) (domain.Transaction, error) {
	acct, ok := ss.accounts[t.ProviderAccountID]
	if !ok {
		return domain.Transaction{}, fmt.Errorf("%w: %s", ErrUnknownAccount, t.ProviderAccountID)
	}
	created := t.CreatedAt
	if created.IsZero() {
		created = ss.now()
	}
	connID := ss.conn.ID
	return domain.Transaction{
		UserID: ss.conn.UserID, BankConnectionID: &connID, AccountID: acct, Provider: ss.conn.Provider,
		ProviderID: t.ProviderID, Status: t.Status, Summary: t.Summary, Amount: t.Amount, Currency: t.Currency,
		AuthorizedDate: t.AuthorizedDate, PostedDate: t.PostedDate, MerchantName: t.MerchantName,
		Fees: t.Fees, FeeType: t.FeeType, NetAmount: t.NetAmount, SubAccount: t.SubAccount,
		PaymentChannel: t.PaymentChannel, CheckNumber: t.CheckNumber, OriginalDescription: t.OriginalDescription,
		Type: t.Type, CreatedAt: created, PostedAt: t.PostedAt, PendingProviderID: t.PendingProviderID,
	}, nil
}

func (ss *SyncSession) now() time.Time {
	if ss.opts.Now != nil {
		return ss.opts.Now()
	}
	return time.Now()
}

// noteBalanceChanges records the days from which a committed batch's
// posted rows may move their accounts' derived balances. Pending rows do
// not count in a booked balance. (A batch that wrote no row moves no
// balance; one that wrote some counts all its rows, to be safe.)
func (ss *SyncSession) noteBalanceChanges(batch []storedPage) {
	for i := range batch {
		for j := range batch[i].Upserts {
			t := &batch[i].Upserts[j]
			if t.Status != domain.TxPosted {
				continue
			}
			day := t.PostedDate
			if day == nil {
				day = t.AuthorizedDate
			}
			if day == nil {
				continue
			}
			if ss.balanceSince == nil {
				ss.balanceSince = map[uuid.UUID]domain.Date{}
			}
			if old, ok := ss.balanceSince[t.AccountID]; !ok || day.Before(old.Time) {
				ss.balanceSince[t.AccountID] = *day
			}
		}
	}
}
