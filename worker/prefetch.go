package worker

import (
	"context"

	"github.com/finsync/finsync/providers"
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
// is kept only if the page before it names the same Next, and only if it
// was fetched without error (otherwise it is fetched again from the real
// Next, so that a guess never reports a failure a plain walk would not).
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
		f := r.await(ctx, cur)
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

// await returns f's page. A guessed page that failed is fetched once more,
// as a plain walk would have fetched it, and that outcome is returned.
func (r *syncRun) await(ctx context.Context, f *pageFetch) fetched {
	got := <-f.done
	f.cancel()
	if got.err == nil || !f.guessed || ctx.Err() != nil {
		return got
	}
	page, err := r.p.Transactions(ctx, r.pc, f.req)
	return fetched{page, err}
}

// stop cancels f, if any, and waits for its goroutine to end.
func (f *pageFetch) stop() {
	if f == nil {
		return
	}
	f.cancel()
	<-f.done
}
