package providers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/resilience"
)

// DefaultLimits returns the limits the providers document (REFERENCE §1.6,
// §2.4, §3, §4); unknown providers get none.
func DefaultLimits(provider string) resilience.Limits {
	switch provider {
	case domain.ProviderPlaid:
		// /transactions/sync: 2,500 per client and 50 per Item a minute.
		return resilience.Limits{Provider: resilience.PerMinute(2500, 100), Credential: resilience.PerMinute(50, 10)}
	case domain.ProviderGoCardless:
		// accounts/* endpoints: 100 a minute company-wide; per-account daily
		// quotas are tracked by the adapter from response headers.
		return resilience.Limits{Provider: resilience.PerMinute(100, 20)}
	case domain.ProviderStripe:
		// 100 req/s live; 25 req/s per account in test mode.
		return resilience.Limits{Provider: resilience.PerSecond(100, 100), Credential: resilience.PerSecond(25, 25)}
	case domain.ProviderMercury:
		// Unpublished; stay polite.
		return resilience.Limits{Provider: resilience.PerSecond(20, 20)}
	default:
		return resilience.Limits{}
	}
}

// Resilient wraps a Provider with the shared resilience layer
// (resilience.Guard): rate limiters (per provider and per credential), a
// provider-wide circuit breaker, one breaker per institution, and bounded
// jittered retries of Unavailable failures. It is itself a Provider and
// safe for concurrent use.
type Resilient struct {
	p Provider
	g *resilience.Guard
}

var _ Provider = (*Resilient)(nil)

// NewResilient wraps p. A nil cfg.Limits takes DefaultLimits(p.Name()).
func NewResilient(p Provider, cfg resilience.Config) *Resilient {
	if cfg.Limits == nil {
		l := DefaultLimits(p.Name())
		cfg.Limits = &l
	}
	return &Resilient{p: p, g: resilience.NewGuard(p.Name(), cfg)}
}

// Unwrap returns the wrapped provider.
func (r *Resilient) Unwrap() Provider { return r.p }

// Name returns the wrapped provider's name.
func (r *Resilient) Name() string { return r.p.Name() }

// Accounts calls the wrapped provider through the resilience layer.
func (r *Resilient) Accounts(ctx context.Context, conn Connection) (AccountSet, error) {
	var out AccountSet
	err := r.call(ctx, conn, func(ctx context.Context) error {
		var err error
		out, err = r.p.Accounts(ctx, conn)
		return err
	})
	return out, err
}

// Transactions calls the wrapped provider through the resilience layer.
func (r *Resilient) Transactions(ctx context.Context, conn Connection, req TransactionRequest) (TransactionPage, error) {
	var out TransactionPage
	err := r.call(ctx, conn, func(ctx context.Context) error {
		var err error
		out, err = r.p.Transactions(ctx, conn, req)
		return err
	})
	return out, err
}

// Holdings calls the wrapped provider through the resilience layer.
func (r *Resilient) Holdings(ctx context.Context, conn Connection) (Holdings, error) {
	var out Holdings
	err := r.call(ctx, conn, func(ctx context.Context) error {
		var err error
		out, err = r.p.Holdings(ctx, conn)
		return err
	})
	return out, err
}

// InvestmentTransactions calls the wrapped provider through the resilience
// layer.
func (r *Resilient) InvestmentTransactions(ctx context.Context, conn Connection, start, end domain.Date) (InvestmentTransactions, error) {
	var out InvestmentTransactions
	err := r.call(ctx, conn, func(ctx context.Context) error {
		var err error
		out, err = r.p.InvestmentTransactions(ctx, conn, start, end)
		return err
	})
	return out, err
}

// call runs op for the connection through the guard.
func (r *Resilient) call(ctx context.Context, conn Connection, op func(context.Context) error) error {
	return r.g.Do(ctx, resilience.GuardKey{Credential: credentialKey(conn.Credentials), Institution: conn.InstitutionID}, op)
}

// States reports every breaker of this provider: the provider-wide one
// first, then the institutions' by id.
func (r *Resilient) States() []resilience.BreakerState { return r.g.States() }

// credentialKey is a short stable digest of a connection's credentials
// (empty when there are none), naming its rate limiter.
func credentialKey(creds []byte) string {
	if len(creds) == 0 {
		return ""
	}
	sum := sha256.Sum256(creds)
	return hex.EncodeToString(sum[:12])
}
