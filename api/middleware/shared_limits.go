package middleware

import (
	"context"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/storage"
)

// LeaseStore is what SharedLimits needs from storage: leases of a user's
// shared budget, and the purge of idle buckets.
type LeaseStore interface {
	LeaseRateTokens(ctx context.Context, r storage.RateLease) (storage.RateGrant, error)
	PurgeRateBuckets(ctx context.Context, before time.Time) (int64, error)
}

// SharedConfig tunes SharedLimits; zero fields take the defaults.
type SharedConfig struct {
	// LeaseTTL is how long a process may spend a lease (default 30 s). A
	// process that dies keeps its lease's tokens out of the budget this long.
	LeaseTTL time.Duration
	// IdleReturn gives back a lease's unused tokens once no request has
	// spent one for this long (default 2 s), so that a key whose traffic
	// moved to another process finds its whole budget there.
	IdleReturn time.Duration
	// BlockPercent caps a lease at this percentage of the limit's count
	// (default 2, at least one token): N processes leave at most N×2% of a
	// budget stranded in idle leases.
	BlockPercent float64
	// StoreTimeout bounds one lease round trip (default 1 s).
	StoreTimeout time.Duration
	// OutageBackoff is how long the local fallback is used after the store
	// failed before it is tried again (default 1 s).
	OutageBackoff time.Duration
	// SweepEvery is how often Run gives idle leases back (default 1 s).
	SweepEvery time.Duration
	// PurgeAfter deletes buckets untouched this long (default 2 h; it must
	// exceed the longest limit period, one hour).
	PurgeAfter time.Duration
	// ForgetAfter drops from memory a budget that holds no token and saw
	// no request for this long (default 1 min).
	ForgetAfter time.Duration
}

func (c SharedConfig) withDefaults() SharedConfig {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.LeaseTTL, 30*time.Second)
	def(&c.IdleReturn, 2*time.Second)
	def(&c.StoreTimeout, time.Second)
	def(&c.OutageBackoff, time.Second)
	def(&c.SweepEvery, time.Second)
	def(&c.PurgeAfter, 2*time.Hour)
	def(&c.ForgetAfter, time.Minute)
	if c.BlockPercent <= 0 {
		c.BlockPercent = 2
	}
	return c
}

// expiryMargin is how much earlier than the database's expiry a lease stops
// being spent here, covering the round trip and clock drift.
const expiryMargin = time.Second

// minDenial is the shortest time a refusal is answered from memory.
const minDenial = 20 * time.Millisecond

// SharedLimits enforces per-user limits for every API process together.
// Each user's budget is a token bucket row in PostgreSQL; a process leases
// small blocks of it (at most BlockPercent of the count, one token for small
// limits) and answers requests from the lease in memory, renewing it in the
// background before it runs out, so a request waits for the database only
// when its process holds no token of that budget (its first request, or a
// budget spent faster than a renewal).
//
// Guarantee: the bucket's tokens plus every live lease never exceed the
// limit's count, so all processes together never allow more than one token
// bucket of the limit would (Count at once, refilled at Count per Period).
// Caveats: tokens leased to a process that stops receiving the key's
// requests come back after IdleReturn (when Run runs) or LeaseTTL (when the
// process died); while PostgreSQL cannot be reached, each process falls
// back to its own in-memory bucket of the full limit. Memory is bounded by
// the budgets active within ForgetAfter (a minute).
type SharedLimits struct {
	store  LeaseStore
	holder uuid.UUID
	cfg    SharedConfig
	log    *slog.Logger
	local  *Limiters

	// downUntil (Unix nanoseconds) ends the outage backoff.
	downUntil atomic.Int64

	mu        sync.Mutex // guards m and lastSweep; taken before a budget's
	m         map[string]*budget
	lastSweep time.Time
}

// budget is a process's view of one user's budget.
type budget struct {
	userID uuid.UUID
	info   LimitInfo
	key    string // in this process: user, limit and figures
	name   string // in the database, beside the user id: limit and figures

	mu        sync.Mutex
	tokens    int       // unspent tokens of the lease in hand
	expires   time.Time // when the lease stops being spendable here
	block     int       // the last lease's grant, for renewal
	bucket    float64   // the shared bucket's tokens at `at`
	at        time.Time
	lastUse   time.Time
	denyUntil time.Time
	// renewAfter holds back renewals after one found the bucket empty.
	renewAfter time.Time
	inflight   chan struct{} // closed when the lease call in flight ends
}

