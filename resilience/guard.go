package resilience

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/sony/gobreaker/v2"
	"golang.org/x/time/rate"
)

// Limit is a token bucket: Rate events per second with bursts of Burst.
// A zero Rate means unlimited.
type Limit struct {
	Rate  rate.Limit
	Burst int
	// Quota marks the bucket as the service's request quota (so many calls
	// a day) rather than a pace: a call it refuses returns
	// CodeQuotaExhausted instead of CodeRateLimit. The bucket works the same.
	Quota bool
}

// PerMinute is a Limit of n calls a minute with bursts of burst.
func PerMinute(n, burst int) Limit { return Limit{Rate: rate.Limit(float64(n) / 60), Burst: burst} }

// PerSecond is a Limit of n calls a second with bursts of burst.
func PerSecond(n, burst int) Limit { return Limit{Rate: rate.Limit(n), Burst: burst} }

// Limits are the rate limits applied to one guarded service (for the fleet
// with a Config.Store, else per process).
type Limits struct {
	// Provider limits all calls to the service (for a provider, one
	// client id).
	Provider Limit
	// Credential limits calls made with one credential (GuardKey.Credential),
	// where the service limits per credential (per item, per account).
	Credential Limit
}

// BreakerConfig tunes one kind of circuit breaker.
type BreakerConfig struct {
	// Failures is how many consecutive counted failures open the breaker
	// (default 5).
	Failures uint32
	// OpenFor is how long the breaker stays open before letting a probe
	// through (default 30s).
	OpenFor time.Duration
	// HalfOpenProbes is how many calls may pass while half-open (default 1).
	HalfOpenProbes uint32
}

