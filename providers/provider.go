// Package providers defines what finsync asks of an upstream financial data
// provider: the Provider interface every adapter implements, the four classes
// every provider failure falls into (those of the resilience package), the
// wrapper that puts an adapter behind a resilience.Guard, and the registry
// that maps a provider name to its adapter.
package providers

import (
	"context"
	"encoding/json"
	"time"

	"github.com/finsync/finsync/domain"
)

// Connection is what an adapter needs to reach one user's data at a provider.
type Connection struct {
	// ID is the finsync bank connection id, for logs and error context.
	ID string
	// Provider is the provider name (Description.Name).
	Provider string
	// InstitutionID names the bank behind an aggregator connection; it scopes
	// the per-institution circuit breaker. Empty when the provider is the bank.
	InstitutionID string
	// BaseURL is the provider's API root (the simulator's root URL in tests
	// and demos).
	BaseURL string
	// Credentials is the decrypted provider-specific JSON credential object.
	Credentials json.RawMessage
}

// Account is an account as a provider reports it: the record a sync
// stores as it is (domain.ReportedAccount says what each field means).
type Account = domain.ReportedAccount

// Institution describes the bank behind a connection.
type Institution struct {
	ID      string
	Name    string
	LogoURL string
}

// AccountSet is the result of fetching a connection's accounts and balances.
type AccountSet struct {
	Institution Institution
	Accounts    []Account
	// HasInvestments reports whether the connection offers holdings and
	// investment transactions.
	HasInvestments bool
	// NextAllowedAt, when not zero, is when balances left unknown for a
	// spent quota or a 429 (Account.BalancesUnknown) can be fetched again:
	// the next full sync should not be scheduled before it.
	NextAllowedAt time.Time
	// ConsentExpiresAt, when not zero, is when the user's consent to this
	// connection ends (a PSD2 session's valid_until, an agreement's end):
	// after it, calls fail with ReauthRequired until the user links the
	// bank again. The core records it on the connection (its health's
	// consentExpiresAt) and, once it has passed by the worker's clock,
	// fails the connection's syncs as needing re-auth without calling the
	// adapter. Zero: the provider states no end.
	ConsentExpiresAt time.Time
	// LinkID is the provider's own id of this link (a Plaid Item's
	// item_id), by which its notifications name it (WebhookReceiver); the
	// core records it at each successful sync. Empty: the provider sends
	// none, or names links otherwise.
	LinkID string
}

// CategoryRef is a provider's category for a transaction
// (domain.ReportedCategory).
type CategoryRef = domain.ReportedCategory

// Transaction is a transaction as a provider reports it: the record a
// sync stores (domain.ReportedTransaction).
type Transaction = domain.ReportedTransaction

// TransactionRequest asks for the next page of a connection's transactions.
type TransactionRequest struct {
	// Cursor is the opaque resume state returned by the previous page's
	// Next, or "" for the first sync.
	Cursor string
	// PendingIDs are the provider ids of stored pending transactions, for
	// providers that must re-check them (Stripe). They are given on the
	// first page of a sync only (Cursor as the last sync left it); later
	// pages of the same sync carry none.
	PendingIDs []string
	// Today is the current UTC date, used for date windows.
	Today domain.Date
}

// NextGuesser is implemented by an adapter that can tell, from a page's
// cursor alone, the cursor its Next will most likely be (offset paging
// with a known total). A sync then fetches that page while the one before
// it is still being fetched and decoded. The guess is only a guess: the
// sync uses the page fetched for it only when the earlier page's Next
// turns out equal to it, and otherwise fetches again from the real Next,
// so a wrong guess costs one request and never a wrong row. An adapter
// should guess only where a sequential sync would ask for that page too.
type NextGuesser interface {
	// GuessNext returns the likely Next of the page at cursor, and false
	// when it has no guess.
	GuessNext(cursor string) (next string, ok bool)
}

// GuessNext returns p's guess of the Next of the page at cursor when p is
// a NextGuesser; any other provider has no guess. It makes no call.
func GuessNext(p Provider, cursor string) (string, bool) {
	if g, ok := p.(NextGuesser); ok {
		return g.GuessNext(cursor)
	}
	return "", false
}

// TransactionPage is one page of a connection's transactions
// (domain.ReportedPage).
type TransactionPage = domain.ReportedPage

// Holdings is a connection's investment positions.
type Holdings struct {
	Holdings   []Holding
	Securities []Security
}

// Holding is one position as a provider reports it
// (domain.ReportedHolding).
type Holding = domain.ReportedHolding

// Security is a tradable instrument as a provider reports it: the record
// a sync stores as it is (domain.ReportedSecurity).
type Security = domain.ReportedSecurity

// InvestmentTransaction is one investment event as a provider reports it
// (domain.ReportedInvestmentTransaction).
type InvestmentTransaction = domain.ReportedInvestmentTransaction

// InvestmentTransactions is every investment event in a date window.
type InvestmentTransactions struct {
	Transactions []InvestmentTransaction
	Securities   []Security
}

// Provider is one upstream provider's adapter. Every method classifies its
// failures as an *Error (see Class); a nil error means the data is complete.
// CredentialExchanger is implemented by an adapter whose users give a
// one-time credential that must be exchanged for the lasting one before
// anything is stored (a SimpleFIN setup token, claimed for its access URL).
// `finsync connections add` stores only what ExchangeCredentials returns.
// Caveat: the exchange spends what the user gave; if storing then fails,
// the user needs a new one.
type CredentialExchanger interface {
	ExchangeCredentials(ctx context.Context, conn Connection) (json.RawMessage, error)
}

type Provider interface {
	// Name is the provider name, Describe().Name.
	Name() string
	// Describe returns what the adapter declares about its provider (the
	// same value it is registered with).
	Describe() Description
	// Accounts fetches the connection's accounts with current balances and
	// liability details.
	Accounts(ctx context.Context, conn Connection) (AccountSet, error)
	// Transactions fetches the next page of transactions after req.Cursor.
	Transactions(ctx context.Context, conn Connection, req TransactionRequest) (TransactionPage, error)
	// Holdings fetches investment positions; ErrNotSupported where the
	// provider has none.
	Holdings(ctx context.Context, conn Connection) (Holdings, error)
	// InvestmentTransactions fetches investment events between two dates,
	// inclusive; ErrNotSupported where the provider has none.
	InvestmentTransactions(ctx context.Context, conn Connection, start, end domain.Date) (InvestmentTransactions, error)
}

// NoInvestments is embedded by an adapter whose provider offers no
// investments: its Holdings and InvestmentTransactions return
// ErrNotSupported, as the contract asks.
type NoInvestments struct{}

// Holdings returns ErrNotSupported.
func (NoInvestments) Holdings(context.Context, Connection) (Holdings, error) {
	return Holdings{}, ErrNotSupported
}

// InvestmentTransactions returns ErrNotSupported.
func (NoInvestments) InvestmentTransactions(context.Context, Connection, domain.Date, domain.Date) (InvestmentTransactions, error) {
	return InvestmentTransactions{}, ErrNotSupported
}