// NewSharedLimits returns limits shared through store by every process;
// log receives store failures (nil discards them).
func NewSharedLimits(store LeaseStore, cfg SharedConfig, log *slog.Logger) *SharedLimits {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &SharedLimits{
		store: store, holder: uuid.New(), cfg: cfg.withDefaults(), log: log,
		local: NewLimiters(), m: map[string]*budget{}, lastSweep: time.Now(),
	}
}

// Allow spends one request of the user's budget for the limit.
func (s *SharedLimits) Allow(ctx context.Context, userID uuid.UUID, info LimitInfo) Decision {
	if info.Count <= 0 || info.Period <= 0 {
		return Decision{Limit: max(info.Count, 0), RetryAfter: max(info.Period, time.Second)}
	}
	b := s.budget(userID, info)
	for {
		now := time.Now()
		up := s.storeUp(now)
		b.mu.Lock()
		if b.tokens > 0 && now.Before(b.expires) {
			b.tokens--
			b.lastUse = now
			d := b.allowed(now)
			if b.inflight == nil && up && b.needsRenewal(now, s.cfg.LeaseTTL) {
				b.inflight = make(chan struct{})
				go s.renew(context.WithoutCancel(ctx), b)
			}
			b.mu.Unlock()
			return d
		}
		if now.Before(b.denyUntil) {
			d := b.denied(now)
			b.mu.Unlock()
			return d
		}
		if !up {
			b.mu.Unlock()
			return s.local.Take(b.key, info)
		}
		if ch := b.inflight; ch != nil {
			b.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return s.local.Take(b.key, info)
			}
			continue
		}
		b.inflight = make(chan struct{})
		unused := b.tokens // left in an expired lease: back to the bucket
		b.tokens = 0
		b.mu.Unlock()
		s.lease(context.WithoutCancel(ctx), b, s.blockOf(info), unused, 0)
	}
}

// budget returns the user's budget for the limit, creating it empty.
func (s *SharedLimits) budget(userID uuid.UUID, info LimitInfo) *budget {
	key := limitKey(userID, info)
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Sub(s.lastSweep) > min(DefaultSweepEvery, s.cfg.ForgetAfter) {
		s.dropIdle(now)
	}
	b, ok := s.m[key]
	if !ok {
		b = &budget{userID: userID, info: info, key: key, name: info.Name + "|" + strconv.Itoa(info.Count) + "/" + info.Period.String()}
		s.m[key] = b
	}
	return b
}

// dropIdle forgets budgets that hold no token and were not used for
// ForgetAfter. Callers hold s.mu.
func (s *SharedLimits) dropIdle(now time.Time) {
	for k, b := range s.m {
		b.mu.Lock()
		idle := b.tokens == 0 && b.inflight == nil && now.Sub(b.lastUse) > s.cfg.ForgetAfter && now.After(b.denyUntil)
		b.mu.Unlock()
		if idle {
			delete(s.m, k)
		}
	}
	s.lastSweep = now
}

// Len reports how many budgets are held in memory.
func (s *SharedLimits) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// blockOf is the largest lease of a limit: BlockPercent of its count, at
// least one token.
func (s *SharedLimits) blockOf(info LimitInfo) int {
	return max(1, int(float64(info.Count)*s.cfg.BlockPercent/100))
}

// storeUp reports whether the store is not in its outage backoff.
func (s *SharedLimits) storeUp(now time.Time) bool {
	return now.UnixNano() >= s.downUntil.Load()
}

func (s *SharedLimits) storeFailed(ctx context.Context, err error, b *budget) {
	s.downUntil.Store(time.Now().Add(s.cfg.OutageBackoff).UnixNano())
	s.log.WarnContext(ctx, "shared rate limit unavailable; limiting in this process only", "limit", b.info.Name, "error", err)
}

// needsRenewal: a lease of more than one token is renewed ahead of need
// when a quarter or less of it is left, or a third of its life. Single-token
// leases are not prefetched (they would strand a whole token per process).
// Callers hold b.mu.
func (b *budget) needsRenewal(now time.Time, ttl time.Duration) bool {
	if b.block <= 1 || now.Before(b.renewAfter) {
		return false
	}
	return b.tokens*4 <= b.block || b.expires.Sub(now) < ttl/3
}

// renew replaces the lease in the background, keeping its unspent tokens.
func (s *SharedLimits) renew(ctx context.Context, b *budget) {
	b.mu.Lock()
	keep := b.tokens
	b.mu.Unlock()
	s.lease(ctx, b, s.blockOf(b.info), 0, keep)
}

