package middleware

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"golang.org/x/time/rate"

	"github.com/finsync/finsync/storage"
)

const principalKey = "finsync.principal"

// GetPrincipal returns the authenticated principal, or nil.
func GetPrincipal(c *gin.Context) *storage.Principal {
	v, ok := c.Get(principalKey)
	if !ok {
		return nil
	}
	return v.(*storage.Principal)
}

// CredentialStore is what the authenticator needs from storage.
type CredentialStore interface {
	LookupCredential(ctx context.Context, hash []byte) (storage.Principal, error)
	TouchCredentials(ctx context.Context, used map[uuid.UUID]time.Time) error
	// GetCredentialsVersion returns a counter that every committed change to
	// a credential or its user's plan or storage mode moves.
	GetCredentialsVersion(ctx context.Context) (int64, error)
	// ListenCredentialChanges holds a LISTEN on the credentials channel
	// until ctx ends or the connection fails, calling listening once
	// listening and changed on every notification.
	ListenCredentialChanges(ctx context.Context, listening, changed func()) (connected bool, err error)
	// TakeAuthFailureToken spends one token of a failed-authentication
	// budget, shared by every process; ok=false says none was left and how
	// long until one is. The budget is named by bucket: a client address
	// (failures of unknown credentials) or an address and a credential's
	// identity together (failures of a known one; see Authenticate).
	TakeAuthFailureToken(ctx context.Context, bucket string, perSecond float64, burst int) (wait time.Duration, ok bool, err error)
}

// AuthConfig tunes an Authenticator.
type AuthConfig struct {
	// CacheTTL bounds how long a looked-up credential is trusted without a
	// change notification; notifications drop the cache at once.
	CacheTTL time.Duration
	// VersionCheckEvery is how often the credentials version is read (one
	// single-row query per process); a moved version drops the cache. A
	// change committed anywhere is honoured by every process within
	// 2 × VersionCheckEvery, even when its NOTIFY is lost. Zero means 1 s.
	VersionCheckEvery time.Duration
	// CacheSize caps the number of cached credentials.
	CacheSize int
	// TouchEvery is how often last_used_at writes are flushed.
	TouchEvery time.Duration
	// FailuresPerMinute and FailureBurst throttle failed authentications,
	// for every process together, before they reach the database: each
	// client address has one such budget for unknown credentials, and each
	// pair of address and known credential (a disabled or expired key) one
	// of its own (see Authenticate).
	FailuresPerMinute float64
	FailureBurst      int
	// BlockedLookupsPerSecond bounds, per process, the lookups of
	// well-formed secrets that arrive from addresses whose budget for
	// unknown credentials is spent and that this process has not seen
	// authenticate: such a secret is still looked up, so a valid key sent
	// from an address where others fail (an office, a NAT) works on every
	// process, while an unknown one gets 429. Past this rate they get 429
	// unread, so a flood from blocked addresses costs the database at most
	// this many lookups a second per process. Zero means 50.
	BlockedLookupsPerSecond float64
}

// DefaultAuthConfig returns the production tuning.
func DefaultAuthConfig() AuthConfig {
	return AuthConfig{
		CacheTTL:                5 * time.Minute,
		VersionCheckEvery:       time.Second,
		CacheSize:               100_000,
		TouchEvery:              30 * time.Second,
		FailuresPerMinute:       60,
		FailureBurst:            30,
		BlockedLookupsPerSecond: 50,
	}
}

// vouchTTL is how long a credential that authenticated stays vouched for
// (refreshed by each success): a vouched credential is not refused by its
// address's budget for unknown credentials.
const vouchTTL = 24 * time.Hour

// vouchRefresh is how old a vouch may get before a success renews it, so
// most requests only read the vouch map.
const vouchRefresh = time.Minute

type cacheEntry struct {
	p       storage.Principal
	expires time.Time
}

