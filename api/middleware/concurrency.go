package middleware

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/finsync/finsync/storage"
)

// SlotStore is what Concurrency needs from storage: a credential's
// concurrency slots, shared by every API process.
type SlotStore interface {
	AcquireSlot(ctx context.Context, c storage.SlotClaim) (storage.Slot, bool, error)
	RenewSlot(ctx context.Context, slot storage.Slot, ttl time.Duration) (bool, error)
	ReleaseSlot(ctx context.Context, slot storage.Slot) error
	PurgeSlots(ctx context.Context, before time.Time) (int64, error)
}

// Defaults of ConcurrencyConfig.
const (
	// DefaultExpensivePerCredential is how many expensive requests one
	// credential may run at once across the fleet. One: on a small
	// database server a preview's CPU is felt by every tenant, so a
	// credential's second concurrent preview would double its share.
	DefaultExpensivePerCredential = 1
	// DefaultExpensivePerProcess is how many expensive requests one
	// process runs at once, of all credentials together: half of serve's
	// default pool (16 connections), leaving the rest to short reads.
	DefaultExpensivePerProcess = 8
	// DefaultLargeListing is the page size above which a listing counts
	// as expensive (the default pages, 50 and 100, do not).
	DefaultLargeListing = 100
)

// ConcurrencyConfig tunes Concurrency; zero fields take the defaults.
type ConcurrencyConfig struct {
	// PerCredential caps a credential's concurrent expensive requests
	// (default DefaultExpensivePerCredential).
	PerCredential int
	// LargeListing: a listing whose limit parameter exceeds it is
	// expensive (default DefaultLargeListing).
	LargeListing int
	// SlotTTL is how long a slot stays taken without renewal (default
	// 15 s): a process that dies keeps its requests' slots this long.
	// Slots are renewed every third of it while their requests run.
	SlotTTL time.Duration
	// RetryAfter is the wait a refused request is told (default 1 s).
	RetryAfter time.Duration
	// StoreTimeout bounds one claim round trip (default 1 s).
	StoreTimeout time.Duration
	// OutageBackoff is how long the local fallback is used after the
	// store failed (default 1 s).
	OutageBackoff time.Duration
	// PerProcess caps the expensive requests one process runs at once,
	// whatever their credentials (default DefaultExpensivePerProcess), so
	// that many tenants each within their own cap cannot take every
	// connection of the process's pool together. It is a bound on this
	// process's own resources, so it holds per process by design.
	PerProcess int
	// RefusalMemory is how long a process answers a credential's
	// expensive requests 429 from memory after the store found all its
	// slots held (default 100 ms), so that a client hammering past the
	// cap does not reach the database per request.
	RefusalMemory time.Duration
}

func (c ConcurrencyConfig) withDefaults() ConcurrencyConfig {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.SlotTTL, 15*time.Second)
	def(&c.RetryAfter, time.Second)
	def(&c.StoreTimeout, time.Second)
	def(&c.OutageBackoff, time.Second)
	def(&c.RefusalMemory, 100*time.Millisecond)
	if c.PerCredential <= 0 {
		c.PerCredential = DefaultExpensivePerCredential
	}
	if c.LargeListing <= 0 {
		c.LargeListing = DefaultLargeListing
	}
	if c.PerProcess <= 0 {
		c.PerProcess = DefaultExpensivePerProcess
	}
	return c
}

// ExpensiveRoutes names the expensive routes by Gin route template
// ("/v2/rules/preview"): Always for a route every request of which is
// expensive, Listing for a listing that is expensive when its limit
// parameter exceeds ConcurrencyConfig.LargeListing.
type ExpensiveRoutes map[string]RouteCost

// RouteCost is how a route's requests are judged expensive.
type RouteCost int

// The route costs.
const (
	// Listing: expensive when the limit parameter exceeds LargeListing.
	Listing RouteCost = iota + 1
	// Always: every request is expensive.
	Always
)

