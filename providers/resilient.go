package providers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/resilience"
)

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

// NewResilient wraps p. A nil cfg.Limits takes the limits p declares
// (Description.Limits).
func NewResilient(p Provider, cfg resilience.Config) *Resilient {
	if cfg.Limits == nil {
		l := p.Describe().Limits
		cfg.Limits = &l
	}
	return &Resilient{p: p, g: resilience.NewGuard(p.Name(), cfg)}
}

// Unwrap returns the wrapped provider.
func (r *Resilient) Unwrap() Provider { return r.p }

// Name returns the wrapped provider's name.
func (r *Resilient) Name() string { return r.p.Name() }

// Describe returns the wrapped provider's description.
func (r *Resilient) Describe() Description { return r.p.Describe() }

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