// Authenticator resolves Bearer credentials to principals. Lookups are
// cached, and the cache is dropped two ways: a LISTEN on
// storage.CredentialsChannel drops it at once when a change is announced,
// and a check every VersionCheckEvery of the credentials version (bumped by
// database triggers in the changing transaction, whoever writes) drops it
// when the version moved, which covers a lost NOTIFY, a listener that is
// broken but not yet known to be, and changes made by plain SQL.
//
// Guarantee: disabling or expiring a key, or changing its user's plan,
// plan activity or storage mode, is honoured by every process within
// 2 × VersionCheckEvery (2 s by default) of its commit: the cache is used
// only while the listener is connected and the last version check began
// less than 2 × VersionCheckEvery ago; otherwise every request reads the
// database. Caveat: a request already past authentication finishes with
// the principal it had.
//
// A credential's account scope is not taken from the cache by queries:
// storage resolves it in each query's SQL (storage.Scope), so an account
// that joins a scope is visible at once on every process.
type Authenticator struct {
	store    CredentialStore
	cfg      AuthConfig
	log      *slog.Logger
	failures *Limiters
	// blockedLookups paces lookups from blocked addresses
	// (AuthConfig.BlockedLookupsPerSecond).
	blockedLookups *rate.Limiter
	// blocked remembers, per budget (an address, or an address and a
	// credential), until when the shared failure budget refused it.
	blockMu   sync.Mutex
	blocked   map[string]time.Time
	lastPrune time.Time
	// sharedDown is set while the shared failure budget cannot be reached,
	// so that an outage is logged once, not once per failed attempt.
	sharedDown atomic.Bool
	// vouched holds, by secret hash, until when a credential that
	// authenticated here is exempt from its address's budget for unknown
	// credentials. Unlike cache it survives credential changes: it never
	// authenticates, only lets a request reach the lookup.
	vouchMu sync.RWMutex
	vouched map[[32]byte]time.Time

	mu        sync.RWMutex
	cache     map[[32]byte]cacheEntry
	listening bool
	// gen counts cache drops, so a lookup that read the database before a
	// drop does not store what it read after it.
	gen uint64
	// checkedAt is when the last successful version check began; version
	// is what it read.
	checkedAt time.Time
	version   int64

	touchMu sync.Mutex
	touched map[uuid.UUID]time.Time
}

// NewAuthenticator returns an authenticator over the store.
func NewAuthenticator(store CredentialStore, cfg AuthConfig, log *slog.Logger) *Authenticator {
	return &Authenticator{
		store:    store,
		cfg:      cfg,
		log:      log,
		failures: NewLimiters(),
		blockedLookups: rate.NewLimiter(rate.Limit(cmp.Or(cfg.BlockedLookupsPerSecond, 50)),
			int(max(cmp.Or(cfg.BlockedLookupsPerSecond, 50), 1))),
		blocked: make(map[string]time.Time),
		vouched: make(map[[32]byte]time.Time),
		cache:   make(map[[32]byte]cacheEntry),
		touched: make(map[uuid.UUID]time.Time),
	}
}

// Listener reconnection backoff: the first retry comes quickly, later ones
// double up to the cap, so the cache is trusted again within about a
// second of the database returning.
const (
	listenRetryMin = 100 * time.Millisecond
	listenRetryMax = time.Second
)

