// Package servicekeys makes and rotates the keys every process of a fleet
// shares (FINSYNC_ENCRYPTION_KEY, FINSYNC_CURSOR_KEY, FINSYNC_OPS_TOKEN):
// NewKey draws one that every one of those variables accepts, and Rotation
// re-seals every stored secret with the newest encryption key, safely
// beside running processes. It never prints or logs a key's value.
package servicekeys

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/google/uuid"

	"github.com/finsync/finsync/api/ops"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/storage"
)

// NewKey returns a new random 32-byte key as 64 hex characters that also
// passes ops.ValidateToken, drawing again in the rare case (about one in
// ten million) that random bytes fail its randomness checks.
func NewKey() (string, error) {
	for {
		key, err := secrets.Generate()
		if err != nil {
			return "", fmt.Errorf("make key: %w", err)
		}
		if ops.ValidateToken(key) == nil {
			return key, nil
		}
	}
}

// casAttempts bounds how often one row is re-read and re-sealed when a
// concurrent writer keeps changing it during a rotation.
const casAttempts = 3

// Rotation re-seals every stored secret with Box's newest key, Batch rows
// a statement, writing its progress lines to Progress.
type Rotation struct {
	Store    *storage.Store
	Box      *secrets.Box
	Batch    int
	Progress io.Writer
}

// Result is what a rotation did.
type Result struct {
	KeyID   string          `json:"keyId"`
	Columns []*ColumnResult `json:"columns"`
}

// ColumnResult is what a rotation did to one sealed column.
type ColumnResult struct {
	Column   storage.SealedColumn `json:"column"`
	Read     int                  `json:"read"`
	Resealed int                  `json:"resealed"`
	// Current counts values already sealed with the newest key.
	Current int `json:"alreadyCurrent"`
	// Unreadable are rows whose value opens with none of the keys.
	Unreadable []uuid.UUID `json:"unreadable"`
	// Busy are rows that changed under every attempt to write them.
	Busy []uuid.UUID `json:"changedMeanwhile"`
	// firstUnreadable is why the first unreadable value did not open.
	firstUnreadable error
}

// String is the human summary.
func (r Result) String() string {
	s := "re-sealed with key " + r.KeyID + ":"
	for _, c := range r.Columns {
		s += fmt.Sprintf("\n  %s: %d read, %d re-sealed, %d already current, %d unreadable, %d changed meanwhile",
			c.Column, c.Read, c.Resealed, c.Current, len(c.Unreadable), len(c.Busy))
	}
	return s
}

// Run walks every sealed column; it stops at the first database error
// (the work done so far is kept: a new run resumes it) and reports rows it
// could not re-seal as an error after walking everything.
func (r *Rotation) Run(ctx context.Context) (Result, error) {
	res := Result{KeyID: r.Box.KeyIDs()[0]}
	for _, col := range storage.SealedColumns() {
		c := &ColumnResult{Column: col, Unreadable: []uuid.UUID{}, Busy: []uuid.UUID{}}
		res.Columns = append(res.Columns, c)
		if err := r.column(ctx, c); err != nil {
			return res, fmt.Errorf("rotate %s (run the command again to resume): %w", col, err)
		}
	}
	var errs []error
	for _, c := range res.Columns {
		if len(c.Unreadable) > 0 {
			errs = append(errs, fmt.Errorf("%d %s open with none of the configured keys (add the key that sealed them to FINSYNC_ENCRYPTION_KEY): rows %s; the first: %w",
				len(c.Unreadable), c.Column, idList(c.Unreadable), c.firstUnreadable))
		}
		if len(c.Busy) > 0 {
			errs = append(errs, fmt.Errorf("%d %s changed during every attempt; run the command again: rows %s", len(c.Busy), c.Column, idList(c.Busy)))
		}
	}
	return res, errors.Join(errs...)
}

// column walks one sealed column in keyset batches.
func (r *Rotation) column(ctx context.Context, c *ColumnResult) error {
	after := uuid.Nil
	for {
		vals, err := r.Store.ListSealedValuesAfter(ctx, c.Column, after, r.Batch)
		if err != nil {
			return err
		}
		if len(vals) == 0 {
			return nil
		}
		c.Read += len(vals)
		if err := r.reseal(ctx, c, vals); err != nil {
			return err
		}
		after = vals[len(vals)-1].ID
		fmt.Fprintf(r.Progress, "%s: %d read, %d re-sealed, %d already current, %d unreadable (up to %s)\n",
			c.Column, c.Read, c.Resealed, c.Current, len(c.Unreadable), after)
	}
}

// reseal re-seals one batch with compare-and-set; rows changed meanwhile
// are read again and retried, up to casAttempts times.
func (r *Rotation) reseal(ctx context.Context, c *ColumnResult, vals []storage.SealedValue) error {
	for attempt := 1; len(vals) > 0; attempt++ {
		var reps []storage.SealedReplacement
		for _, v := range vals {
			out, changed, err := r.Box.Reseal(v.Sealed)
			switch {
			case err != nil:
				if len(c.Unreadable) == 0 {
					c.firstUnreadable = err
				}
				c.Unreadable = append(c.Unreadable, v.ID)
			case !changed:
				c.Current++
			default:
				reps = append(reps, storage.SealedReplacement{ID: v.ID, Old: v.Sealed, New: out})
			}
		}
		written, err := r.Store.ReplaceSealedValues(ctx, c.Column, reps)
		if err != nil {
			return err
		}
		c.Resealed += len(written)
		missed := notWritten(reps, written)
		if len(missed) == 0 {
			return nil
		}
		if attempt == casAttempts {
			c.Busy = append(c.Busy, missed...)
			return nil
		}
		if vals, err = r.Store.ListSealedValuesByID(ctx, c.Column, missed); err != nil {
			return err
		}
	}
	return nil
}

// maxListedIDs caps the row ids an error message lists.
const maxListedIDs = 10

// idList lists ids for a message, the first maxListedIDs of them.
func idList(ids []uuid.UUID) string {
	var b strings.Builder
	for i, id := range ids {
		if i == maxListedIDs {
			fmt.Fprintf(&b, " and %d more (--json lists all)", len(ids)-maxListedIDs)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(id.String())
	}
	return b.String()
}

// notWritten returns the ids of reps absent from written.
func notWritten(reps []storage.SealedReplacement, written []uuid.UUID) []uuid.UUID {
	done := make(map[uuid.UUID]bool, len(written))
	for _, id := range written {
		done[id] = true
	}
	var missed []uuid.UUID
	for _, r := range reps {
		if !done[r.ID] {
			missed = append(missed, r.ID)
		}
	}
	return missed
}
