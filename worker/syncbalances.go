package worker

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
)

// unchanged returns the Since of an account whose posted transactions a
// run did not touch: later than any anchor.
func unchanged() domain.Date {
	return domain.Date{Time: time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)}
}

// noteBalanceChange records that the run stored t: a posted transaction
// moves the day from which its account's derived balances may change.
// Pending ones do not count in a booked balance.
func (r *syncRun) noteBalanceChange(t *domain.Transaction) {
	if t.Status != domain.TxPosted {
		return
	}
	day := t.PostedDate
	if day == nil {
		day = t.AuthorizedDate
	}
	if day == nil {
		return
	}
	if r.balanceSince == nil {
		r.balanceSince = map[uuid.UUID]domain.Date{}
	}
	if old, ok := r.balanceSince[t.AccountID]; !ok || day.Before(old.Time) {
		r.balanceSince[t.AccountID] = *day
	}
}

// deriveBalances re-derives the daily balances before each account's first
// recorded day where this run may have changed them: every account on a
// first sync, else the accounts whose stored posted transactions reach back
// to their first recorded day, and those whose first balance was recorded
// today (storage.DeriveBalances). It runs once at the end of a run (or of
// a slice), so a first sync of millions of rows pays for it once; a run
// that derives nothing, the usual incremental sync, pays one query of an
// index look-up or two per account.
func (r *syncRun) deriveBalances(ctx context.Context) error {
	if len(r.accounts) == 0 {
		return nil
	}
	changes := make([]storage.BalanceChange, 0, len(r.accounts))
	for _, id := range r.accounts {
		c := storage.BalanceChange{AccountID: id, Since: unchanged()}
		if r.firstSync {
			c.Since = domain.Date{}
		} else if d, ok := r.balanceSince[id]; ok {
			c.Since = d
		}
		changes = append(changes, c)
	}
	_, err := r.Store.DeriveBalances(ctx, r.conn.UserID, changes, r.today)
	return err
}
