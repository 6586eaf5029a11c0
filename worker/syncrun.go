package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/storage"
)

// syncRun is one sync of one connection.
type syncRun struct {
	*Syncer
	conn     domain.BankConnection
	pc       providers.Connection
	p        providers.Provider
	today    domain.Date
	accounts map[string]uuid.UUID
	// dataset names what was being fetched when a failure happened.
	dataset       string
	nextAllowedAt time.Time
}

func (r *syncRun) all(ctx context.Context, cursor string) (storage.SyncOutcome, error) {
	var o storage.SyncOutcome
	r.dataset = "accounts"
	set, err := r.p.Accounts(ctx, r.pc)
	if err != nil {
		return o, err
	}
	o.HasInvestments = set.HasInvestments
	o.Institution, o.InstitutionID, o.LogoURL = set.Institution.Name, set.Institution.ID, set.Institution.LogoURL
	if err := r.storeAccounts(ctx, set); err != nil {
		return o, err
	}
	r.dataset = "transactions"
	if err := r.transactions(ctx, cursor); err != nil {
		return o, err
	}
	if set.HasInvestments {
		if err := r.investments(ctx); err != nil {
			return o, err
		}
	}
	r.dataset = ""
	return o, nil
}

func (r *syncRun) storeAccounts(ctx context.Context, set providers.AccountSet) error {
	accts := make([]storage.SyncedAccount, len(set.Accounts))
	for i, a := range set.Accounts {
		accts[i] = storage.SyncedAccount{
			ProviderAccountID: a.ProviderAccountID, Name: a.Name, Mask: a.Mask, Type: a.Type, Subtype: a.Subtype,
			Currency: a.Currency, CurrentBalance: a.CurrentBalance, AvailableBalance: a.AvailableBalance,
			CreditLimit: a.CreditLimit, Liability: a.Liability,
		}
	}
	if set.Institution.Name != "" {
		r.conn.InstitutionName = set.Institution.Name
	}
	return r.Store.InTx(ctx, func(tx pgx.Tx) error {
		ids, err := storage.UpsertAccounts(ctx, tx, r.conn, accts, r.today)
		if err != nil {
			return err
		}
		r.accounts = ids
		return storage.MarkDataset(ctx, tx, r.conn.ID, "accounts", true, "")
	})
}

// fetched is one page from the prefetcher, or the error that ended it.
type fetched struct {
	page providers.TransactionPage
	err  error
}

// transactions walks the provider's pages from the cursor. The next page is
// fetched while the current one is written.
func (r *syncRun) transactions(ctx context.Context, cursor string) error {
	var pending []string
	if r.conn.Provider == domain.ProviderStripe {
		var err error
		if pending, err = r.Store.PendingProviderIDs(ctx, r.conn.ID); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pages := make(chan fetched, 1)
	go func() {
		defer close(pages)
		req := providers.TransactionRequest{Cursor: cursor, PendingIDs: pending, Today: r.today}
		for {
			page, err := r.p.Transactions(ctx, r.pc, req)
			select {
			case pages <- fetched{page, err}:
			case <-ctx.Done():
				return
			}
			if err != nil || page.Done {
				return
			}
			req = providers.TransactionRequest{Cursor: page.Next, Today: r.today}
		}
	}()
	for f := range pages {
		if f.err != nil {
			return f.err
		}
		if err := r.storePage(ctx, f.page); err != nil {
			return err
		}
		if f.page.NextAllowedAt.After(r.nextAllowedAt) {
			r.nextAllowedAt = f.page.NextAllowedAt
		}
	}
	return nil
}

// storePage writes one page and its cursor in one database transaction.
func (r *syncRun) storePage(ctx context.Context, page providers.TransactionPage) error {
	return r.Store.InTx(ctx, func(tx pgx.Tx) error {
		cats, err := r.categories(ctx, tx, page.Upserts)
		if err != nil {
			return err
		}
		rows := make([]domain.Transaction, 0, len(page.Upserts))
		var keepPending []string
		for i := range page.Upserts {
			t, err := r.convert(&page.Upserts[i], cats)
			if err != nil {
				return err
			}
			if t.Status == domain.TxPending {
				keepPending = append(keepPending, t.ProviderID)
			}
			rows = append(rows, t)
		}
		changed, err := storage.UpsertTransactions(ctx, tx, r.conn, rows)
		if err != nil {
			return err
		}
		if err := storage.MarkTransactionsDeleted(ctx, tx, r.conn.ID, page.Removed); err != nil {
			return err
		}
		if len(page.ReplacePendingFor) > 0 {
			ids := make([]uuid.UUID, 0, len(page.ReplacePendingFor))
			for _, pa := range page.ReplacePendingFor {
				if id, ok := r.accounts[pa]; ok {
					ids = append(ids, id)
				}
			}
			if err := storage.ReplacePending(ctx, tx, r.conn.ID, ids, append(keepPending, "")); err != nil {
				return err
			}
		}
		if r.ApplyRules != nil && len(changed) > 0 {
			if err := r.ApplyRules(ctx, tx, r.conn.UserID, changed); err != nil {
				return fmt.Errorf("apply rules: %w", err)
			}
		}
		if err := storage.MarkDataset(ctx, tx, r.conn.ID, "transactions", true, ""); err != nil {
			return err
		}
		return storage.SaveCursor(ctx, tx, r.conn.ID, page.Next)
	})
}

// categories copies the page's provider categories for the user.
func (r *syncRun) categories(ctx context.Context, tx pgx.Tx, txs []providers.Transaction) (map[string]uuid.UUID, error) {
	seen := map[string]bool{}
	var cats []storage.ProviderCategory
	for i := range txs {
		c := txs[i].Category
		if c == nil || c.ProviderID == "" || seen[c.ProviderID] {
			continue
		}
		seen[c.ProviderID] = true
		cats = append(cats, storage.ProviderCategory{ProviderID: c.ProviderID, Name: c.Name, Group: c.Group, Description: c.Description})
	}
	return storage.UpsertProviderCategories(ctx, tx, r.conn.UserID, r.conn.Provider, cats)
}

// errUnknownAccount is a transaction whose account the provider did not list.
var errUnknownAccount = errors.New("transaction for an account the provider did not list")

func (r *syncRun) convert(t *providers.Transaction, cats map[string]uuid.UUID) (domain.Transaction, error) {
	acct, ok := r.accounts[t.ProviderAccountID]
	if !ok {
		return domain.Transaction{}, fmt.Errorf("%w: %s", errUnknownAccount, t.ProviderAccountID)
	}
	var cat *uuid.UUID
	if t.Category != nil {
		if id, ok := cats[t.Category.ProviderID]; ok {
			cat = &id
		}
	}
	created := t.CreatedAt
	if created.IsZero() {
		created = r.now()
	}
	connID := r.conn.ID
	return domain.Transaction{
		UserID: r.conn.UserID, BankConnectionID: &connID, AccountID: acct, Provider: r.conn.Provider,
		ProviderID: t.ProviderID, Status: t.Status, Summary: t.Summary, Amount: t.Amount, Currency: t.Currency,
		AuthorizedDate: t.AuthorizedDate, PostedDate: t.PostedDate, MerchantName: t.MerchantName, CategoryID: cat,
		Fees: t.Fees, FeeType: t.FeeType, NetAmount: t.NetAmount, SubAccount: t.SubAccount,
		PaymentChannel: t.PaymentChannel, CheckNumber: t.CheckNumber, OriginalDescription: t.OriginalDescription,
		Type: t.Type, CreatedAt: created, PostedAt: t.PostedAt, PendingProviderID: t.PendingProviderID,
	}, nil
}
