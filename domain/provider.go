package domain

import "time"

// ProviderProfile is what the layers outside the adapters know of one
// provider, as its adapter declares it (providers.Description carries it).
// It is plain data, so that layers which must not import the adapters (api,
// storage) can be handed it; nothing outside an adapter's package compares
// a provider's name to decide a behaviour. The zero value describes a
// provider with none of the special behaviours below.
type ProviderProfile struct {
	// Name is the provider's name: its registry key, stored on connections
	// and shown lowercase by v2.
	Name string
	// V1Name is the provider's name in version 1's capitalised form.
	V1Name string
	// V1PagesAfterID makes v1's transaction list page by the last
	// transaction id rather than by offset, as this provider's own API does.
	V1PagesAfterID bool
	// ReadOnlyCategories marks the categories this provider assigns as
	// read-only for the user (a business bank's own categories).
	ReadOnlyCategories bool
	// HasInvestments says that a connection may have holdings and
	// investment transactions besides accounts and transactions.
	HasInvestments bool
	// RechecksPending says that the provider does not report removed
	// transactions: a sync hands the adapter the stored pending ids
	// (TransactionRequest.PendingIDs) so that it can re-check them.
	RechecksPending bool
	// SyncInterval is the time between periodic syncs that the provider's
	// daily quota affords; zero takes the worker's default.
	SyncInterval time.Duration
}
