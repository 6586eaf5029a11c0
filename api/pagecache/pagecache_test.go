package pagecache_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/finsync/finsync/api/pagecache"
)

func TestCacheKeepsPagesWithinItsBudget(t *testing.T) {
	c := pagecache.New(10_000)
	body := bytes.Repeat([]byte("x"), 1_000)
	for i := range 30 {
		c.Put(fmt.Sprintf("k%02d", i), pagecache.Page{Version: int64(i), Body: body})
		if c.Bytes() > 10_000 {
			t.Fatalf("after %d pages the cache holds %d bytes, over its budget", i+1, c.Bytes())
		}
	}
	if c.Len() != 9 { // 9 × 1,003 bytes fit in 10,000
		t.Fatalf("cache holds %d pages, want the 9 most recent", c.Len())
	}
	if _, ok, _ := c.Get("k00", time.Now()); ok {
		t.Fatal("the oldest page is still kept")
	}
	p, ok, _ := c.Get("k29", time.Now())
	if !ok || p.Version != 29 {
		t.Fatalf("newest page: %+v, %v", p, ok)
	}
}

func TestCacheReplacesAPageAndCountsItOnce(t *testing.T) {
	c := pagecache.New(10_000)
	c.Put("k", pagecache.Page{Version: 1, Body: make([]byte, 500)})
	c.Put("k", pagecache.Page{Version: 2, Body: make([]byte, 700)})
	if c.Len() != 1 || c.Bytes() != 701 {
		t.Fatalf("after a replacement: %d pages, %d bytes; want 1 page of 701 bytes", c.Len(), c.Bytes())
	}
	if p, _, _ := c.Get("k", time.Now()); p.Version != 2 {
		t.Fatalf("got version %d, want the replacement's 2", p.Version)
	}
	// A page over an eighth of the budget is not kept, and drops the key's older page.
	c.Put("k", pagecache.Page{Version: 3, Body: make([]byte, 2_000)})
	if _, ok, _ := c.Get("k", time.Now()); ok || c.Bytes() != 0 {
		t.Fatalf("an oversized page was kept or left its older page behind (%d bytes held)", c.Bytes())
	}
}

func TestNilCacheHoldsNothing(t *testing.T) {
	c := pagecache.New(0)
	c.Put("k", pagecache.Page{Body: []byte("x")})
	if _, ok, _ := c.Get("k", time.Now()); ok || c.Len() != 0 {
		t.Fatal("a cache without a budget kept a page")
	}
}

func TestStaleMarkHoldsTheKeyOffForHoldOff(t *testing.T) {
	c := pagecache.New(10_000)
	at := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	c.Put("k", pagecache.Page{Version: 1, Body: []byte("page")})
	c.MarkStale("k", at)
	for _, d := range []time.Duration{0, pagecache.HoldOff - time.Nanosecond} {
		if p, ok, held := c.Get("k", at.Add(d)); ok || !held || p.Body != nil {
			t.Fatalf("%v after the mark: page %q, ok %v, held %v; want held, no page", d, p.Body, ok, held)
		}
	}
	if _, ok, held := c.Get("k", at.Add(pagecache.HoldOff)); ok || held {
		t.Fatalf("HoldOff after the mark: ok %v, held %v; want a plain miss", ok, held)
	}
	if c.Bytes() != 1 { // the mark costs its key
		t.Fatalf("the mark takes %d bytes, want its key's 1", c.Bytes())
	}
	c.Put("k", pagecache.Page{Version: 2, Body: []byte("next")})
	if p, ok, held := c.Get("k", at); !ok || held || p.Version != 2 {
		t.Fatalf("a page kept over the mark: %+v, ok %v, held %v", p, ok, held)
	}
}
