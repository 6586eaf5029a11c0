package domain

import "time"

// ReportedAccount is an account as a provider reports it, already in
// finsync's conventions (balances in major units; for liabilities, the
// amount owed): what an adapter returns and what a sync stores, one shape
// for both (providers.Account names it for adapters).
type ReportedAccount struct {
	ProviderAccountID string
	// PersistentID is the provider's identity of the account that survives
	// a re-link, when the provider gives one (Plaid's
	// persistent_account_id, Enable Banking's identification_hash); empty
	// otherwise. Caveat: only some providers and institutions report it,
	// so a sync also matches re-issued accounts on their other attributes.
	PersistentID     string
	Name             string
	Mask             string
	Type             string
	Subtype          string
	Currency         string
	CurrentBalance   *Money
	AvailableBalance *Money
	CreditLimit      *Money
	Liability        *Liability
	// BalancesUnknown reports that the provider could not give this
	// account's balances this time (a spent quota, a failed balance call, a
	// response without them): CurrentBalance, AvailableBalance and
	// CreditLimit then say nothing, and a sync keeps the stored ones with
	// their as-of time and records no daily balance. When false, a nil
	// balance is one the provider does not report, and is stored as null.
	BalancesUnknown bool
}

// ReportedSecurity is a tradable instrument as a provider reports it and a
// sync stores it (providers.Security names it for adapters).
type ReportedSecurity struct {
	ProviderSecurityID string
	Symbol             *string
	Name               string
	Type               string
	ClosePrice         *Money
	Currency           string
}

// ReportedCategory is a provider's category of a transaction, as the
// provider names it; a sync copies it for the user (providers.CategoryRef
// names it for adapters).
type ReportedCategory struct {
	ProviderID  string
	Name        string
	Group       string
	Description string
}

// ReportedTransaction is a transaction as a provider reports it, already
// in finsync's conventions (outflow negative, major units, Status one of
// TxPending, TxPosted, TxDeleted): what an adapter returns and what a sync
// stores (providers.Transaction names it for adapters). Caveat: it names
// its account by the provider's id; a sync maps it to the stored account.
type ReportedTransaction struct {
	ProviderID          string
	ProviderAccountID   string
	Status              string
	Summary             string
	Amount              Money
	Currency            string
	AuthorizedDate      *Date
	PostedDate          *Date
	MerchantName        *string
	Category            *ReportedCategory
	Fees                *Money
	FeeType             *string
	NetAmount           *Money
	SubAccount          *string
	PaymentChannel      *string
	CheckNumber         *string
	OriginalDescription *string
	Type                *string
	// CreatedAt is when the provider created the transaction; zero means
	// it does not say, and a sync stores the time it first saw the row.
	CreatedAt time.Time
	PostedAt  *time.Time
	// PendingProviderID names the pending transaction this posted one
	// replaces (Plaid's pending_transaction_id), so that a user's category
	// and a transfer pair carry over.
	PendingProviderID *string
}

// ReportedPage is one page of a connection's transactions as a provider
// reports it: what an adapter returns and a sync stores, in order, with
// the cursor after it (providers.TransactionPage names it for adapters).
type ReportedPage struct {
	// Upserts are new or changed transactions.
	Upserts []ReportedTransaction
	// Removed are provider ids the provider says no longer exist.
	Removed []string
	// ReplacePendingFor, when non-empty, says that the pending transactions
	// in Upserts of this page and of the earlier pages of the same sync
	// (since the last page with Done) are the complete pending set for
	// these provider account ids: any other stored pending transaction of
	// those accounts has vanished and becomes deleted (GoCardless signals
	// removals this way). An adapter whose provider pages an account's rows
	// (a continuation key) may return them over several pages and name the
	// account on its last one. Caveat: a pending row listed on any page of
	// the sync is kept, even if a later page of it no longer lists it.
	ReplacePendingFor []string
	// Next is the opaque cursor to store with this page and resume from.
	Next string
	// Done reports that this was the last page of this sync.
	Done bool
	// NextAllowedAt, when not zero (last page only), is when the provider's
	// quota lets a sync fetch every account again (GoCardless banks allow a
	// few successful calls per account per day). Accounts whose quota is
	// spent are skipped without spending a call, so a sync before this time
	// is harmless but incomplete; schedule the next full sync after it.
	NextAllowedAt time.Time
}

// ReportedHolding is one investment position as a provider reports it
// (providers.Holding names it for adapters).
type ReportedHolding struct {
	ProviderAccountID  string
	ProviderSecurityID string
	Quantity           Money
	CostBasis          *Money
	InstitutionPrice   Money
	InstitutionValue   Money
	Currency           string
	PriceAsOf          *Date
}

// ReportedInvestmentTransaction is one investment event as a provider
// reports it, converted so that cash out is negative
// (providers.InvestmentTransaction names it for adapters).
type ReportedInvestmentTransaction struct {
	ProviderID         string
	ProviderAccountID  string
	ProviderSecurityID *string
	Date               Date
	Type               string
	Subtype            string
	Quantity           Money
	Price              Money
	Amount             Money
	Fees               *Money
	Currency           string
	Description        string
}
