package resilience_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/finsync/finsync/resilience"
)

// scripted is a guarded call that answers with the next scripted error.
type scripted struct {
	calls atomic.Int32
	errs  func(key resilience.GuardKey, n int) error
}

// do runs one call of s through g under key.
func (s *scripted) do(ctx context.Context, g *resilience.Guard, key resilience.GuardKey) error {
	return g.Do(ctx, key, func(context.Context) error {
		return s.errs(key, int(s.calls.Add(1)))
	})
}

var (
	errDown = &resilience.Error{Provider: "fake", Class: resilience.Unavailable, Code: "INTERNAL_SERVER_ERROR", HTTPStatus: 500}
	errRate = &resilience.Error{Provider: "fake", Class: resilience.RateLimited, Code: "RATE_LIMIT", RetryAfter: 42 * time.Second}
	errAuth = &resilience.Error{Provider: "fake", Class: resilience.ReauthRequired, Code: "ITEM_LOGIN_REQUIRED"}
)

func errInst(key resilience.GuardKey, _ int) error {
	return &resilience.Error{Provider: "fake", Class: resilience.Unavailable, Code: "INSTITUTION_DOWN", InstitutionID: key.Institution}
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

func TestGuardRetriesUnavailable(t *testing.T) {
	tests := []struct {
		name      string
		err       func(resilience.GuardKey, int) error
		wantCalls int32
		wantClass resilience.Class
	}{
		{"recovers after two failures", func(_ resilience.GuardKey, n int) error {
			if n < 3 {
				return errDown
			}
			return nil
		}, 3, resilience.ClassUnknown},
		{"gives up after two retries", func(resilience.GuardKey, int) error { return errDown }, 3, resilience.Unavailable},
		{"rate limit returned at once", func(resilience.GuardKey, int) error { return errRate }, 1, resilience.RateLimited},
		{"reauth returned at once", func(resilience.GuardKey, int) error { return errAuth }, 1, resilience.ReauthRequired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &scripted{errs: tt.err}
			cfg := testConfig()
			cfg.Provider.Failures = 100
			g := resilience.NewGuard("fake", cfg)
			err := s.do(context.Background(), g, resilience.GuardKey{})
			if got := s.calls.Load(); got != tt.wantCalls {
				t.Errorf("calls = %d, want %d", got, tt.wantCalls)
			}
			if got := resilience.ClassOf(err); got != tt.wantClass {
				t.Errorf("class = %v, want %v (%v)", got, tt.wantClass, err)
			}
			if tt.wantClass == resilience.RateLimited && resilience.AsError(err).RetryAfter != 42*time.Second {
				t.Errorf("RetryAfter lost: %v", err)
			}
		})
	}
}

