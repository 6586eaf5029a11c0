package ops

import (
	"context"
	"sync"
	"time"

	"github.com/finsync/finsync/api/middleware"
	"github.com/finsync/finsync/storage"
)

// Throttle bounds failed operator-token checks (a wrong token at sign-in
// or as a bearer token): per client address, and for all addresses
// together so that a guesser spread over many addresses is slowed too.
// Both budgets are token buckets in PostgreSQL, shared by every serve
// process.
type Throttle struct {
	// PerAddressBurst failures from one client address are allowed at
	// once; PerAddressPerMinute come back each minute.
	PerAddressBurst     int
	PerAddressPerMinute float64
	// GlobalBurst failures from all addresses together are allowed at
	// once; GlobalPerMinute come back each minute.
	GlobalBurst     int
	GlobalPerMinute float64
}

// DefaultThrottle returns the production budgets: 10 failures per address
// then one every 30 s; 100 failures in all then one a second.
func DefaultThrottle() Throttle {
	return Throttle{PerAddressBurst: 10, PerAddressPerMinute: 2, GlobalBurst: 100, GlobalPerMinute: 60}
}

// globalBucket names the budget of every address together.
const globalBucket = "global"

// verdict is the outcome of a guarded token check.
type verdict int

const (
	// accepted: the token matched.
	accepted verdict = iota
	// refused: the token did not match (401).
	refused
	// limited: the check was not made, or its failure exhausted a budget
	// (429 with Retry-After).
	limited
)

// guard runs operator-token checks under the failure budgets. Its memory
// of refusals only spares database reads; the budgets themselves live in
// PostgreSQL.
type guard struct {
	store *storage.Store
	cfg   Throttle
	// blocked remembers, per address, until when a budget refused it.
	mu        sync.Mutex
	blocked   map[string]time.Time
	lastPrune time.Time
}

// maxBlocked caps the addresses remembered; past it the memory is
// dropped (which costs reads, never a refusal).
const maxBlocked = 10_000

func newGuard(store *storage.Store, cfg Throttle) *guard {
	return &guard{store: store, cfg: cfg, blocked: make(map[string]time.Time)}
}

func (g *guard) budgets(client string) (address, global storage.FailureBudget) {
	return storage.FailureBudget{Bucket: "address:" + client, Burst: max(g.cfg.PerAddressBurst, 1), PerSecond: g.cfg.PerAddressPerMinute / 60},
		storage.FailureBudget{Bucket: globalBucket, Burst: max(g.cfg.GlobalBurst, 1), PerSecond: g.cfg.GlobalPerMinute / 60}
}

// fullAfter is how long an untouched budget takes to refill whole, after
// which its row may be purged.
func (g *guard) fullAfter() time.Duration {
	a, gl := g.budgets("")
	return max(refill(a), refill(gl))
}

func refill(b storage.FailureBudget) time.Duration {
	if b.PerSecond <= 0 {
		return 24 * time.Hour
	}
	return time.Duration(float64(b.Burst) / b.PerSecond * float64(time.Second))
}

// check runs matches for a request from addr (an IPv6 address counts for
// its /64, middleware.ClientNetwork) unless a budget is spent: a refused address, or a
// spent global budget, gets limited without the token being compared, so
// a guesser learns nothing while throttled. A failure spends one token of
// both budgets. Caveat: concurrent failures that all passed the read
// before any spent may each be answered 401, the last ones 429 — the
// budgets still count every one.
func (g *guard) check(ctx context.Context, addr string, matches func() bool) (verdict, time.Duration, error) {
	addr = middleware.ClientNetwork(addr)
	if wait := g.remembered(addr); wait > 0 {
		return limited, wait, nil
	}
	address, global := g.budgets(addr)
	wait, err := g.store.GetOpsFailureWait(ctx, address, global)
	if err != nil {
		return refused, 0, err
	}
	if wait > 0 {
		g.remember(addr, wait)
		return limited, wait, nil
	}
	if matches() {
		return accepted, 0, nil
	}
	wait, ok, err := g.store.SpendOpsFailure(ctx, address, global)
	if err != nil {
		return refused, 0, err
	}
	if !ok {
		g.remember(addr, wait)
		return limited, wait, nil
	}
	return refused, 0, nil
}

// remembered is how long this process still knows addr to be refused.
func (g *guard) remembered(addr string) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return max(time.Until(g.blocked[addr]), 0)
}

// remember notes that addr is refused for wait. When the global budget is
// the one spent, each other address reads it once and is remembered then.
func (g *guard) remember(addr string, wait time.Duration) {
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if now.Sub(g.lastPrune) > time.Minute || len(g.blocked) >= maxBlocked {
		for k, until := range g.blocked {
			if !now.Before(until) {
				delete(g.blocked, k)
			}
		}
		if len(g.blocked) >= maxBlocked {
			g.blocked = make(map[string]time.Time)
		}
		g.lastPrune = now
	}
	g.blocked[addr] = now.Add(wait)
}
