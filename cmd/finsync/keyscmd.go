package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/finsync/finsync/api/ops"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/storage"
)

// serviceKeyCmds are the `keys` subcommands about the keys every process
// of a fleet shares, as opposed to users' API keys.
func (a *app) serviceKeyCmds() []*cobra.Command {
	return []*cobra.Command{a.generateKeyCmd(), a.rotateEncryptionCmd()}
}

func (a *app) generateKeyCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "generate",
		Short: "Print a new random key for FINSYNC_ENCRYPTION_KEY, FINSYNC_CURSOR_KEY or FINSYNC_OPS_TOKEN",
		Long: `Print a new random 32-byte key as 64 hex characters, and its id (the id
names the key in error messages and sealed values without revealing it).
To rotate, put the new key first in the comma-separated list; see README.
Every key printed passes serve's check of FINSYNC_OPS_TOKEN, so it also
serves as the ops console's operator token (use a key of its own there).`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			key, err := opsSuitableKey()
			if err != nil {
				return err
			}
			box, err := secrets.FromHex(key)
			if err != nil {
				return err
			}
			id := box.KeyIDs()[0]
			return a.print(map[string]any{"key": key, "keyId": id}, key+"\n(key id "+id+"; keep the key secret)")
		},
	}
}

// opsSuitableKey returns a new random key that also passes
// ops.ValidateToken, drawing again in the rare case (about one in ten
// million) that random bytes fail its randomness checks.
func opsSuitableKey() (string, error) {
	for {
		key, err := secrets.Generate()
		if err != nil {
			return "", err
		}
		if ops.ValidateToken(key) == nil {
			return key, nil
		}
	}
}

func (a *app) rotateEncryptionCmd() *cobra.Command {
	var batch int
	cmd := &cobra.Command{
		Use:   "rotate-encryption",
		Short: "Re-seal every stored provider credential and destination secret with the newest FINSYNC_ENCRYPTION_KEY",
		Long: `Re-seal every stored provider credential and destination secret with the
first (newest) key of FINSYNC_ENCRYPTION_KEY, in batches ordered by id.
Values already sealed with the newest key are skipped, so the command is
idempotent and an interrupted run is resumed by running it again. It is safe
while serve and worker run: each row is written only if it still holds the
value that was read. Afterwards only the newest key is needed. Progress goes
to standard error; the summary to standard output (--json for one object).
It exits non-zero if a value opens with none of the configured keys.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if batch < 1 {
				return errors.New("--batch-size must be at least 1")
			}
			box, err := a.box()
			if err != nil {
				return err
			}
			return a.withStore(cmd.Context(), func(st *storage.Store) error {
				r := encryptionRotation{st: st, box: box, batch: batch, progress: a.errOut}
				res, runErr := r.run(cmd.Context())
				if err := a.print(res, res.String()); err != nil {
					return err
				}
				return runErr
			})
		},
	}
	cmd.Flags().IntVar(&batch, "batch-size", 500, "rows read and written per statement")
	return cmd
}

// casAttempts bounds how often one row is re-read and re-sealed when a
// concurrent writer keeps changing it during a rotation.
const casAttempts = 3

// encryptionRotation re-seals every stored secret with the box's newest key.
type encryptionRotation struct {
	st       *storage.Store
	box      *secrets.Box
	batch    int
	progress io.Writer
}

// rotationResult is what a rotation did.
type rotationResult struct {
	KeyID   string                  `json:"keyId"`
	Columns []*rotationColumnResult `json:"columns"`
}

// rotationColumnResult is what a rotation did to one sealed column.
type rotationColumnResult struct {
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
func (r rotationResult) String() string {
	s := "re-sealed with key " + r.KeyID + ":"
	for _, c := range r.Columns {
		s += fmt.Sprintf("\n  %s: %d read, %d re-sealed, %d already current, %d unreadable, %d changed meanwhile",
			c.Column, c.Read, c.Resealed, c.Current, len(c.Unreadable), len(c.Busy))
	}
	return s
}

// run walks every sealed column; it stops at the first database error
// (the work done so far is kept: a new run resumes it) and reports rows it
// could not re-seal as an error after walking everything.
func (r *encryptionRotation) run(ctx context.Context) (rotationResult, error) {
	res := rotationResult{KeyID: r.box.KeyIDs()[0]}
	for _, col := range storage.SealedColumns() {
		c := &rotationColumnResult{Column: col, Unreadable: []uuid.UUID{}, Busy: []uuid.UUID{}}
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
func (r *encryptionRotation) column(ctx context.Context, c *rotationColumnResult) error {
	after := uuid.Nil
	for {
		vals, err := r.st.SealedValuesAfter(ctx, c.Column, after, r.batch)
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
		fmt.Fprintf(r.progress, "%s: %d read, %d re-sealed, %d already current, %d unreadable (up to %s)\n",
			c.Column, c.Read, c.Resealed, c.Current, len(c.Unreadable), after)
	}
}

// reseal re-seals one batch with compare-and-set; rows changed meanwhile
// are read again and retried, up to casAttempts times.
func (r *encryptionRotation) reseal(ctx context.Context, c *rotationColumnResult, vals []storage.SealedValue) error {
	for attempt := 1; len(vals) > 0; attempt++ {
		var reps []storage.SealedReplacement
		for _, v := range vals {
			out, changed, err := r.box.Reseal(v.Sealed)
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
		written, err := r.st.ReplaceSealedValues(ctx, c.Column, reps)
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
		if vals, err = r.st.SealedValuesByID(ctx, c.Column, missed); err != nil {
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
