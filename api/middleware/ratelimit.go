package middleware

import (
	"context"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"golang.org/x/time/rate"
)

// RateLimiter decides whether a user may make one more request under a
// limit. SharedLimits holds for every process together; Limiters for one
// process.
type RateLimiter interface {
	Allow(ctx context.Context, userID uuid.UUID, info LimitInfo) Decision
}

// limitKey names a user's budget for a limit, figures included, so that a
// changed limit (a plan change) starts a fresh budget.
func limitKey(userID uuid.UUID, info LimitInfo) string {
	return userID.String() + "|" + info.Name + "|" + strconv.Itoa(info.Count) + "/" + info.Period.String()
}

// DefaultSweepEvery is how often idle limiters are dropped.
const DefaultSweepEvery = 10 * time.Second

// Limiters is a set of token buckets keyed by string (a user and limit, or a
// client address). Its memory stays bounded: a bucket that has refilled
// completely behaves exactly like a new one, so such buckets are dropped
// by a periodic sweep, and only keys active within one refill period are kept.
type Limiters struct {
	mu         sync.Mutex
	m          map[string]*rate.Limiter
	lastSweep  time.Time
	sweepEvery time.Duration
}

// NewLimiters returns an empty set swept every DefaultSweepEvery.
func NewLimiters() *Limiters { return NewLimitersSweeping(DefaultSweepEvery) }

// NewLimitersSweeping returns an empty set swept at the given interval.
func NewLimitersSweeping(every time.Duration) *Limiters {
	return &Limiters{m: make(map[string]*rate.Limiter), lastSweep: time.Now(), sweepEvery: every}
}

// Decision is the outcome of taking a token.
type Decision struct {
	Allowed    bool
	Limit      int
	Remaining  int
	Reset      time.Time
	RetryAfter time.Duration
}

func limitOf(info LimitInfo) rate.Limit {
	return rate.Limit(float64(info.Count) / info.Period.Seconds())
}

// bucket returns the key's limiter, creating it full. Callers hold mu.
func (l *Limiters) bucket(key string, info LimitInfo, burst int, now time.Time) *rate.Limiter {
	if now.Sub(l.lastSweep) > l.sweepEvery {
		l.sweep(now)
	}
	lim, ok := l.m[key]
	if !ok {
		lim = rate.NewLimiter(limitOf(info), burst)
		l.m[key] = lim
	}
	return lim
}

func (l *Limiters) sweep(now time.Time) {
	for k, lim := range l.m {
		if lim.TokensAt(now) >= float64(lim.Burst()) {
			delete(l.m, k)
		}
	}
	l.lastSweep = now
}

// Len reports how many buckets are held.
func (l *Limiters) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}

// Take spends one token of the key's bucket (Count per Period, burst Count).
func (l *Limiters) Take(key string, info LimitInfo) Decision {
	now := time.Now()
	l.mu.Lock()
	lim := l.bucket(key, info, info.Count, now)
	allowed := lim.AllowN(now, 1)
	tokens := lim.TokensAt(now)
	l.mu.Unlock()
	perSec := float64(limitOf(info))
	d := Decision{
		Allowed:   allowed,
		Limit:     info.Count,
		Remaining: int(math.Max(0, math.Floor(tokens))),
		Reset:     now.Add(time.Duration((float64(info.Count) - tokens) / perSec * float64(time.Second))),
	}
	if !allowed {
		d.RetryAfter = time.Duration((1 - tokens) / perSec * float64(time.Second))
	}
	return d
}

// Allow spends one token of the user's bucket for the limit, in this
// process only.
func (l *Limiters) Allow(_ context.Context, userID uuid.UUID, info LimitInfo) Decision {
	return l.Take(limitKey(userID, info), info)
}

// Blocked reports whether the key has no token left, without spending one,
// and how long until it has.
func (l *Limiters) Blocked(key string, info LimitInfo) (time.Duration, bool) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.m[key]
	if !ok {
		return 0, false
	}
	tokens := lim.TokensAt(now)
	if tokens >= 1 {
		return 0, false
	}
	return time.Duration((1 - tokens) / float64(limitOf(info)) * float64(time.Second)), true
}

// Spend takes a token if one is left (a bucket of the given burst).
func (l *Limiters) Spend(key string, info LimitInfo, burst int) {
	now := time.Now()
	l.mu.Lock()
	l.bucket(key, info, burst, now).AllowN(now, 1)
	l.mu.Unlock()
}

// Policy names the limit that applies to a request, or ok=false for none.
type Policy func(c *gin.Context) (info LimitInfo, ok bool)

// RateLimit spends one token of the authenticated user's budget for the
// policy's limit, sets the X-RateLimit headers, and answers 429 through the
// responder when the budget is spent. All of a user's credentials share it.
func RateLimit(l RateLimiter, r Responder, policy Policy) gin.HandlerFunc {
	return func(c *gin.Context) {
		p := GetPrincipal(c)
		info, ok := policy(c)
		if p == nil || !ok {
			c.Next()
			return
		}
		d := l.Allow(c.Request.Context(), p.UserID, info)
		h := c.Writer.Header()
		h.Set("X-RateLimit-Limit", strconv.Itoa(d.Limit))
		h.Set("X-RateLimit-Remaining", strconv.Itoa(d.Remaining))
		h.Set("X-RateLimit-Reset", strconv.FormatInt(int64(math.Ceil(float64(d.Reset.UnixNano())/1e9)), 10))
		if !d.Allowed {
			r.RateLimited(c, info, d.RetryAfter)
			c.Abort()
			return
		}
		c.Next()
	}
}

// RetryAfterSeconds rounds a wait up to whole seconds, at least 1.
func RetryAfterSeconds(d time.Duration) int {
	s := int(math.Ceil(d.Seconds()))
	if s < 1 {
		s = 1
	}
	return s
}