// Concurrency caps each credential's concurrent expensive requests (rule
// previews, large listings) for every API process together: a request
// takes one of the credential's slots, rows of PostgreSQL claimed in one
// short round trip and deleted when it ends, and is answered 429 with
// Retry-After when all are taken. No database connection is held while
// the request runs, besides the request's own; a slot is renewed every
// third of its TTL while its request runs.
//
// A refusal is remembered for RefusalMemory (100 ms): the process answers
// the credential's expensive requests 429 from memory meanwhile, so a
// client hammering past the cap does not reach the database per request.
//
// Guarantee: a credential never runs more than PerCredential expensive
// requests at once across the fleet, and a process never more than
// PerProcess of all credentials together. Caveats: a slot freed on another
// process may be seen up to RefusalMemory late; a process that dies keeps
// its requests' slots until their TTL (15 s) runs out; while PostgreSQL
// cannot be reached each process caps the credential in its own memory, so
// N processes may then allow N times the cap; the cap is per credential,
// so a user's several keys each have their own.
type Concurrency struct {
	store  SlotStore
	cfg    ConcurrencyConfig
	holder uuid.UUID
	log    *slog.Logger

	// running holds a token per expensive request this process runs
	// (ConcurrencyConfig.PerProcess).
	running chan struct{}

	mu        sync.Mutex
	downUntil time.Time
	local     map[uuid.UUID]int // in-flight requests per credential, when the store is down
	refused   map[uuid.UUID]time.Time
}

// NewConcurrency returns the cap over store; log receives store failures
// (nil discards them).
func NewConcurrency(store SlotStore, cfg ConcurrencyConfig, log *slog.Logger) *Concurrency {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.withDefaults()
	return &Concurrency{store: store, cfg: cfg, holder: uuid.New(), log: log, running: make(chan struct{}, cfg.PerProcess),
		local: map[uuid.UUID]int{}, refused: map[uuid.UUID]time.Time{}}
}

// Handler caps the authenticated credential's requests to the routes
// listed (by c.FullPath()) that are expensive, answering 429 through r
// past the cap; other requests pass untouched.
func (k *Concurrency) Handler(r Responder, routes ExpensiveRoutes) gin.HandlerFunc {
	return func(c *gin.Context) {
		p := GetPrincipal(c)
		if p == nil || !k.expensive(c, routes) {
			c.Next()
			return
		}
		select {
		case k.running <- struct{}{}:
			defer func() { <-k.running }()
		default:
			r.RateLimited(c, LimitInfo{Name: ConcurrentProcessLimitName, Count: k.cfg.PerProcess}, k.cfg.RetryAfter)
			c.Abort()
			return
		}
		release, ok := k.acquire(c.Request.Context(), p)
		if !ok {
			r.RateLimited(c, LimitInfo{Name: ConcurrentLimitName, Count: k.cfg.PerCredential}, k.cfg.RetryAfter)
			c.Abort()
			return
		}
		defer release()
		c.Next()
	}
}

// ConcurrentLimitName is the LimitInfo.Name of a refusal past a
// credential's cap, ConcurrentProcessLimitName of one past the process's
// (every credential together); their Period is zero (a count of requests
// at once, not per period).
const (
	ConcurrentLimitName        = "concurrent-expensive"
	ConcurrentProcessLimitName = "concurrent-expensive-process"
)

// expensive reports whether the request is an expensive one of routes.
func (k *Concurrency) expensive(c *gin.Context, routes ExpensiveRoutes) bool {
	switch routes[c.FullPath()] {
	case Always:
		return true
	case Listing:
		// An invalid limit is refused by the handler with a 400; only a
		// valid large one counts.
		n, err := strconv.Atoi(c.Query("limit"))
		return err == nil && n > k.cfg.LargeListing
	}
	return false
}

