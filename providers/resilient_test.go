package providers_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
)

// fake is a Provider whose Accounts answers with the next scripted error.
type fake struct {
	calls atomic.Int32
	errs  func(conn providers.Connection, n int) error
}

func (f *fake) Name() string { return "fake" }
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

var (
	errDown = &providers.Error{Provider: "fake", Class: providers.Unavailable, Code: "INTERNAL_SERVER_ERROR", HTTPStatus: 500}
	errRate = &providers.Error{Provider: "fake", Class: providers.RateLimited, Code: "RATE_LIMIT", RetryAfter: 42 * time.Second}
	errAuth = &providers.Error{Provider: "fake", Class: providers.ReauthRequired, Code: "ITEM_LOGIN_REQUIRED"}
)

func errInst(conn providers.Connection, _ int) error {
	return &providers.Error{Provider: "fake", Class: providers.Unavailable, Code: "INSTITUTION_DOWN", InstitutionID: conn.InstitutionID}
}

func testConfig() providers.Config {
	return providers.Config{
		Limits:      &providers.Limits{},
		Backoff:     time.Millisecond,
		MaxBackoff:  2 * time.Millisecond,
		Provider:    providers.BreakerConfig{Failures: 3, OpenFor: 50 * time.Millisecond},
		Institution: providers.BreakerConfig{Failures: 2, OpenFor: time.Hour},
	}
}

func TestResilientRetriesUnavailable(t *testing.T) {
	tests := []struct {
		name      string
		err       func(providers.Connection, int) error
		wantCalls int32
		wantClass providers.Class
	}{
		{"recovers after two failures", func(_ providers.Connection, n int) error {
			if n < 3 {
				return errDown
			}
			return nil
		}, 3, providers.ClassUnknown},
		{"gives up after two retries", func(providers.Connection, int) error { return errDown }, 3, providers.Unavailable},
		{"rate limit returned at once", func(providers.Connection, int) error { return errRate }, 1, providers.RateLimited},
		{"reauth returned at once", func(providers.Connection, int) error { return errAuth }, 1, providers.ReauthRequired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fake{errs: tt.err}
			cfg := testConfig()
			cfg.Provider.Failures = 100
			r := providers.NewResilient(f, cfg)
			_, err := r.Accounts(context.Background(), providers.Connection{})
			if got := f.calls.Load(); got != tt.wantCalls {
				t.Errorf("calls = %d, want %d", got, tt.wantCalls)
			}
			if got := providers.ClassOf(err); got != tt.wantClass {
				t.Errorf("class = %v, want %v (%v)", got, tt.wantClass, err)
			}
			if tt.wantClass == providers.RateLimited && providers.AsError(err).RetryAfter != 42*time.Second {
				t.Errorf("RetryAfter lost: %v", err)
			}
		})
	}
}

func TestProviderBreakerOpensAndRecovers(t *testing.T) {
	var healthy atomic.Bool
	f := &fake{errs: func(providers.Connection, int) error {
		if healthy.Load() {
			return nil
		}
		return errDown
	}}
	cfg := testConfig()
	cfg.Retries = -1
	r := providers.NewResilient(f, cfg)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if _, err := r.Accounts(ctx, providers.Connection{}); providers.AsError(err).Code != "INTERNAL_SERVER_ERROR" {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	_, err := r.Accounts(ctx, providers.Connection{})
	pe := providers.AsError(err)
	if pe == nil || pe.Code != providers.CodeCircuitOpen || pe.Class != providers.Unavailable || pe.RetryAfter <= 0 {
		t.Fatalf("want fast CIRCUIT_OPEN with RetryAfter, got %v", err)
	}
	if f.calls.Load() != 3 {
		t.Fatalf("open breaker called the provider: %d calls", f.calls.Load())
	}
	if st := r.States()[0]; st.State != "open" {
		t.Fatalf("state = %+v", st)
	}
	healthy.Store(true)
	time.Sleep(60 * time.Millisecond)
	if _, err := r.Accounts(ctx, providers.Connection{}); err != nil {
		t.Fatalf("probe after OpenFor: %v", err)
	}
	if st := r.States()[0]; st.State != "closed" {
		t.Fatalf("state after recovery = %+v", st)
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

func TestRateLimitedIsNotAnOutage(t *testing.T) {
	f := &fake{errs: func(providers.Connection, int) error { return errRate }}
	cfg := testConfig()
	r := providers.NewResilient(f, cfg)
	for i := 0; i < 10; i++ {
		_, err := r.Accounts(context.Background(), providers.Connection{})
		if providers.AsError(err).Code != "RATE_LIMIT" {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if st := r.States()[0]; st.State != "closed" {
		t.Fatalf("rate limits opened the breaker: %+v", st)
	}
}

func TestLocalLimiterReturnsRateLimited(t *testing.T) {
	f := &fake{errs: func(providers.Connection, int) error { return nil }}
	cfg := testConfig()
	cfg.Limits = &providers.Limits{Credential: providers.PerMinute(1, 1)}
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

func TestRetryHonoursContext(t *testing.T) {
	f := &fake{errs: func(providers.Connection, int) error { return errDown }}
	cfg := testConfig()
	cfg.Backoff, cfg.MaxBackoff = time.Hour, time.Hour
	r := providers.NewResilient(f, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := r.Accounts(ctx, providers.Connection{})
	if time.Since(start) > time.Second || !errors.Is(err, errDown) {
		t.Fatalf("err = %v after %s", err, time.Since(start))
	}
}

func TestErrorsAs(t *testing.T) {
	wrapped := errors.Join(errors.New("context"), errAuth)
	if providers.ClassOf(wrapped) != providers.ReauthRequired || !providers.IsClass(wrapped, providers.ReauthRequired) {
		t.Fatal("errors.As through wrapping failed")
	}
	if providers.ClassOf(errors.New("x")) != providers.ClassUnknown {
		t.Fatal("plain error classified")
	}
}
