package resilience

import (
	"context"
	"sync"
	"time"
)

// RateStore keeps token buckets that every process shares (storage
// implements it over PostgreSQL, and the worker injects it through
// Config.Store). A bucket holds burst tokens, refilled at perSecond.
// Buckets are named by service (a provider or a destination's guard name)
// and bucket within it.
type RateStore interface {
	// TakeProviderToken takes one token of the named bucket of service, or
	// returns ok=false and how long until one is left.
	TakeProviderToken(ctx context.Context, service, bucket string, perSecond float64, burst int) (wait time.Duration, ok bool, err error)
}

// QuotaStore keeps the quotas a provider grants per resource of its own
// (for example successful calls per account and endpoint per day), shared
// by every worker and kept across restarts (storage implements it over
// PostgreSQL; MemoryQuotas keeps them in one process).
type QuotaStore interface {
	// GetProviderQuota returns the calls left and when the count resets;
	// known is false when nothing was recorded.
	GetProviderQuota(ctx context.Context, provider, resource, endpoint string) (remaining int, reset time.Time, known bool, err error)
	// NoteProviderQuota records a quota the provider reported; within one
	// quota window the lower count wins.
	NoteProviderQuota(ctx context.Context, provider, resource, endpoint string, remaining int, reset time.Time) error
	// SpendProviderQuota spends one call of a quota the caller counts
	// itself (the provider reports none): limit calls per window ending at
	// reset. It reports ok=false, spending nothing, when the window current
	// at now (the caller's clock) has none left; a window whose reset is not
	// after now is over, and a new one starts with limit calls. Checking and
	// spending are one atomic step for every process sharing the store.
	// Caveat: a call spent and then failed is not given back, so the count
	// errs on the side of calls never made.
	SpendProviderQuota(ctx context.Context, provider, resource, endpoint string, limit int, reset, now time.Time) (ok bool, err error)
}

// MemoryQuotas is a QuotaStore in one process's memory: for unit tests and
// adapters built without a shared store. Its quotas are lost on restart
// and not seen by other processes. Entries past their reset are dropped as
// new ones are noted, so memory follows the resources in use.
type MemoryQuotas struct {
	mu sync.Mutex
	m  map[[3]string]memoryQuota
}

// memoryQuotaSweepAt is the size at which noting a quota first drops the
// entries past their reset.
const memoryQuotaSweepAt = 1024

type memoryQuota struct {
	remaining int
	reset     time.Time
}

// NewMemoryQuotas returns an empty in-memory quota store.
func NewMemoryQuotas() *MemoryQuotas { return &MemoryQuotas{m: map[[3]string]memoryQuota{}} }

// GetProviderQuota returns the quota last noted.
func (q *MemoryQuotas) GetProviderQuota(_ context.Context, provider, resource, endpoint string) (int, time.Time, bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	v, ok := q.m[[3]string{provider, resource, endpoint}]
	return v.remaining, v.reset, ok, nil
}

// NoteProviderQuota records a quota; within one window the lower count wins.
func (q *MemoryQuotas) NoteProviderQuota(_ context.Context, provider, resource, endpoint string, remaining int, reset time.Time) error {
	now := time.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	k := [3]string{provider, resource, endpoint}
	if old, ok := q.m[k]; ok && old.reset.After(now) && !reset.After(old.reset.Add(time.Minute)) {
		remaining = min(remaining, old.remaining)
		reset = maxTime(reset, old.reset)
	}
	if len(q.m) >= memoryQuotaSweepAt {
		for key, v := range q.m {
			if v.reset.Before(now) {
				delete(q.m, key)
			}
		}
	}
	q.m[k] = memoryQuota{remaining: remaining, reset: reset}
	return nil
}

// SpendProviderQuota spends one call of a counted quota (see QuotaStore).
func (q *MemoryQuotas) SpendProviderQuota(_ context.Context, provider, resource, endpoint string, limit int, reset, now time.Time) (bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	k := [3]string{provider, resource, endpoint}
	v, ok := q.m[k]
	if !ok || !v.reset.After(now) {
		v = memoryQuota{remaining: limit, reset: reset}
	}
	if v.remaining <= 0 {
		return false, nil
	}
	v.remaining--
	q.m[k] = v
	return true, nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