// acquire takes a slot for the principal's credential, in the store or,
// while it is down, in memory; release frees it.
func (k *Concurrency) acquire(ctx context.Context, p *storage.Principal) (release func(), ok bool) {
	if k.recentlyRefused(p.CredentialID) {
		return nil, false
	}
	if !k.storeDown() {
		sctx, cancel := context.WithTimeout(ctx, k.cfg.StoreTimeout)
		slot, ok, err := k.store.AcquireSlot(sctx, storage.SlotClaim{
			UserID: p.UserID, CredentialID: p.CredentialID, Cap: k.cfg.PerCredential, Holder: k.holder, TTL: k.cfg.SlotTTL,
		})
		cancel()
		if err == nil {
			if !ok {
				k.remember(p.CredentialID)
				return nil, false
			}
			return k.hold(ctx, slot), true
		}
		if ctx.Err() != nil {
			return nil, false
		}
		k.failed(ctx, err)
	}
	return k.acquireLocal(p.CredentialID)
}

// hold renews slot every third of its TTL until the returned release is
// called, which stops the renewals and deletes the slot.
func (k *Concurrency) hold(ctx context.Context, slot storage.Slot) func() {
	bg := context.WithoutCancel(ctx)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(k.cfg.SlotTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				rctx, cancel := context.WithTimeout(bg, k.cfg.StoreTimeout)
				held, err := k.store.RenewSlot(rctx, slot, k.cfg.SlotTTL)
				cancel()
				if err != nil || !held {
					k.log.WarnContext(bg, "concurrency slot not renewed; the credential may briefly run one request more than its cap",
						"credential_id", slot.CredentialID, "slot", slot.Number, "error", err)
				}
			}
		}
	}()
	return func() {
		close(stop)
		<-done
		rctx, cancel := context.WithTimeout(bg, k.cfg.StoreTimeout)
		defer cancel()
		err := k.store.ReleaseSlot(rctx, slot)
		k.forget(slot.CredentialID)
		if err != nil {
			// The slot frees itself at its expiry.
			k.log.WarnContext(bg, "concurrency slot not released; it frees itself when it expires",
				"credential_id", slot.CredentialID, "slot", slot.Number, "error", err)
		}
	}
}

// recentlyRefused reports whether the store found all the credential's
// slots held less than RefusalMemory ago.
func (k *Concurrency) recentlyRefused(credentialID uuid.UUID) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	until, ok := k.refused[credentialID]
	return ok && time.Now().Before(until)
}

// remember records a refusal by the store; memory stays bounded by the
// credentials refused within RefusalMemory.
func (k *Concurrency) remember(credentialID uuid.UUID) {
	now := time.Now()
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.refused) >= 1024 {
		for id, until := range k.refused {
			if !now.Before(until) {
				delete(k.refused, id)
			}
		}
	}
	k.refused[credentialID] = now.Add(k.cfg.RefusalMemory)
}

// forget drops a remembered refusal of the credential (this process has
// just freed one of its slots).
func (k *Concurrency) forget(credentialID uuid.UUID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.refused, credentialID)
}

// storeDown reports whether the store is in its outage backoff.
func (k *Concurrency) storeDown() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return time.Now().Before(k.downUntil)
}

func (k *Concurrency) failed(ctx context.Context, err error) {
	k.mu.Lock()
	k.downUntil = time.Now().Add(k.cfg.OutageBackoff)
	k.mu.Unlock()
	k.log.WarnContext(ctx, "concurrency slots unavailable; capping in this process only", "error", err)
}

// acquireLocal caps the credential in this process's memory.
func (k *Concurrency) acquireLocal(credentialID uuid.UUID) (func(), bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.local[credentialID] >= k.cfg.PerCredential {
		return nil, false
	}
	k.local[credentialID]++
	return func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		if k.local[credentialID]--; k.local[credentialID] <= 0 {
			delete(k.local, credentialID)
		}
	}, true
}

// Run deletes expired slots hourly (those of processes that died, for
// credentials not used since) until ctx ends.
func (k *Concurrency) Run(ctx context.Context) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if _, err := k.store.PurgeSlots(ctx, now.Add(-time.Minute)); err != nil && ctx.Err() == nil {
				k.log.WarnContext(ctx, "purge concurrency slots", "error", err)
			}
		}
	}
}

// Defaults returns c with its zero fields set to the defaults.
func (c ConcurrencyConfig) Defaults() ConcurrencyConfig { return c.withDefaults() }
