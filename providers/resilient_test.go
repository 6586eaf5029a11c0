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
	return &resilience.Error{Provider: "fake", Class: resilience.Unavailable, Code: "INSTITUTION_DOWN", InstitutionID: conn.InstitutionID}
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
	if pe := resilience.AsError(err); pe == nil || pe.Code != resilience.CodeCircuitOpen || pe.InstitutionID != "ins_down" {
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
	pe := resilience.AsError(err)
	if pe == nil || pe.Class != resilience.RateLimited || pe.RetryAfter < 30*time.Second {
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
	if _, err := r.Accounts(context.Background(), conn); !resilience.IsClass(err, resilience.RateLimited) {
		t.Fatalf("second call within the declared limit's minute: %v, want RateLimited", err)
	}
	if got := r.Describe().Name; got != "fake" {
		t.Fatalf("Describe().Name = %q through the wrapper", got)
	}
}

// TestCallObserverSeesEveryAttemptAndNoRefusal checks that the observer is
// told of each call that reaches the provider, retries included, with the
// adapter's error, and of none that the open breaker refuses.
func TestCallObserverSeesEveryAttemptAndNoRefusal(t *testing.T) {
	f := &fake{errs: func(_ providers.Connection, n int) error {
		if n <= 2 {
			return &resilience.Error{Provider: "fake", Class: resilience.Unavailable, Code: "HTTP_503"}
		}
		return nil
	}}
	type call struct {
		provider, op string
		class        resilience.Class
	}
	var calls []call
	cfg := testConfig()
	cfg.Retries = 2
	r := providers.NewResilient(f, cfg, providers.WithCallObserver(func(p, op string, took time.Duration, err error) {
		if took < 0 {
			t.Errorf("negative duration %s", took)
		}
		calls = append(calls, call{p, op, resilience.ClassOf(err)})
	}))
	if _, err := r.Accounts(context.Background(), providers.Connection{}); err != nil {
		t.Fatalf("third attempt should succeed: %v", err)
	}
	want := []call{{"fake", providers.OpAccounts, resilience.Unavailable}, {"fake", providers.OpAccounts, resilience.Unavailable}, {"fake", providers.OpAccounts, resilience.ClassUnknown}}
	if len(calls) != len(want) {
		t.Fatalf("observed %+v, want %+v", calls, want)
	}
	for i := range want {
		if calls[i] != want[i] {
			t.Fatalf("observed %+v, want %+v", calls, want)
		}
	}

	// Open the provider breaker: the refused call is not a provider call.
	f.errs = func(providers.Connection, int) error {
		return &resilience.Error{Provider: "fake", Class: resilience.Unavailable, Code: "HTTP_503"}
	}
	calls = nil
	cfg.Retries = -1
	r = providers.NewResilient(f, cfg, providers.WithCallObserver(func(p, op string, _ time.Duration, err error) {
		calls = append(calls, call{p, op, resilience.ClassOf(err)})
	}))
	if _, err := r.Transactions(context.Background(), providers.Connection{}, providers.TransactionRequest{}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		_, _ = r.Accounts(context.Background(), providers.Connection{})
	}
	reached := len(calls)
	_, err := r.Accounts(context.Background(), providers.Connection{})
	if pe := resilience.AsError(err); pe == nil || pe.Code != resilience.CodeCircuitOpen {
		t.Fatalf("want CIRCUIT_OPEN, got %v", err)
	}
	if len(calls) != reached {
		t.Fatalf("a refused call was observed: %+v", calls[reached:])
	}
	if calls[0].op != providers.OpTransactions {
		t.Fatalf("first observed operation %q, want transactions", calls[0].op)
	}
}
