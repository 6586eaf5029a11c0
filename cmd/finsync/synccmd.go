package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/finsync/finsync/linking"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/syncwait"
	"github.com/finsync/finsync/worker"
)

func (a *app) syncCmd() *cobra.Command {
	var connection string
	var allConns, wait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Enqueue syncs of one connection (--connection) or all (--all); --wait follows them to the end",
		Long: `Enqueue syncs of one connection (--connection) or of every connection that is not
disabled (--all). With --wait, follow them, printing each sync's state and the pages and
transactions it stored, until each has ended or is held back.

A sync is held back when a worker makes it wait without calling the provider, or because
the provider asked it to: the provider's request quota is spent (a daily quota of
calls, for example), a rate limit is reached, or the circuit breaker is open. It prints
"held back until <time>: <reason>" (reason provider_quota, rate_limit or breaker_open) and
runs by itself at that time; --wait does not wait for it.

Exit status with --wait: 0 when every sync completed; 3 when none failed but some are held
back and nothing else is left to wait for; 1 when a sync failed, when no worker is running,
or when --timeout passes.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (connection == "") == !allConns {
				return errors.New("give exactly one of --connection ID or --all")
			}
			return a.withStore(cmd.Context(), func(st *storage.Store) error {
				ids, err := syncTargets(cmd.Context(), st, connection)
				if err != nil {
					return err
				}
				client, err := worker.NewInsertClient(st)
				if err != nil {
					return err
				}
				asked := time.Now()
				jobs, err := linking.EnqueueSyncs(cmd.Context(), client, ids)
				if err != nil {
					return err
				}
				if !wait {
					return a.print(map[string]any{"enqueued": len(jobs)}, fmt.Sprintf("%d sync(s) enqueued", len(jobs)))
				}
				ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
				defer cancel()
				var progress io.Writer = a.errOut
				if a.json {
					progress = nil
				}
				results, err := syncwait.Wait(ctx, st, client, jobs, asked, progress)
				if a.json {
					_ = a.print(map[string]any{"results": results}, "")
				}
				return err
			})
		},
	}
	cmd.Flags().StringVar(&connection, "connection", "", "the connection to sync")
	cmd.Flags().BoolVar(&allConns, "all", false, "sync every connection that is not disabled")
	cmd.Flags().BoolVar(&wait, "wait", false, "show progress until the syncs end or are held back; exit 1 if one failed, 3 if some are held back")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Minute, "how long --wait waits")
	return cmd
}

// syncTargets is the connection of --connection (which must exist), or
// every connection that is not disabled.
func syncTargets(ctx context.Context, st *storage.Store, connection string) ([]uuid.UUID, error) {
	if connection == "" {
		return st.ListActiveConnectionIDs(ctx)
	}
	id, err := uuid.Parse(connection)
	if err != nil {
		return nil, fmt.Errorf("--connection: %w", err)
	}
	if _, err := st.GetConnectionAnyUser(ctx, id); err != nil {
		return nil, err
	}
	return []uuid.UUID{id}, nil
}