// lease asks the store for want tokens, giving back unused and keeping
// keep of the current lease, and applies the answer. The caller has set
// b.inflight; lease clears it.
func (s *SharedLimits) lease(ctx context.Context, b *budget, want, unused, keep int) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
	defer cancel()
	start := time.Now()
	g, err := s.store.LeaseRateTokens(ctx, storage.RateLease{
		UserID: b.userID, Name: b.name, Holder: s.holder,
		Capacity: b.info.Count, PerSecond: perSecond(b.info),
		Want: want, Unused: unused, Keep: keep, TTL: s.cfg.LeaseTTL,
	})
	b.mu.Lock()
	defer func() {
		close(b.inflight)
		b.inflight = nil
		b.mu.Unlock()
	}()
	if err != nil {
		// Unused tokens that did not go back stay out of the bucket until
		// it refills; nothing is spent twice.
		s.storeFailed(ctx, err, b)
		return
	}
	b.bucket, b.at = g.Tokens, start
	if keep > 0 || g.Granted > 0 {
		// Tokens kept were spent meanwhile down from keep: b.tokens counts
		// them; the grant joins them under the new expiry.
		b.tokens += g.Granted
		b.block = g.Granted + keep
		b.expires = start.Add(g.Expires.Sub(g.Now) - expiryMargin)
	}
	if want == 0 {
		return
	}
	if g.Granted == 0 {
		wait := max(time.Duration((1-g.Tokens)/perSecond(b.info)*float64(time.Second)), minDenial)
		if b.tokens == 0 {
			b.denyUntil = start.Add(wait)
		} else {
			b.renewAfter = start.Add(wait)
		}
	}
}

// giveBack returns the unspent tokens of an idle or expired lease.
func (s *SharedLimits) giveBack(ctx context.Context, b *budget) {
	b.mu.Lock()
	unused := b.tokens
	b.tokens = 0
	b.mu.Unlock()
	s.lease(ctx, b, 0, unused, 0)
}

// Run gives back idle leases every SweepEvery and purges idle buckets
// hourly, until ctx ends.
func (s *SharedLimits) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.SweepEvery)
	defer t.Stop()
	lastPurge := time.Time{}
	for {
		select {
		case <-ctx.Done():
			s.returnAll(context.WithoutCancel(ctx))
			return
		case now := <-t.C:
			s.returnIdle(ctx, now, false)
			if now.Sub(lastPurge) > time.Hour && s.storeUp(now) {
				lastPurge = now
				if _, err := s.store.PurgeRateBuckets(ctx, now.Add(-s.cfg.PurgeAfter)); err != nil && ctx.Err() == nil {
					s.log.WarnContext(ctx, "purge rate buckets", "error", err)
				}
			}
		}
	}
}

// returnAll gives every lease back (on shutdown), briefly.
func (s *SharedLimits) returnAll(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	s.returnIdle(ctx, time.Now(), true)
}

// returnIdle gives back the leases not spent from for IdleReturn (all of
// them when all is set).
func (s *SharedLimits) returnIdle(ctx context.Context, now time.Time, all bool) {
	if !s.storeUp(now) {
		return
	}
	s.mu.Lock()
	var idle []*budget
	for _, b := range s.m {
		b.mu.Lock()
		if b.tokens > 0 && b.inflight == nil && (all || now.Sub(b.lastUse) >= s.cfg.IdleReturn || now.After(b.expires)) {
			b.inflight = make(chan struct{})
			idle = append(idle, b)
		}
		b.mu.Unlock()
	}
	s.mu.Unlock()
	for _, b := range idle {
		if ctx.Err() != nil {
			b.mu.Lock()
			close(b.inflight)
			b.inflight = nil
			b.mu.Unlock()
			continue
		}
		s.giveBack(ctx, b)
	}
}

// allowed is the decision after spending a token. Callers hold b.mu.
func (b *budget) allowed(now time.Time) Decision {
	rate := perSecond(b.info)
	count := float64(b.info.Count)
	shared := math.Min(count-float64(b.tokens), b.bucket+now.Sub(b.at).Seconds()*rate)
	left := math.Max(0, shared+float64(b.tokens))
	return Decision{
		Allowed:   true,
		Limit:     b.info.Count,
		Remaining: int(math.Floor(left)),
		Reset:     now.Add(time.Duration((count - left) / rate * float64(time.Second))),
	}
}

// denied is the decision while the shared budget is spent. Callers hold b.mu.
func (b *budget) denied(now time.Time) Decision {
	count := float64(b.info.Count)
	return Decision{
		Limit:      b.info.Count,
		Reset:      now.Add(time.Duration(count / perSecond(b.info) * float64(time.Second))),
		RetryAfter: b.denyUntil.Sub(now),
	}
}

func perSecond(info LimitInfo) float64 { return float64(info.Count) / info.Period.Seconds() }