// Run keeps the change listener connected, checks the credentials version
// every VersionCheckEvery and flushes last-used times until ctx ends.
// Without Run, the cache is never used. While the listener is down or the
// version checks fail (the database unreachable or restarting) every lookup
// goes to the database; the listener reconnects by itself with a short
// backoff.
func (a *Authenticator) Run(ctx context.Context) {
	go a.flushTouches(ctx)
	go a.checkVersions(ctx)
	wait := listenRetryMin
	for ctx.Err() == nil {
		connected, err := a.store.ListenCredentialChanges(ctx, func() { a.setListening(true) }, a.clear)
		a.setListening(false)
		if ctx.Err() != nil {
			return
		}
		if connected {
			wait = listenRetryMin
		}
		if wait == listenRetryMin {
			// Logged once per outage, not on every retry.
			a.log.WarnContext(ctx, "credential change listener is down; the cache is bypassed until it reconnects", "error", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, listenRetryMax)
	}
}

func (a *Authenticator) setListening(on bool) {
	a.mu.Lock()
	a.listening = on
	a.dropLocked()
	a.mu.Unlock()
}

func (a *Authenticator) clear() {
	a.mu.Lock()
	a.dropLocked()
	a.mu.Unlock()
}

func (a *Authenticator) dropLocked() {
	a.cache = make(map[[32]byte]cacheEntry)
	a.gen++
}

// versionCheckEvery is the configured interval, 1 s when unset.
func (a *Authenticator) versionCheckEvery() time.Duration {
	if a.cfg.VersionCheckEvery > 0 {
		return a.cfg.VersionCheckEvery
	}
	return time.Second
}

// checkVersions reads the credentials version every VersionCheckEvery until
// ctx ends and drops the cache when it moved. A failed check drops nothing
// but leaves checkedAt behind, so the cache stops being trusted.
func (a *Authenticator) checkVersions(ctx context.Context) {
	every := a.versionCheckEvery()
	t := time.NewTicker(every)
	defer t.Stop()
	failing := false
	for {
		a.checkVersionOnce(ctx, every, &failing)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (a *Authenticator) checkVersionOnce(ctx context.Context, every time.Duration, failing *bool) {
	began := time.Now()
	qctx, cancel := context.WithTimeout(ctx, every)
	v, err := a.store.GetCredentialsVersion(qctx)
	cancel()
	if err != nil {
		if !*failing && ctx.Err() == nil {
			a.log.WarnContext(ctx, "credentials version check failed; the cache is bypassed until it succeeds", "error", err)
		}
		*failing = true
		return
	}
	*failing = false
	a.mu.Lock()
	if v != a.version || a.checkedAt.IsZero() {
		a.dropLocked()
	}
	a.version = v
	a.checkedAt = began
	a.mu.Unlock()
}

// errBadCredential is a lookup that found nothing usable.
var errBadCredential = errors.New("bad credential")

// lookup returns the principal for a secret of the given hash, from the
// cache when it is trustworthy.
func (a *Authenticator) lookup(ctx context.Context, key [32]byte) (storage.Principal, error) {
	hash := key[:]
	now := time.Now()
	a.mu.RLock()
	e, ok := a.cache[key]
	trusted := a.listening && !a.checkedAt.IsZero() && now.Sub(a.checkedAt) < 2*a.versionCheckEvery()
	gen := a.gen
	a.mu.RUnlock()
	if ok && trusted && now.Before(e.expires) {
		return e.p, nil
	}
	p, err := a.store.LookupCredential(ctx, hash)
	if errors.Is(err, storage.ErrNotFound) {
		return p, errBadCredential
	}
	if err != nil {
		return p, err
	}
	if trusted {
		a.mu.Lock()
		// Stored only if nothing was dropped since the read began: what
		// was read may predate the change that caused the drop.
		if a.gen == gen {
			if len(a.cache) >= a.cfg.CacheSize {
				a.cache = make(map[[32]byte]cacheEntry)
			}
			a.cache[key] = cacheEntry{p: p, expires: now.Add(a.cfg.CacheTTL)}
		}
		a.mu.Unlock()
	}
	return p, nil
}

// wellFormed reports whether a secret has the shape of a finsync key or
// token, so malformed ones never reach the database.
func wellFormed(secret string) bool {
	var rest string
	switch {
	case strings.HasPrefix(secret, storage.OAuthTokenPrefix):
		rest = secret[len(storage.OAuthTokenPrefix):]
	case strings.HasPrefix(secret, storage.APIKeyPrefix):
		rest = secret[len(storage.APIKeyPrefix):]
	default:
		return false
	}
	if len(rest) < 32 || len(rest) > 128 {
		return false
	}
	for i := 0; i < len(rest); i++ {
		ch := rest[i]
		if !(ch >= '0' && ch <= '9' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z') {
			return false
		}
	}
	return true
}

// bearer extracts the token of an "Authorization: Bearer <token>" header.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	const prefix = "Bearer "
	if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", false
	}
	return strings.TrimSpace(h[len(prefix):]), true
}

// Authenticate resolves the Bearer credential and stores the principal in
// the context; failures answer 401 through the responder.
//
// Failed attempts are throttled (429 with Retry-After) before they reach
// the database, by two budgets shared by every process, so that the guilty
// are refused and not their neighbours:
//   - failures of unknown credentials (malformed, or matching no key) spend
//     their client address's budget: guessing keys from one address is
//     throttled however many different keys it tries. A credential that
//     authenticated on this process within vouchTTL is not refused by that
//     budget, so a valid key keeps working from an address (an office, a
//     NAT, a proxy) where others send bad keys;
//   - failures of a known credential (disabled, expired, or one that was
//     vouched for and no longer matches) spend the budget of that address
//     and that credential together: a revoked key retried in a loop is
//     throttled without refusing other keys from its address.
//
// Caveat: the vouch is this process's memory; a valid key that has not
// authenticated on this process within vouchTTL, sent from an address
// whose budget for unknown credentials is spent, is refused like an
// unknown one until the budget refills (one token per minute ÷
// FailuresPerMinute). Checking it against the database instead would
// let that address test keys at will.
func (a *Authenticator) Authenticate(r Responder) gin.HandlerFunc {
	failLimit := LimitInfo{Name: "auth-failures", Count: int(a.cfg.FailuresPerMinute), Period: time.Minute}
	return func(c *gin.Context) {
		secret, ok := bearer(c.Request)
		if !ok {
			r.Unauthorized(c, ReasonMissing)
			c.Abort()
			return
		}
		ip := ClientNetwork(c.ClientIP())
		if !wellFormed(secret) {
			// Never a key: the address's budget alone, and no hashing of
			// whatever length was sent.
			if wait, blocked := a.isBlocked(ip, failLimit); blocked {
				r.RateLimited(c, failLimit, wait)
				c.Abort()
				return
			}
			a.fail(c, r, ip, failLimit, ReasonInvalid)
			return
		}
		var hash [32]byte
		copy(hash[:], storage.HashSecret(secret))
		known := knownBucket(ip, hash)
		vouched := a.isVouched(hash)
		if wait, blocked := a.isBlocked(known, failLimit); blocked {
			r.RateLimited(c, failLimit, wait)
			c.Abort()
			return
		}
		if wait, blocked := a.isBlocked(ip, failLimit); blocked && !vouched {
			a.authenticateBlocked(c, r, hash, failLimit, wait)
			return
		}
		p, err := a.lookup(c.Request.Context(), hash)
		if errors.Is(err, errBadCredential) {
			bucket := ip
			if vouched {
				// It authenticated before: a known credential gone.
				a.unvouch(hash)
				bucket = known
			}
			a.fail(c, r, bucket, failLimit, ReasonInvalid)
			return
		}
		if err != nil {
			ServerError(c, r, a.log, fmt.Errorf("credential lookup: %w", err))
			return
		}
		if reason, bad := refused(p); bad {
			a.unvouch(hash)
			a.fail(c, r, known, failLimit, reason)
			return
		}
		a.vouch(hash)
		a.touch(p.CredentialID)
		c.Set(principalKey, &p)
		c.Next()
	}
}

// authenticateBlocked handles a well-formed secret, not vouched for here,
// from an address whose budget for unknown credentials is spent: within
// the process's pace of such lookups it is looked up, and a valid key
// goes on (and is vouched for); anything else is refused 429, as the
// address is, without spending more of any budget (the address is already
// refused, and a known credential's failures are counted when its address
// is not).
func (a *Authenticator) authenticateBlocked(c *gin.Context, r Responder, hash [32]byte, limit LimitInfo, wait time.Duration) {
	if !a.blockedLookups.Allow() {
		r.RateLimited(c, limit, wait)
		c.Abort()
		return
	}
	p, err := a.lookup(c.Request.Context(), hash)
	if err != nil && !errors.Is(err, errBadCredential) {
		ServerError(c, r, a.log, fmt.Errorf("credential lookup: %w", err))
		return
	}
	if _, bad := refused(p); err != nil || bad {
		r.RateLimited(c, limit, wait)
		c.Abort()
		return
	}
	a.vouch(hash)
	a.touch(p.CredentialID)
	c.Set(principalKey, &p)
	c.Next()
}

// refused says why a known credential may not authenticate, if it may not.
func refused(p storage.Principal) (Reason, bool) {
	if !p.Enabled {
		return ReasonDisabled, true
	}
	if p.ExpiresAt != nil && !time.Now().Before(*p.ExpiresAt) {
		return ReasonExpired, true
	}
	return 0, false
}

// knownBucket names the failure budget of one credential (by the hash of
// its secret: the first 16 bytes, in hex) from one address.
func knownBucket(ip string, hash [32]byte) string {
	return ip + " credential " + hex.EncodeToString(hash[:16])
}

// fail spends a token of the failure budget named bucket, in this process
// and in the shared one, and answers 401.
func (a *Authenticator) fail(c *gin.Context, r Responder, bucket string, limit LimitInfo, reason Reason) {
	a.failures.Spend(bucket, limit, a.cfg.FailureBurst)
	a.spendShared(c.Request.Context(), bucket)
	r.Unauthorized(c, reason)
	c.Abort()
}

// isVouched reports whether the credential authenticated on this process
// within vouchTTL.
func (a *Authenticator) isVouched(hash [32]byte) bool {
	a.vouchMu.RLock()
	until, ok := a.vouched[hash]
	a.vouchMu.RUnlock()
	return ok && time.Now().Before(until)
}

// vouch records that the credential authenticated, renewing a vouch older
// than vouchRefresh. The map is bounded by CacheSize: when full, expired
// vouches go, and if none had, all of them (as the cache does).
func (a *Authenticator) vouch(hash [32]byte) {
	now := time.Now()
	a.vouchMu.RLock()
	until, ok := a.vouched[hash]
	a.vouchMu.RUnlock()
	if ok && until.Sub(now) > vouchTTL-vouchRefresh {
		return
	}
	a.vouchMu.Lock()
	defer a.vouchMu.Unlock()
	if len(a.vouched) >= max(a.cfg.CacheSize, 1) {
		for k, u := range a.vouched {
			if !now.Before(u) {
				delete(a.vouched, k)
			}
		}
		if len(a.vouched) >= max(a.cfg.CacheSize, 1) {
			a.vouched = make(map[[32]byte]time.Time)
		}
	}
	a.vouched[hash] = now.Add(vouchTTL)
}

// unvouch forgets a credential that failed.
func (a *Authenticator) unvouch(hash [32]byte) {
	a.vouchMu.Lock()
	delete(a.vouched, hash)
	a.vouchMu.Unlock()
}

// spendShared spends one token of the failure budget named bucket, shared
// by every process (FailureBurst deep, refilled at FailuresPerMinute) and,
// when none was left, refuses the bucket here until one is. Caveat: a
// process that has not yet seen a refused bucket lets one more attempt
// through before it learns of the refusal, so N processes allow at most N
// extra attempts; when the database cannot be reached, only this
// process's own count holds.
func (a *Authenticator) spendShared(ctx context.Context, bucket string) {
	perSecond := max(a.cfg.FailuresPerMinute, 1) / 60
	wait, ok, err := a.store.TakeAuthFailureToken(ctx, bucket, perSecond, max(a.cfg.FailureBurst, 1))
	if err != nil {
		if !a.sharedDown.Swap(true) {
			a.log.WarnContext(ctx, "shared authentication failure budget unavailable; this process's count holds alone until it is back", "error", err)
		}
		return
	}
	if a.sharedDown.Swap(false) {
		a.log.InfoContext(ctx, "shared authentication failure budget reachable again")
	}
	if ok {
		return
	}
	now := time.Now()
	a.blockMu.Lock()
	defer a.blockMu.Unlock()
	a.blocked[bucket] = now.Add(max(wait, 100*time.Millisecond))
	if now.Sub(a.lastPrune) > DefaultSweepEvery {
		for k, until := range a.blocked {
			if !now.Before(until) {
				delete(a.blocked, k)
			}
		}
		a.lastPrune = now
	}
}

// isBlocked reports whether the failure budget named bucket is refused,
// by this process's own count or by the shared budget's last refusal, and
// for how long.
func (a *Authenticator) isBlocked(bucket string, local LimitInfo) (time.Duration, bool) {
	if wait, blocked := a.failures.Blocked(bucket, local); blocked {
		return wait, true
	}
	a.blockMu.Lock()
	until, ok := a.blocked[bucket]
	a.blockMu.Unlock()
	if wait := time.Until(until); ok && wait > 0 {
		return wait, true
	}
	return 0, false
}

func (a *Authenticator) touch(id uuid.UUID) {
	a.touchMu.Lock()
	a.touched[id] = time.Now()
	a.touchMu.Unlock()
}

// flushTouches writes last-used times in one statement every TouchEvery,
// so heavy traffic costs one write per credential per interval.
func (a *Authenticator) flushTouches(ctx context.Context) {
	t := time.NewTicker(a.cfg.TouchEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			a.flushOnce(context.Background())
			return
		case <-t.C:
			a.flushOnce(ctx)
		}
	}
}

func (a *Authenticator) flushOnce(ctx context.Context) {
	a.touchMu.Lock()
	batch := a.touched
	a.touched = make(map[uuid.UUID]time.Time)
	a.touchMu.Unlock()
	if err := a.store.TouchCredentials(ctx, batch); err != nil {
		a.log.WarnContext(ctx, "record credential use", "error", err)
	}
}

// ClientNetwork names the network a client address stands for in failure
// budgets: an IPv4 address (an IPv4-mapped IPv6 one unmapped) itself, an
// IPv6 address its /64, since one subscriber usually holds a whole /64 and
// could otherwise spend a fresh budget per address. Caveat: clients sharing
// a /64 share a budget; a string that is not an address is kept as it is.
func ClientNetwork(addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	ip = ip.Unmap()
	if ip.Is4() {
		return ip.String()
	}
	return netip.PrefixFrom(ip.WithZone(""), 64).Masked().String()
}