// Config tunes a Guard. The zero value gives the defaults (and no rate
// limits).
type Config struct {
	// Limits are the rate limits of the guarded service; nil means none.
	// (providers.NewResilient fills in the limits a provider declares.)
	Limits *Limits
	// Store keeps the rate limits' buckets for every process together (a
	// provider's limits hold for the whole fleet). Nil, or a store that
	// fails, limits in this process's memory only.
	Store RateStore
	// Retries is the number of retries of an Unavailable failure inside
	// one call (default 2; negative: none).
	Retries int
	// Backoff is the base of the jittered exponential backoff between
	// retries (default 200ms); MaxBackoff caps one wait (default 2s).
	Backoff    time.Duration
	MaxBackoff time.Duration
	// MaxLimiterWait is the longest a call waits for a rate limiter;
	// a longer wait returns RateLimited at once (default 5s).
	MaxLimiterWait time.Duration
	// Provider configures the service-wide breaker (counts 5xx, timeouts,
	// connection errors, malformed answers).
	Provider BreakerConfig
	// Institution configures the per-institution breakers (count
	// institution-down errors).
	Institution BreakerConfig
	// Now is the clock used for RetryAfter (default time.Now).
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.Limits == nil {
		c.Limits = &Limits{}
	}
	if c.Retries == 0 {
		c.Retries = 2
	}
	if c.Retries < 0 {
		c.Retries = 0
	}
	if c.Backoff <= 0 {
		c.Backoff = 200 * time.Millisecond
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = 2 * time.Second
	}
	if c.MaxLimiterWait <= 0 {
		c.MaxLimiterWait = 5 * time.Second
	}
	c.Provider = c.Provider.withDefaults()
	c.Institution = c.Institution.withDefaults()
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (b BreakerConfig) withDefaults() BreakerConfig {
	if b.Failures == 0 {
		b.Failures = 5
	}
	if b.OpenFor <= 0 {
		b.OpenFor = 30 * time.Second
	}
	if b.HalfOpenProbes == 0 {
		b.HalfOpenProbes = 1
	}
	return b
}

// Guard is the resilience layer shared by every outbound integration,
// independent of the Provider interface: rate limiters (one for the whole
// service, one per credential; shared by every process through
// Config.Store, else in this process), a service-wide circuit breaker, one
// breaker per institution, and bounded jittered retries of Unavailable
// failures. The calls it guards return *Error values, and so does
// the guard when it refuses a call. It is safe for concurrent use.
type Guard struct {
	name  string
	cfg   Config
	limit *rate.Limiter
	prov  *breaker

	mu    sync.Mutex
	creds map[string]*rate.Limiter
	insts map[string]*breaker
}

// GuardKey names the per-call limiter and breaker of a guarded call.
type GuardKey struct {
	// Credential selects the per-credential rate limiter (none when empty
	// or when the limits set no per-credential rate).
	Credential string
	// Institution selects the per-institution breaker (none when empty).
	Institution string
}

// NewGuard returns a guard for the named service (a provider name, or a
// destination's). The name labels its errors, breakers and shared buckets.
func NewGuard(name string, cfg Config) *Guard {
	cfg = cfg.withDefaults()
	g := &Guard{
		name: name, cfg: cfg,
		limit: newLimiter(cfg.Limits.Provider),
		creds: map[string]*rate.Limiter{},
		insts: map[string]*breaker{},
	}
	g.prov = newBreaker(name, "", cfg.Provider, cfg.Now, countsForProvider)
	return g
}

// Do runs op with limiter waits, breakers and retries. A refused call
// returns an *Error: RateLimited when a rate limiter would wait longer
// than MaxLimiterWait, Unavailable with CodeCircuitOpen while a breaker is
// open.
func (g *Guard) Do(ctx context.Context, key GuardKey, op func(context.Context) error) error {
	for attempt := 0; ; attempt++ {
		if err := g.wait(ctx, key.Credential); err != nil {
			return err
		}
		err := g.once(ctx, key.Institution, op)
		if err == nil || !retryable(err) || attempt >= g.cfg.Retries || ctx.Err() != nil {
			return err
		}
		if sleep(ctx, g.backoff(attempt)) != nil {
			return err
		}
	}
}

// retryable reports an Unavailable failure other than an open breaker.
func retryable(err error) bool {
	pe := AsError(err)
	return pe != nil && pe.Class == Unavailable && pe.Code != CodeCircuitOpen
}

func (g *Guard) backoff(attempt int) time.Duration {
	d := g.cfg.Backoff << attempt
	if d > g.cfg.MaxBackoff || d <= 0 {
		d = g.cfg.MaxBackoff
	}
	// Full jitter in [d/2, d).
	return d/2 + rand.N(d/2+1)
}

// once runs op through the service breaker and, when an institution is
// named, that institution's breaker.
func (g *Guard) once(ctx context.Context, institution string, op func(context.Context) error) error {
	ib := g.institutionBreaker(institution)
	_, err := g.prov.cb.Execute(func() (struct{}, error) {
		if ib == nil {
			return struct{}{}, op(ctx)
		}
		_, err := ib.cb.Execute(func() (struct{}, error) { return struct{}{}, op(ctx) })
		return struct{}{}, ib.translate(err)
	})
	return g.prov.translate(err)
}

func (g *Guard) institutionBreaker(id string) *breaker {
	if id == "" {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	b, ok := g.insts[id]
	if !ok {
		b = newBreaker(g.name, id, g.cfg.Institution, g.cfg.Now, countsForInstitution)
		g.insts[id] = b
	}
	return b
}

// wait takes a token from the service and credential limiters, waiting at
// most MaxLimiterWait; a longer wait is a RateLimited error.
func (g *Guard) wait(ctx context.Context, credential string) error {
	if err := g.take(ctx, "provider", func() *rate.Limiter { return g.limit }, g.cfg.Limits.Provider); err != nil {
		return err
	}
	if credential == "" || g.cfg.Limits.Credential.Rate == 0 {
		return nil
	}
	return g.take(ctx, "credential:"+credential, func() *rate.Limiter { return g.credentialLimiter(credential) }, g.cfg.Limits.Credential)
}

// take takes one token of a limit: from the shared store when there is
// one, else (or when the store fails) from the local limiter.
func (g *Guard) take(ctx context.Context, bucket string, local func() *rate.Limiter, lim Limit) error {
	if lim.Rate == 0 {
		return nil
	}
	if g.cfg.Store != nil {
		if shared, err := g.takeShared(ctx, bucket, lim); shared {
			return err
		}
	}
	return g.takeLocal(ctx, local(), lim)
}

// takeShared takes a token from the store's bucket, sleeping while the
// wait is short. shared is false when the store failed (the caller then
// limits locally).
func (g *Guard) takeShared(ctx context.Context, bucket string, lim Limit) (shared bool, err error) {
	burst := max(lim.Burst, 1)
	waited := time.Duration(0)
	for {
		d, ok, err := g.cfg.Store.TakeProviderToken(ctx, g.name, bucket, float64(lim.Rate), burst)
		if err != nil {
			if ctx.Err() != nil {
				return true, g.limiterWaitError(ctx.Err())
			}
			return false, nil
		}
		if ok {
			return true, nil
		}
		if waited+d > g.cfg.MaxLimiterWait {
			return true, g.rateLimited(d, lim)
		}
		if err := sleep(ctx, d); err != nil {
			return true, g.limiterWaitError(err)
		}
		waited += d
	}
}

// takeLocal takes a token of a limiter of lim in this process's memory.
func (g *Guard) takeLocal(ctx context.Context, l *rate.Limiter, lim Limit) error {
	if l == nil {
		return nil
	}
	res := l.Reserve()
	d := res.Delay()
	if !res.OK() || d > g.cfg.MaxLimiterWait {
		res.Cancel()
		if !res.OK() {
			d = g.cfg.MaxLimiterWait
		}
		return g.rateLimited(d, lim)
	}
	if err := sleep(ctx, d); err != nil {
		res.Cancel()
		return g.limiterWaitError(err)
	}
	return nil
}

// rateLimited is the refusal of a call by limit lim, which may be tried
// again after retryAfter.
func (g *Guard) rateLimited(retryAfter time.Duration, lim Limit) error {
	if lim.Quota {
		return &Error{Provider: g.name, Class: RateLimited, Code: CodeQuotaExhausted,
			Message: "request quota spent", RetryAfter: retryAfter}
	}
	return &Error{Provider: g.name, Class: RateLimited, Code: CodeRateLimit,
		Message: "local rate limit reached", RetryAfter: retryAfter}
}

func (g *Guard) limiterWaitError(err error) error {
	return &Error{Provider: g.name, Class: Unavailable, Code: CodeTimeout,
		Message: fmt.Sprintf("waiting for rate limiter: %v", err), Err: err}
}

func (g *Guard) credentialLimiter(key string) *rate.Limiter {
	if g.cfg.Limits.Credential.Rate == 0 || key == "" {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	l, ok := g.creds[key]
	if !ok {
		l = newLimiter(g.cfg.Limits.Credential)
		g.creds[key] = l
	}
	return l
}

func newLimiter(l Limit) *rate.Limiter {
	if l.Rate == 0 {
		return nil
	}
	burst := l.Burst
	if burst < 1 {
		burst = 1
	}
	return rate.NewLimiter(l.Rate, burst)
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// BreakerState describes one circuit breaker, for metrics and ops.
type BreakerState struct {
	// Provider is the provider name.
	Provider string
	// InstitutionID is empty for the provider-wide breaker.
	InstitutionID string
	// State is "closed", "half-open" or "open".
	State string
	// ConsecutiveFailures is the current run of counted failures.
	ConsecutiveFailures uint32
	// RetryAfter is the time left before an open breaker lets a probe in.
	RetryAfter time.Duration
}

// States reports every breaker of the guard: the service-wide one first,
// then the institutions' by id.
func (g *Guard) States() []BreakerState {
	out := []BreakerState{g.prov.state()}
	g.mu.Lock()
	ids := make([]string, 0, len(g.insts))
	for id := range g.insts {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	bs := make([]*breaker, len(ids))
	for i, id := range ids {
		bs[i] = g.insts[id]
	}
	g.mu.Unlock()
	for _, b := range bs {
		out = append(out, b.state())
	}
	return out
}

// breaker is a gobreaker plus what it needs to say when it half-opens.
type breaker struct {
	provider, institution string
	cfg                   BreakerConfig
	now                   func() time.Time
	cb                    *gobreaker.CircuitBreaker[struct{}]

	mu       sync.Mutex
	openedAt time.Time
}

// failureKind decides, for one breaker, whether an error counts as a
// failure, a success, or not at all.
type failureKind func(err error) (failure, excluded bool)

// countsForProvider: provider-wide Unavailable failures count; an
// institution's outage or breaker and the caller's cancellation do not.
func countsForProvider(err error) (bool, bool) {
	if errors.Is(err, context.Canceled) {
		return false, true
	}
	pe := AsError(err)
	if pe == nil || pe.Class != Unavailable {
		return false, false
	}
	if pe.InstitutionID != "" || pe.Code == CodeCircuitOpen {
		return false, true
	}
	return true, false
}

// countsForInstitution: only institution-down errors count; provider-wide
// failures are left to the provider breaker.
func countsForInstitution(err error) (bool, bool) {
	if errors.Is(err, context.Canceled) {
		return false, true
	}
	pe := AsError(err)
	if pe == nil || pe.Class != Unavailable {
		return false, false
	}
	if pe.InstitutionID != "" {
		return true, false
	}
	return false, true
}

func newBreaker(provider, institution string, cfg BreakerConfig, now func() time.Time, kind failureKind) *breaker {
	b := &breaker{provider: provider, institution: institution, cfg: cfg, now: now}
	name := provider
	if institution != "" {
		name += "/" + institution
	}
	b.cb = gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        name,
		MaxRequests: cfg.HalfOpenProbes,
		Timeout:     cfg.OpenFor,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= cfg.Failures },
		IsSuccessful: func(err error) bool {
			failure, _ := kind(err)
			return !failure
		},
		IsExcluded: func(err error) bool {
			_, excluded := kind(err)
			return excluded
		},
		OnStateChange: func(_ string, _, to gobreaker.State) {
			if to == gobreaker.StateOpen {
				b.mu.Lock()
				b.openedAt = b.now()
				b.mu.Unlock()
			}
		},
	})
	return b
}

// retryAfter is the time left before the open breaker half-opens (at
// least a second while it refuses calls).
func (b *breaker) retryAfter() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	d := b.openedAt.Add(b.cfg.OpenFor).Sub(b.now())
	if d < time.Second {
		d = time.Second
	}
	return d
}

// translate turns gobreaker's refusals into a CIRCUIT_OPEN provider error.
func (b *breaker) translate(err error) error {
	if err != gobreaker.ErrOpenState && err != gobreaker.ErrTooManyRequests { //nolint:errorlint // the breaker's own refusal, not one wrapped by an inner breaker
		return err
	}
	scope := "provider"
	if b.institution != "" {
		scope = "institution " + b.institution
	}
	return &Error{
		Provider: b.provider, Class: Unavailable, Code: CodeCircuitOpen,
		Message:       fmt.Sprintf("circuit breaker open for %s", scope),
		RetryAfter:    b.retryAfter(),
		InstitutionID: b.institution, Err: err,
	}
}

func (b *breaker) state() BreakerState {
	st := BreakerState{
		Provider: b.provider, InstitutionID: b.institution,
		State:               b.cb.State().String(),
		ConsecutiveFailures: b.cb.Counts().ConsecutiveFailures,
	}
	if b.cb.State() == gobreaker.StateOpen {
		st.RetryAfter = b.retryAfter()
	}
	return st
}
