package providers_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/resilience"
)

// These tests cover what Resilient adds to resilience.Guard (whose own
// tests are in the resilience package): the institution and credential of
// a Connection select its breaker and rate limiter.

// fake is a Provider whose Accounts answers with the next scripted error.
type fake struct {
	limits resilience.Limits
	calls  atomic.Int32
	errs   func(conn providers.Connection, n int) error
}

func (f *fake) Name() string { return "fake" }
func (f *fake) Describe() providers.Description {
	return providers.Description{ProviderProfile: domain.ProviderProfile{Name: "fake"}, Limits: f.limits}
}
func (f *fake) Accounts(_ context.Context, conn providers.Connection) (providers.AccountSet, error) {
	n := int(f.calls.Add(1))
	return providers.AccountSet{}, f.errs(conn, n)
}
func (f *fake) Transactions(context.Context, providers.Connection, providers.TransactionRequest) (providers.TransactionPage, error) {
	return providers.TransactionPage{}, nil
}
func (f *fake) Holdings(context.Context, providers.Connection) (providers.Holdings, error) {
	return providers.Holdings{}, providers.ErrNotSupported
}
func (f *fake) InvestmentTransactions(context.Context, providers.Connection, domain.Date, domain.Date) (providers.InvestmentTransactions, error) {
	return providers.InvestmentTransactions{}, providers.ErrNotSupported
}

func errInst(conn providers.Connection, _ int) error {
	return &providers.Error{Provider: "fake", Class: providers.Unavailable, Code: "INSTITUTION_DOWN", InstitutionID: conn.InstitutionID}
}

func testConfig() resilience.Config {
	return resilience.Config{
		Limits:      &resilience.Limits{},
		Backoff:     time.Millisecond,
		MaxBackoff:  2 * time.Millisecond,
		Provider:    resilience.BreakerConfig{Failures: 3, OpenFor: 50 * time.Millisecond},
		Institution: resilience.BreakerConfig{Failures: 2, OpenFor: time.Hour},
	}
}

func TestInstitutionBreakerIsolatesOneBank(t *testing.T) {
	f := &fake{errs: func(conn providers.Connection, n int) error {
		if conn.InstitutionID == "ins_down" {
			return errInst(conn, n)
		}
		return nil
	}}
	cfg := testConfig()
	cfg.Retries = -1
	r := providers.NewResilient(f, cfg)
	ctx := context.Background()
	down := providers.Connection{InstitutionID: "ins_down"}
	for i := 0; i < 5; i++ {
		_, _ = r.Accounts(ctx, down)
	}
	_, err := r.Accounts(ctx, down)
	if pe := providers.AsError(err); pe == nil || pe.Code != providers.CodeCircuitOpen || pe.InstitutionID != "ins_down" {
		t.Fatalf("want institution CIRCUIT_OPEN, got %v", err)
	}
	if _, err := r.Accounts(ctx, providers.Connection{InstitutionID: "ins_ok"}); err != nil {
		t.Fatalf("other institution blocked: %v", err)
	}
	states := r.States()
	if states[0].State != "closed" {
		t.Errorf("provider breaker = %+v, want closed", states[0])
	}
	if len(states) != 3 || states[1].InstitutionID != "ins_down" || states[1].State != "open" {
		t.Errorf("states = %+v", states)
	}
}

func TestLocalLimiterReturnsRateLimited(t *testing.T) {
	f := &fake{errs: func(providers.Connection, int) error { return nil }}
	cfg := testConfig()
	cfg.Limits = &resilience.Limits{Credential: resilience.PerMinute(1, 1)}
	cfg.MaxLimiterWait = 10 * time.Millisecond
	r := providers.NewResilient(f, cfg)
	conn := providers.Connection{Credentials: []byte(`{"token":"a"}`)}
	if _, err := r.Accounts(context.Background(), conn); err != nil {
		t.Fatal(err)
	}
	_, err := r.Accounts(context.Background(), conn)
	pe := providers.AsError(err)
	if pe == nil || pe.Class != providers.RateLimited || pe.RetryAfter < 30*time.Second {
		t.Fatalf("want RateLimited with ~60s RetryAfter, got %v", err)
	}
	other := providers.Connection{Credentials: []byte(`{"token":"b"}`)}
	if _, err := r.Accounts(context.Background(), other); err != nil {
		t.Fatalf("other credential limited: %v", err)
	}
}

func TestResilientTakesTheDeclaredLimits(t *testing.T) {
	f := &fake{errs: func(providers.Connection, int) error { return nil },
		limits: resilience.Limits{Credential: resilience.PerMinute(1, 1)}}
	cfg := testConfig()
	cfg.Limits = nil
	cfg.MaxLimiterWait = 10 * time.Millisecond
	r := providers.NewResilient(f, cfg)
	conn := providers.Connection{Credentials: []byte(`{"token":"a"}`)}
	if _, err := r.Accounts(context.Background(), conn); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Accounts(context.Background(), conn); !providers.IsClass(err, providers.RateLimited) {
		t.Fatalf("second call within the declared limit's minute: %v, want RateLimited", err)
	}
	if got := r.Describe().Name; got != "fake" {
		t.Fatalf("Describe().Name = %q through the wrapper", got)
	}
}
