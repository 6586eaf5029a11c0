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
)

// guessingPager serves pages "p0" to "p<n-1>" of one row each, and
// guesses each page's Next: wrongly for the pages in wrong. The first
// fetch of each page in failOnce fails. It records the largest number of
// fetches in flight at once.
type guessingPager struct {
	providers.Provider
	n        int
	wrong    map[int]bool
	failOnce map[int]bool

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
		return "p999", true
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
	fail := g.failOnce[i]
	delete(g.failOnce, i)
	g.mu.Unlock()
	defer func() { g.mu.Lock(); g.inFlight--; g.mu.Unlock() }()
	select {
	case <-time.After(2 * time.Millisecond):
	case <-ctx.Done():
		return providers.TransactionPage{}, ctx.Err()
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
// guesses and a guessed page whose fetch fails once: the walk gets every
// page once, in order, with no error, and had two fetches in flight.
func TestPrefetchUsesOnlyGuessesThatHold(t *testing.T) {
	g := &guessingPager{n: 12, wrong: map[int]bool{3: true, 8: true}, failOnce: map[int]bool{6: true}}
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
	// 12 pages, 2 wrong guesses fetched for nothing, 1 failed guessed
	// fetch done again.
	if g.calls != g.n+2+1 {
		t.Errorf("%d fetches, want %d", g.calls, g.n+3)
	}
	if g.maxIn < 2 {
		t.Errorf("at most %d fetch in flight, want 2", g.maxIn)
	}
}

// TestPrefetchReportsAFailureOfThePlainWalk checks that a page the walk
// itself asked for (no guess) reports its failure.
func TestPrefetchReportsAFailureOfThePlainWalk(t *testing.T) {
	g := &guessingPager{n: 5, failOnce: map[int]bool{0: true}}
	r := &syncRun{p: g, today: domain.DateOf(time.Now())}
	pages := make(chan fetched, prefetchPages)
	go r.prefetch(t.Context(), providers.TransactionRequest{}, pages)
	f, ok := <-pages
	if !ok || f.err == nil || errors.Is(f.err, context.Canceled) {
		t.Fatalf("first page: %+v, %v; want its failure", f, ok)
	}
	if _, ok := <-pages; ok {
		t.Fatal("the walk went on after a failure")
	}
}
