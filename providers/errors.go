package providers

import "errors"

// Every provider failure is a *resilience.Error of one of the four
// resilience classes (Unavailable, RateLimited, ReauthRequired,
// Permanent): adapters return it, the guard retries and counts it, the
// worker records it. The types live in package resilience alone.

// ErrNotSupported is returned by Holdings and InvestmentTransactions on a
// provider without investments.
var ErrNotSupported = errors.New("not supported by this provider")
