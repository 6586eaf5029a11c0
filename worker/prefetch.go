package worker

import (
	"context"

	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/resilience"
)

// fetched is one page from the prefetcher, or the error that ended it.
type fetched struct {
	page providers.TransactionPage
	err  error
}

// prefetch fetches pages from req on until the last one or an error, in
// order. When the provider guesses a page's Next (providers.NextGuesser),
// the guessed page is fetched while the page before it is still being
// fetched and decoded, so that two pages are in flight; the guessed page
// is kept only if the page before it names the same Next (otherwise it is
// fetched again from the real Next). A fetch made beside another that the
// guard refused locally (an open breaker's single probe taken, the rate
// limiter's wait too long) is tried once more alone, as a plain walk
// would have sent it; any other failure is reported as it came.
func (r *syncRun) prefetch(ctx context.Context, req providers.TransactionRequest, pages chan<- fetched) {
	defer close(pages)
	guesser, _ := r.p.(providers.NextGuesser)
	cur := r.startFetch(ctx, req, false)
	for {
		var ahead *pageFetch
		if guesser != nil {
			if next, ok := guesser.GuessNext(req.Cursor); ok {
				ahead = r.startFetch(ctx, providers.TransactionRequest{Cursor: next, Today: r.today}, true)
			}
		}
		f := r.await(ctx, cur, cur.guessed || ahead != nil)
		select {
		case pages <- f:
		case <-ctx.Done():
			ahead.stop()
			return
		}
		if f.err != nil || f.page.Done {
			ahead.stop()
			return
		}
		req = providers.TransactionRequest{Cursor: f.page.Next, Today: r.today}
		if ahead != nil && ahead.req.Cursor == req.Cursor {
			cur = ahead
			continue
		}
		ahead.stop()
		cur = r.startFetch(ctx, req, false)
	}
}

// pageFetch is one page being fetched by a goroutine of its own.
type pageFetch struct {
	req     providers.TransactionRequest
	guessed bool
	done    chan fetched // buffered: the goroutine never waits to send
	cancel  context.CancelFunc
}

// startFetch starts fetching the page at req.
func (r *syncRun) startFetch(ctx context.Context, req providers.TransactionRequest, guessed bool) *pageFetch {
	ctx, cancel := context.WithCancel(ctx)
	f := &pageFetch{req: req, guessed: guessed, done: make(chan fetched, 1), cancel: cancel}
	go func() {
		page, err := r.p.Transactions(ctx, r.pc, req)
		f.done <- fetched{page, err}
	}()
	return f
}

// await returns f's page. When f ran beside another fetch (beside) and
// the guard refused it locally, it is fetched once more, alone.
func (r *syncRun) await(ctx context.Context, f *pageFetch, beside bool) fetched {
	got := <-f.done
	f.cancel()
	if got.err == nil || !beside || ctx.Err() != nil || !refusedLocally(got.err) {
		return got
	}
	page, err := r.p.Transactions(ctx, r.pc, f.req)
	return fetched{page, err}
}

// refusedLocally reports a call the guard refused without sending it
// because another call was in flight or had just been made: the
// half-open breaker's probe taken, or the rate limiter's wait too long.
func refusedLocally(err error) bool {
	e := resilience.AsError(err)
	return e != nil && (e.Code == resilience.CodeCircuitOpen || e.Code == resilience.CodeRateLimit)
}

// stop cancels f, if any, and waits for its goroutine to end.
func (f *pageFetch) stop() {
	if f == nil {
		return
	}
	f.cancel()
	<-f.done
}
