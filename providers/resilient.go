package providers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/resilience"
)

// Resilient wraps a Provider with the shared resilience layer
// (resilience.Guard): rate limiters (per provider and per credential), a
// provider-wide circuit breaker, one breaker per institution, and bounded
// jittered retries of Unavailable failures. It is itself a Provider and
// safe for concurrent use.
type Resilient struct {
	p       Provider
	g       *resilience.Guard
	observe CallObserver
}

var (
	_ Provider        = (*Resilient)(nil)
	_ WebhookReceiver = (*Resilient)(nil)
)

// The operations a CallObserver is told of, one per Provider method.
const (
	OpAccounts               = "accounts"
	OpTransactions           = "transactions"
	OpHoldings               = "holdings"
	OpInvestmentTransactions = "investment_transactions"
)

// Operations lists every operation a CallObserver may be told of.
func Operations() []string {
	return []string{OpAccounts, OpTransactions, OpHoldings, OpInvestmentTransactions}
}

// CallObserver is told of every call an adapter makes to its provider: each
// attempt that the guard lets through (a retry is a call of its own), how
// long it took and the adapter's error (nil on success). Calls the guard
// refuses (an open breaker, a rate limiter's long wait) reach no provider
// and are not reported. It must be safe for concurrent use and quick: it
// runs on the calling goroutine.
type CallObserver func(provider, operation string, took time.Duration, err error)

// ResilientOption tunes NewResilient.
type ResilientOption func(*Resilient)

// WithCallObserver reports every call to the provider to fn.
func WithCallObserver(fn CallObserver) ResilientOption {
	return func(r *Resilient) { r.observe = fn }
}

// NewResilient wraps p. A nil cfg.Limits takes the limits p declares
// (Description.Limits).
func NewResilient(p Provider, cfg resilience.Config, opts ...ResilientOption) *Resilient {
	if cfg.Limits == nil {
		l := p.Describe().Limits
		cfg.Limits = &l
	}
	r := &Resilient{p: p, g: resilience.NewGuard(p.Name(), cfg)}
	for _, o := range opts {
		o(r)
	}
	return r
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
	err := r.call(ctx, conn, OpAccounts, func(ctx context.Context) error {
		var err error
		out, err = r.p.Accounts(ctx, conn)
		return err
	})
	return out, err
}

// Transactions calls the wrapped provider through the resilience layer.
func (r *Resilient) Transactions(ctx context.Context, conn Connection, req TransactionRequest) (TransactionPage, error) {
	var out TransactionPage
	err := r.call(ctx, conn, OpTransactions, func(ctx context.Context) error {
		var err error
		out, err = r.p.Transactions(ctx, conn, req)
		return err
	})
	return out, err
}

// GuessNext forwards to the wrapped provider when it is a NextGuesser and
// otherwise has no guess. It makes no call.
func (r *Resilient) GuessNext(cursor string) (string, bool) { return GuessNext(r.p, cursor) }

// Holdings calls the wrapped provider through the resilience layer.
func (r *Resilient) Holdings(ctx context.Context, conn Connection) (Holdings, error) {
	var out Holdings
	err := r.call(ctx, conn, OpHoldings, func(ctx context.Context) error {
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
	err := r.call(ctx, conn, OpInvestmentTransactions, func(ctx context.Context) error {
		var err error
		out, err = r.p.InvestmentTransactions(ctx, conn, start, end)
		return err
	})
	return out, err
}

// Receives reports whether the wrapped adapter receives its provider's
// notifications (implements WebhookReceiver).
func (r *Resilient) Receives() bool {
	_, ok := r.p.(WebhookReceiver)
	return ok
}

// ReadWebhook reads a notification with the wrapped adapter; it makes no
// call. An adapter that receives none refuses every body.
func (r *Resilient) ReadWebhook(header http.Header, body []byte) (Notice, error) {
	hooks, ok := r.p.(WebhookReceiver)
	if !ok {
		return Notice{}, fmt.Errorf("%w: %s sends no notifications", domain.ErrNoticeRefused, r.p.Name())
	}
	return hooks.ReadWebhook(header, body)
}

// VerifyWebhook checks a notification with the wrapped adapter through
// the resilience layer: a check that calls the provider (a verification
// key fetched) shares the connection's rate limits and the provider's
// breakers, fleet-wide where the guard's store is, so that notifications
// sent by anyone cannot make finsync call the provider without bound. A
// refusal is no provider failure: it neither retries nor trips a breaker.
func (r *Resilient) VerifyWebhook(ctx context.Context, conn Connection, header http.Header, body []byte, now time.Time) error {
	hooks, ok := r.p.(WebhookReceiver)
	if !ok {
		return fmt.Errorf("%w: %s sends no notifications", domain.ErrNoticeRefused, r.p.Name())
	}
	var refused error
	err := r.g.Do(ctx, resilience.GuardKey{Credential: credentialKey(conn.Credentials), Institution: conn.InstitutionID}, func(ctx context.Context) error {
		err := hooks.VerifyWebhook(ctx, conn, header, body, now)
		if errors.Is(err, domain.ErrNoticeRefused) {
			refused = err
			return nil
		}
		return err
	})
	if err != nil {
		return err
	}
	return refused
}

// call runs op (the named operation) for the connection through the
// guard, reporting each attempt that reaches the provider.
func (r *Resilient) call(ctx context.Context, conn Connection, operation string, op func(context.Context) error) error {
	if r.observe != nil {
		inner := op
		op = func(ctx context.Context) error {
			start := time.Now()
			err := inner(ctx)
			r.observe(r.p.Name(), operation, time.Since(start), err)
			return err
		}
	}
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
