package storage

import (
	"cmp"
	"context"
	"time"

	"github.com/finsync/finsync/domain"
)

// Close ends the session's run, whether it ended, ended its slice or failed
// after storing some batches: it waits for a refresh of the planner's
// statistics still running, refreshes them fully when the run stored
// enough rows since the last one (at least analyzeFirst), and re-derives
// the daily balances the run may have moved (deriveRunBalances). It
// returns the first failure, a refresh's included. When ctx has ended it
// only waits. A run that stored nothing pays about one query per account.
// Caveat: call it once, after the last ApplyBatch.
func (ss *SyncSession) Close(ctx context.Context) error {
	ss.stopMatching()
	ss.waitNoted()
	statsErr := cmp.Or(ss.statsErr, ss.stats.wait())
	if ctx.Err() != nil {
		return statsErr
	}
	if statsErr == nil {
		statsErr = ss.stats.final(ctx)
	}
	return cmp.Or(ss.deriveRunBalances(ctx), statsErr)
}

// unchangedSince is the Since of an account whose posted transactions a
// run did not touch: later than any anchor.
func unchangedSince() domain.Date {
	return domain.Date{Time: time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)}
}

// deriveRunBalances re-derives the daily balances before each account's
// first recorded day where this run may have changed them: every account
// on a first sync, else the accounts whose stored posted transactions
// reach back to their first recorded day, and those whose first balance
// was recorded today (deriveBalances). It runs once at the end of a run
// (or of a slice), so a first sync of millions of rows pays for it once.
func (ss *SyncSession) deriveRunBalances(ctx context.Context) error {
	if len(ss.accounts) == 0 {
		return nil
	}
	changes := make([]BalanceChange, 0, len(ss.accounts))
	for _, id := range ss.accounts {
		c := BalanceChange{AccountID: id, Since: unchangedSince()}
		if ss.firstSync {
			c.Since = domain.Date{}
		} else if d, ok := ss.balanceSince[id]; ok {
			c.Since = d
		}
		changes = append(changes, c)
	}
	_, err := deriveBalances(ctx, ss.store.pool, ss.conn.UserID, changes, ss.today)
	return err
}

// When a sync refreshes the planner's statistics: once the rows stored
// since the last refresh reach half of all it has stored (at least
// analyzeFirst, at most analyzeEvery), and at its end when at least
// analyzeFirst are new. Refreshes come early while a user's rows double
// quickly, then every analyzeEvery rows.
const (
	analyzeFirst = 5_000
	analyzeEvery = 100_000
)

// statsRefresh keeps the planner's statistics of transactions fresh while
// a sync writes: a user's row count can grow from nothing to millions
// within one sync, far faster than autovacuum notices, and a plan made for
// a few rows reads them all to list 50. Refreshes between batches run in
// the background, one at a time (a due one is put off while the previous
// one runs), and sample a tenth as many rows (QuickAnalyzeTransactions:
// what a plan needs is the user's growing row count); the one after the
// sync's last page, or at Close, is a full refresh and is waited for, so
// that the sync ends with statistics that count all its rows. Caveat: not
// safe for concurrent use; the session owns it.
type statsRefresh struct {
	store *Store
	// stored counts the rows the run stored (starting at analyzeEvery when
	// the connection had rows before: the statistics already count them),
	// unanalyzed those stored since the last refresh.
	stored, unanalyzed int
	done               chan error // set while a background refresh runs
}

// newStatsRefresh returns the refresher of a run; hadRows is set when the
// connection had transactions before it.
func newStatsRefresh(s *Store, hadRows bool) statsRefresh {
	r := statsRefresh{store: s}
	if hadRows {
		r.stored = analyzeEvery
	}
	return r
}

// afterBatch counts the rows a committed batch wrote (added or changed; a
// batch of unchanged rows writes nothing) and refreshes as they call for
// it: after the sync's last page, fully and waited for; else in the
// background when due.
func (r *statsRefresh) afterBatch(ctx context.Context, written int64, last bool) error {
	r.unanalyzed += int(written)
	r.stored += int(written)
	if last {
		if err := r.wait(); err != nil {
			return err
		}
		return r.final(ctx)
	}
	if r.unanalyzed < max(analyzeFirst, min(r.stored/2, analyzeEvery)) {
		return nil
	}
	began, err := r.start(ctx, r.store.QuickAnalyzeTransactions)
	if began {
		r.unanalyzed = 0
	}
	return err
}

// final refreshes fully when at least analyzeFirst rows were stored since
// the last refresh. Caveat: call wait first.
func (r *statsRefresh) final(ctx context.Context) error {
	if r.unanalyzed < analyzeFirst {
		return nil
	}
	r.unanalyzed = 0
	return r.store.AnalyzeTransactions(ctx)
}

// start begins a background refresh unless one is still running, and
// reports whether it began. A finished refresh's error is returned (and
// none begins). ctx must outlive the refresh: wait before it ends.
func (r *statsRefresh) start(ctx context.Context, analyze func(context.Context) error) (bool, error) {
	if r.done != nil {
		select {
		case err := <-r.done:
			r.done = nil
			if err != nil {
				return false, err
			}
		default:
			return false, nil
		}
	}
	done := make(chan error, 1)
	r.done = done
	go func() { done <- analyze(ctx) }()
	return true, nil
}

// wait waits for the running background refresh, if any, and returns its
// error.
func (r *statsRefresh) wait() error {
	if r.done == nil {
		return nil
	}
	err := <-r.done
	r.done = nil
	return err
}
