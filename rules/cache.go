package rules

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	lru "github.com/hashicorp/golang-lru/v2"
)

// Cache holds compiled stored rules, each compiled once per version: a
// rule is looked up by its id and version (its updated-at time, which
// every change of a stored rule moves), so a changed rule is compiled
// again and the old version ages out. It keeps at most the number of rules
// given to NewCache and rules whose regular expressions total at most its
// instruction budget (Rule.Insts; a compiled instruction costs about 48
// bytes, so the default 2,000,000 is about 100 MB), evicting the least
// recently used. A Cache is safe for
// concurrent use; a nil *Cache compiles every time. Caveat: the meta
// (creation time, allowed accounts) is taken from the first compilation of
// a version; it must not change without the version changing.
type Cache struct {
	compiled *lru.Cache[cacheKey, *Rule]
	compiles atomic.Int64
	insts    atomic.Int64 // the held rules' Insts together
	budget   int64
}

// cacheKey identifies one version of a stored rule.
type cacheKey struct {
	id      uuid.UUID
	version int64 // UnixNano of the version time
}

// DefaultCacheSize is a Cache's size for a process serving many users:
// twice the rules one user may have, so that a user's whole set stays
// compiled while other users' sets come and go.
const DefaultCacheSize = 2 * MaxRulesPerUser

// DefaultCacheInsts is a Cache's default budget of instructions: 40
// users at the per-user limit (MaxUserInsts), about 100 MB of programs.
const DefaultCacheInsts = 2_000_000

// NewCache returns an empty cache of at most size rules (at least one)
// within DefaultCacheInsts instructions.
func NewCache(size int) *Cache {
	return NewCacheBudget(size, DefaultCacheInsts)
}

// NewCacheBudget returns an empty cache of at most size rules (at least
// one) whose regular expressions total at most insts instructions. Caveat:
// the rule just compiled is kept even alone over the budget (it is at most
// one rule's size, MaxRuleInsts for a client's rule).
func NewCacheBudget(size, insts int) *Cache {
	c := &Cache{budget: int64(insts)}
	held, err := lru.NewWithEvict[cacheKey, *Rule](max(size, 1), func(_ cacheKey, r *Rule) {
		c.insts.Add(-int64(r.Insts()))
	})
	if err != nil { // only for a size below one
		panic(err)
	}
	c.compiled = held
	return c
}

// Compile returns the compiled version of the stored rule raw (its JSON
// document) with identity meta, compiling it only when this version is not
// held. Errors are those of [CompileJSONContext]; a failure is not cached.
func (c *Cache) Compile(ctx context.Context, raw []byte, meta Meta, version time.Time) (*Rule, error) {
	if c == nil {
		return CompileJSONContext(ctx, raw, meta)
	}
	key := cacheKey{id: meta.ID, version: version.UnixNano()}
	if r, ok := c.compiled.Get(key); ok {
		return r, nil
	}
	r, err := CompileJSONContext(ctx, raw, meta)
	if err != nil {
		return nil, err
	}
	c.compiles.Add(1)
	weight := int64(r.Insts())
	c.insts.Add(weight)
	if held, found, _ := c.compiled.PeekOrAdd(key, r); found { // compiled meanwhile by another caller
		c.insts.Add(-weight)
		return held, nil
	}
	for c.insts.Load() > c.budget && c.compiled.Len() > 1 {
		c.compiled.RemoveOldest()
	}
	return r, nil
}

// Insts returns the instructions of the held rules together (at most the
// budget, or one rule's when it alone exceeds it).
func (c *Cache) Insts() int64 {
	if c == nil {
		return 0
	}
	return c.insts.Load()
}

// Compilations returns how many rules the cache has compiled since it was
// made (what a hit saves), for tests and metrics.
func (c *Cache) Compilations() int64 {
	if c == nil {
		return 0
	}
	return c.compiles.Load()
}

// Len returns how many compiled rules the cache holds.
func (c *Cache) Len() int {
	if c == nil {
		return 0
	}
	return c.compiled.Len()
}
