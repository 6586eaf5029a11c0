package domain

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
