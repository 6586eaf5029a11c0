// Package pagecache keeps encoded listing pages in memory, each with the
// listing version of its user it was read at (storage.GetListingVersion),
// so that a page asked for again is answered from memory after one short
// query shows that nothing it lists has changed (docs/read-cache.md).
package pagecache

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Page is one encoded page and the version of its user's listed data it
// was read at. Body is shared by every reader and must not be modified.
type Page struct {
	Version int64
	Body    []byte
	// staleAt, when set, makes this entry a mark left by MarkStale rather
	// than a page: it has no body and is never served.
	staleAt time.Time
}

// HoldOff is how long after a key's page was found stale (MarkStale) its
// requests neither check a version nor keep a page. A page found stale
// means the user's data is changing, as it does with every batch of a
// running sync; checking again at once would most likely find the next
// page stale too, a query for nothing on each request.
const HoldOff = time.Second

// Cache holds pages by key within a budget of bytes, evicting the least
// recently used. It is safe for concurrent use; a nil *Cache holds
// nothing.
//
// Guarantee: it returns only what was put under the key, never a page of
// another key. Caveat: it knows nothing of versions; whether a page is
// still current is the caller's check.
type Cache struct {
	mu     sync.Mutex
	pages  *simplelru.LRU[string, Page]
	bytes  int64
	budget int64
	// counts holds the look-ups' outcomes as their callers judged them,
	// by Outcome.
	counts [outcomes]atomic.Int64
}

// Outcome is what became of a request that could have been answered from
// the cache, as its caller judged it.
type Outcome int

// The outcomes.
const (
	// Hit: the kept page was current and was served.
	Hit Outcome = iota
	// Stale: a page was kept but not served: it was read at an older
	// version, or the version could not be read (the request cancelled,
	// the database unreachable).
	Stale
	// Miss: no page was kept under the key.
	Miss
	// Bypass: the key's page was found stale less than HoldOff before;
	// the request neither checked a version nor kept its page.
	Bypass
	outcomes
)

// String is the outcome's metric label.
func (o Outcome) String() string {
	return [...]string{"hit", "stale", "miss", "bypass"}[o]
}

// Outcomes lists every Outcome.
func Outcomes() []Outcome { return []Outcome{Hit, Stale, Miss, Bypass} }

// Count records an outcome; a nil *Cache records nothing.
func (c *Cache) Count(o Outcome) {
	if c != nil {
		c.counts[o].Add(1)
	}
}

// Counted returns how many times o was recorded.
func (c *Cache) Counted(o Outcome) int64 {
	if c == nil {
		return 0
	}
	return c.counts[o].Load()
}

// MaxPageShare is the largest part of the budget one page may take: a
// larger page is not kept, so that one large page cannot evict many.
const MaxPageShare = 8

// New returns an empty cache of at most budget bytes of page bodies and
// keys; nil when budget is not positive (no cache).
func New(budget int64) *Cache {
	if budget <= 0 {
		return nil
	}
	c := &Cache{budget: budget}
	// The count bound is never the one reached: the byte budget is.
	pages, err := simplelru.NewLRU[string, Page](1<<30, func(key string, p Page) {
		c.bytes -= size(key, p)
	})
	if err != nil { // only for a size below one
		panic(err)
	}
	c.pages = pages
	return c
}

// size is what a page costs the budget: its key and its body's whole
// buffer, which may be larger than the body.
func size(key string, p Page) int64 { return int64(len(key) + cap(p.Body)) }

// Get returns the page kept under key, if any (ok). held reports that
// key's page was found stale (MarkStale) less than HoldOff before now: the
// caller should neither check nor keep a page for it until then. A mark
// older than that is a miss.
func (c *Cache) Get(key string, now time.Time) (page Page, ok, held bool) {
	if c == nil {
		return Page{}, false, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.pages.Get(key)
	switch {
	case !ok:
		return Page{}, false, false
	case p.staleAt.IsZero():
		return p, true, false
	default:
		return Page{}, false, now.Sub(p.staleAt) < HoldOff
	}
}

// MarkStale drops key's page, found stale at now, and leaves a mark (its
// key's bytes in the budget) that Get reports as held for HoldOff.
func (c *Cache) MarkStale(key string, now time.Time) {
	c.Put(key, Page{Version: -1, staleAt: now})
}

// Put keeps p under key, replacing what was there, and evicts the least
// recently used pages past the budget. A page over 1/MaxPageShare of the
// budget is not kept (and the key's older page is dropped).
func (c *Cache) Put(key string, p Page) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pages.Remove(key) // the key's older page, through the eviction callback
	if size(key, p) > c.budget/MaxPageShare {
		return
	}
	c.pages.Add(key, p)
	c.bytes += size(key, p)
	for c.bytes > c.budget {
		c.pages.RemoveOldest()
	}
}

// Remove drops the page kept under key, if any.
func (c *Cache) Remove(key string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pages.Remove(key)
}

// Bytes is what the kept pages and their keys take, marks left by
// MarkStale (their keys) included.
func (c *Cache) Bytes() int64 {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

// Len is the number of kept pages and marks.
func (c *Cache) Len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pages.Len()
}
