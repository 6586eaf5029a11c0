package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/servicekeys"
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
			key, err := servicekeys.NewKey()
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
			box, err := a.cfg.Box()
			if err != nil {
				return err
			}
			return a.withStore(cmd.Context(), func(st *storage.Store) error {
				r := servicekeys.Rotation{Store: st, Box: box, Batch: batch, Progress: a.errOut}
				res, runErr := r.Run(cmd.Context())
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