func TestServiceBreakerOpensAndRecovers(t *testing.T) {
	var healthy atomic.Bool
	s := &scripted{errs: func(resilience.GuardKey, int) error {
		if healthy.Load() {
			return nil
		}
		return errDown
	}}
	cfg := testConfig()
	cfg.Retries = -1
	g := resilience.NewGuard("fake", cfg)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if err := s.do(ctx, g, resilience.GuardKey{}); resilience.AsError(err).Code != "INTERNAL_SERVER_ERROR" {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	err := s.do(ctx, g, resilience.GuardKey{})
	pe := resilience.AsError(err)
	if pe == nil || pe.Code != resilience.CodeCircuitOpen || pe.Class != resilience.Unavailable || pe.RetryAfter <= 0 {
		t.Fatalf("want fast CIRCUIT_OPEN with RetryAfter, got %v", err)
	}
	if s.calls.Load() != 3 {
		t.Fatalf("open breaker let the call through: %d calls", s.calls.Load())
	}
	if st := g.States()[0]; st.State != "open" || st.Provider != "fake" {
		t.Fatalf("state = %+v", st)
	}
	healthy.Store(true)
	time.Sleep(60 * time.Millisecond)
	if err := s.do(ctx, g, resilience.GuardKey{}); err != nil {
		t.Fatalf("probe after OpenFor: %v", err)
	}
	if st := g.States()[0]; st.State != "closed" {
		t.Fatalf("state after recovery = %+v", st)
	}
}

func TestInstitutionBreakerIsolatesOneInstitution(t *testing.T) {
	s := &scripted{errs: func(key resilience.GuardKey, n int) error {
		if key.Institution == "ins_down" {
			return errInst(key, n)
		}
		return nil
	}}
	cfg := testConfig()
	cfg.Retries = -1
	g := resilience.NewGuard("fake", cfg)
	ctx := context.Background()
	down := resilience.GuardKey{Institution: "ins_down"}
	for i := 0; i < 5; i++ {
		_ = s.do(ctx, g, down)
	}
	err := s.do(ctx, g, down)
	if pe := resilience.AsError(err); pe == nil || pe.Code != resilience.CodeCircuitOpen || pe.InstitutionID != "ins_down" {
		t.Fatalf("want institution CIRCUIT_OPEN, got %v", err)
	}
	if err := s.do(ctx, g, resilience.GuardKey{Institution: "ins_ok"}); err != nil {
		t.Fatalf("other institution blocked: %v", err)
	}
	states := g.States()
	if states[0].State != "closed" {
		t.Errorf("service breaker = %+v, want closed", states[0])
	}
	if len(states) != 3 || states[1].InstitutionID != "ins_down" || states[1].State != "open" {
		t.Errorf("states = %+v", states)
	}
}

func TestRateLimitedIsNotAnOutage(t *testing.T) {
	s := &scripted{errs: func(resilience.GuardKey, int) error { return errRate }}
	g := resilience.NewGuard("fake", testConfig())
	for i := 0; i < 10; i++ {
		err := s.do(context.Background(), g, resilience.GuardKey{})
		if resilience.AsError(err).Code != "RATE_LIMIT" {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if st := g.States()[0]; st.State != "closed" {
		t.Fatalf("rate limits opened the breaker: %+v", st)
	}
}

func TestLocalLimiterReturnsRateLimited(t *testing.T) {
	s := &scripted{errs: func(resilience.GuardKey, int) error { return nil }}
	cfg := testConfig()
	cfg.Limits = &resilience.Limits{Credential: resilience.PerMinute(1, 1)}
	cfg.MaxLimiterWait = 10 * time.Millisecond
	g := resilience.NewGuard("fake", cfg)
	key := resilience.GuardKey{Credential: "a"}
	if err := s.do(context.Background(), g, key); err != nil {
		t.Fatal(err)
	}
	err := s.do(context.Background(), g, key)
	pe := resilience.AsError(err)
	if pe == nil || pe.Class != resilience.RateLimited || pe.Code != resilience.CodeRateLimit || pe.RetryAfter < 30*time.Second {
		t.Fatalf("want RateLimited with ~60s RetryAfter, got %v", err)
	}
	if err := s.do(context.Background(), g, resilience.GuardKey{Credential: "b"}); err != nil {
		t.Fatalf("other credential limited: %v", err)
	}
	if err := s.do(context.Background(), g, resilience.GuardKey{}); err != nil {
		t.Fatalf("call without a credential limited: %v", err)
	}
}

// TestQuotaLimitReturnsQuotaExhausted: a limit marked Quota refuses like
// any limit, with CodeQuotaExhausted; another credential is not limited.
func TestQuotaLimitReturnsQuotaExhausted(t *testing.T) {
	s := &scripted{errs: func(resilience.GuardKey, int) error { return nil }}
	cfg := testConfig()
	cfg.Limits = &resilience.Limits{Credential: resilience.Limit{Rate: 24.0 / 86400, Burst: 2, Quota: true}}
	cfg.MaxLimiterWait = 10 * time.Millisecond
	g := resilience.NewGuard("fake", cfg)
	key := resilience.GuardKey{Credential: "a"}
	for i := 0; i < 2; i++ {
		if err := s.do(context.Background(), g, key); err != nil {
			t.Fatalf("call %d within the quota: %v", i, err)
		}
	}
	err := s.do(context.Background(), g, key)
	pe := resilience.AsError(err)
	if pe == nil || pe.Class != resilience.RateLimited || pe.Code != resilience.CodeQuotaExhausted || pe.RetryAfter < 30*time.Minute {
		t.Fatalf("want RateLimited %s with about an hour's RetryAfter, got %v", resilience.CodeQuotaExhausted, err)
	}
	if err := s.do(context.Background(), g, resilience.GuardKey{Credential: "b"}); err != nil {
		t.Fatalf("other credential limited: %v", err)
	}
}

func TestNilLimitsMeansUnlimited(t *testing.T) {
	s := &scripted{errs: func(resilience.GuardKey, int) error { return nil }}
	cfg := testConfig()
	cfg.Limits = nil
	cfg.MaxLimiterWait = time.Millisecond
	g := resilience.NewGuard("fake", cfg)
	for i := 0; i < 1000; i++ {
		if err := s.do(context.Background(), g, resilience.GuardKey{Credential: "a"}); err != nil {
			t.Fatalf("call %d limited: %v", i, err)
		}
	}
}

func TestRetryHonoursContext(t *testing.T) {
	s := &scripted{errs: func(resilience.GuardKey, int) error { return errDown }}
	cfg := testConfig()
	cfg.Backoff, cfg.MaxBackoff = time.Hour, time.Hour
	g := resilience.NewGuard("fake", cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := s.do(ctx, g, resilience.GuardKey{})
	if time.Since(start) > time.Second || !errors.Is(err, errDown) {
		t.Fatalf("err = %v after %s", err, time.Since(start))
	}
}

func TestErrorsAs(t *testing.T) {
	wrapped := errors.Join(errors.New("context"), errAuth)
	if resilience.ClassOf(wrapped) != resilience.ReauthRequired || !resilience.IsClass(wrapped, resilience.ReauthRequired) {
		t.Fatal("errors.As through wrapping failed")
	}
	if resilience.ClassOf(errors.New("x")) != resilience.ClassUnknown {
		t.Fatal("plain error classified")
	}
}

func TestMemoryQuotasLowerCountWins(t *testing.T) {
	ctx := context.Background()
	q := resilience.NewMemoryQuotas()
	if _, _, known, _ := q.GetProviderQuota(ctx, "svc", "acc", "balances"); known {
		t.Fatal("empty store knows a quota")
	}
	reset := time.Now().Add(time.Hour)
	if err := q.NoteProviderQuota(ctx, "svc", "acc", "balances", 3, reset); err != nil {
		t.Fatal(err)
	}
	if err := q.NoteProviderQuota(ctx, "svc", "acc", "balances", 4, reset); err != nil {
		t.Fatal(err)
	}
	left, gotReset, known, err := q.GetProviderQuota(ctx, "svc", "acc", "balances")
	if err != nil || !known || left != 3 || !gotReset.Equal(reset) {
		t.Fatalf("quota = %d %v %v %v, want 3 left until %v", left, gotReset, known, err, reset)
	}
}

// TestMemoryQuotasSpendCountsToTheLimit: a counted quota gives exactly its
// limit per window on the caller's clock, refuses beyond it, starts anew
// once the window is over, and a noted 429 (nothing left) stops spending.
func TestMemoryQuotasSpendCountsToTheLimit(t *testing.T) {
	ctx := context.Background()
	q := resilience.NewMemoryQuotas()
	now := time.Date(2026, 6, 15, 10, 0, 0, 0, time.UTC)
	reset := now.Add(14 * time.Hour)
	spent := 0
	for range 6 {
		if ok, err := q.SpendProviderQuota(ctx, "acme", "a1", "tx", 4, reset, now); err != nil {
			t.Fatal(err)
		} else if ok {
			spent++
		}
	}
	if spent != 4 {
		t.Fatalf("spent %d of a quota of 4", spent)
	}
	if ok, _ := q.SpendProviderQuota(ctx, "acme", "a1", "tx", 4, reset.Add(24*time.Hour), reset); !ok {
		t.Fatal("the next window did not start anew")
	}
	if err := q.NoteProviderQuota(ctx, "acme", "a2", "tx", 0, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if ok, _ := q.SpendProviderQuota(ctx, "acme", "a2", "tx", 4, time.Now().Add(24*time.Hour), time.Now()); ok {
		t.Fatal("spent a quota noted as exhausted")
	}
}
