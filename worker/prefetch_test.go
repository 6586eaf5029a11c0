package worker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/resilience"
)

// guessingPager serves pages "p0" to "p<n-1>" of one row each, and
// guesses each page's Next: wrongly (a page further on) for the pages in
// wrong. The first fetch of each page in refuseOnce is refused as the
// guard refuses a call beside another (an open breaker), and of each page
// in failOnce fails as a provider's outage does. It records the largest
// number of fetches in flight at once.
type guessingPager struct {
	providers.Provider
	n          int
	wrong      map[int]bool
	refuseOnce map[int]bool
	failOnce   map[int]bool

	mu       sync.Mutex
	calls    int
	inFlight int
	maxIn    int
}

func (g *guessingPager) GuessNext(cursor string) (string, bool) {
	i, err := strconv.Atoi(strings.TrimPrefix(cursor, "p"))
	if cursor == "" || err != nil || i+1 >= g.n {
		return "", false
	}
	if g.wrong[i] {
		return fmt.Sprintf("p%d", min(i+2, g.n-1)), true
	}
	return fmt.Sprintf("p%d", i+1), true
}

func (g *guessingPager) Transactions(ctx context.Context, _ providers.Connection, req providers.TransactionRequest) (providers.TransactionPage, error) {
	i := 0
	if req.Cursor != "" {
		var err error
		if i, err = strconv.Atoi(strings.TrimPrefix(req.Cursor, "p")); err != nil {
			return providers.TransactionPage{}, err
		}
	}
	g.mu.Lock()
	g.calls++
	g.inFlight++
	g.maxIn = max(g.maxIn, g.inFlight)
	fail, refuse := g.failOnce[i], g.refuseOnce[i]
	delete(g.failOnce, i)
	delete(g.refuseOnce, i)
	g.mu.Unlock()
	defer func() { g.mu.Lock(); g.inFlight--; g.mu.Unlock() }()
	select {
	case <-time.After(2 * time.Millisecond):
	case <-ctx.Done():
		return providers.TransactionPage{}, ctx.Err()
	}
	if refuse {
		return providers.TransactionPage{}, &resilience.Error{Class: resilience.Unavailable, Code: resilience.CodeCircuitOpen}
	}
	if fail || i >= g.n {
		return providers.TransactionPage{}, fmt.Errorf("page %d: unavailable", i)
	}
	return providers.TransactionPage{
		Upserts: []providers.Transaction{{ProviderID: fmt.Sprintf("t%d", i)}},
		Next:    fmt.Sprintf("p%d", i+1), Done: i == g.n-1,
	}, nil
}

// TestPrefetchUsesOnlyGuessesThatHold walks pages with right and wrong
// guesses and a guessed page the guard refuses once: the walk gets every
// page once, in order, with no error, and had two fetches in flight.
func TestPrefetchUsesOnlyGuessesThatHold(t *testing.T) {
	g := &guessingPager{n: 12, wrong: map[int]bool{3: true, 8: true}, refuseOnce: map[int]bool{6: true}}
	r := &syncRun{p: g, today: domain.DateOf(time.Now())}
	pages := make(chan fetched, prefetchPages)
	go r.prefetch(t.Context(), providers.TransactionRequest{}, pages)
	var got []string
	for f := range pages {
		if f.err != nil {
			t.Fatalf("after %v: %v", got, f.err)
		}
		got = append(got, f.page.Upserts[0].ProviderID)
	}
	want := make([]string, g.n)
	for i := range want {
		want[i] = fmt.Sprintf("t%d", i)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("pages %v, want %v", got, want)
	}
	// 12 pages, 2 wrong guesses fetched for nothing, 1 refused guessed
	// fetch done again.
	if g.calls != g.n+2+1 {
		t.Errorf("%d fetches, want %d", g.calls, g.n+3)
	}
	if g.maxIn < 2 {
		t.Errorf("at most %d fetch in flight, want 2", g.maxIn)
	}
}

// TestPrefetchReportsFailures checks that a provider's failure ends the
// walk, as a plain walk's would, whether the page was asked for by the
// walk (the first) or by a guess (the third).
func TestPrefetchReportsFailures(t *testing.T) {
	for _, failing := range []int{0, 2} {
		g := &guessingPager{n: 5, failOnce: map[int]bool{failing: true}}
		r := &syncRun{p: g, today: domain.DateOf(time.Now())}
		pages := make(chan fetched, prefetchPages)
		go r.prefetch(t.Context(), providers.TransactionRequest{}, pages)
		var got int
		var err error
		for f := range pages {
			if f.err != nil {
				err = f.err
				continue
			}
			got++
		}
		if got != failing || err == nil || errors.Is(err, context.Canceled) {
			t.Errorf("page %d failing: %d pages then %v; want %d pages then its failure", failing, got, err, failing)
		}
		g.mu.Lock()
		if g.failOnce[failing] {
			t.Errorf("page %d failing: never fetched", failing)
		}
		g.mu.Unlock()
	}
}
