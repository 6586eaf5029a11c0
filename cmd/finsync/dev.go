package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
)

// demoEmail is the demo user finsync dev seeds.
const demoEmail = "demo@finsync.dev"

func (a *app) devCmd() *cobra.Command {
	var addr, dir string
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Zero-config demo: database, migrations, demo data, API and worker in one process",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			logf := func(format string, args ...any) { fmt.Fprintf(a.errOut, "finsync dev: "+format+"\n", args...) }
			dbURL, stopDB, err := findDatabase(ctx, a.cfg.DatabaseURL, dir, logf)
			if err != nil {
				return err
			}
			defer stopDB()
			pool, err := storage.Open(ctx, dbURL, storage.Options{})
			if err != nil {
				return err
			}
			defer pool.Close()
			if err := storage.Migrate(ctx, pool); err != nil {
				return err
			}
			st := storage.New(pool)
			demo, err := seedDemo(ctx, st)
			if err != nil {
				return err
			}
			errc := make(chan error, 1)
			go func() { errc <- a.runAPI(ctx, st, addr, "") }()
			if err := waitHealthy(ctx, "http://"+addr+"/v2/health", errc); err != nil {
				return err
			}
			a.printDemo(addr, dbURL, demo)
			return <-errc
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "API listen address")
	cmd.Flags().StringVar(&dir, "dir", ".finsync", "where a private PostgreSQL cluster is kept when one is needed")
	return cmd
}

// demo is what seedDemo made.
type demo struct {
	UserID    uuid.UUID
	Key       string
	AccountID uuid.UUID
}

// seedDemo creates (once) the demo user and a manual account, and issues a
// fresh API key on every run.
func seedDemo(ctx context.Context, st *storage.Store) (demo, error) {
	var d demo
	u, err := st.CreateUser(ctx, demoEmail, domain.PlanPro, true)
	if errors.Is(err, storage.ErrConflict) {
		err = st.Pool().QueryRow(ctx, `SELECT id FROM users WHERE email = $1`, demoEmail).Scan(&u.ID)
	} else if err == nil {
		bal := domain.MustMoney("250.00")
		_, err = st.CreateManualAccount(ctx, u.ID, uuid.Nil, storage.ManualAccount{
			Name: "Cash wallet", Type: "depository", Subtype: "cash", Currency: "USD", CurrentBalance: &bal,
		})
	}
	if err != nil {
		return d, fmt.Errorf("seed demo user: %w", err)
	}
	d.UserID = u.ID
	ic, err := st.IssueCredential(ctx, storage.NewCredential{UserID: u.ID, Kind: storage.CredentialAPIKey, Name: "demo"})
	if err != nil {
		return d, fmt.Errorf("seed demo key: %w", err)
	}
	d.Key = ic.Secret
	return d, nil
}

func (a *app) printDemo(addr, dbURL string, d demo) {
	base := "http://" + addr
	if a.json {
		_ = a.print(map[string]any{"baseUrl": base, "key": d.Key, "userId": d.UserID, "databaseUrl": dbURL}, "")
		return
	}
	fmt.Fprintf(a.out, `finsync is running.

  API:      %[1]s/v2  (and %[1]s/v1)
  User:     %[2]s (%[3]s, pro plan)
  API key:  %[4]s

Try:
  curl -s -H "Authorization: Bearer %[4]s" %[1]s/v2/me
  curl -s -H "Authorization: Bearer %[4]s" %[1]s/v2/accounts
  curl -s -H "Authorization: Bearer %[4]s" "%[1]s/v2/transactions?limit=5"
  curl -s -H "Authorization: Bearer %[4]s" %[1]s/v2/bank-connections

Press Ctrl-C to stop.
`, base, demoEmail, d.UserID, d.Key)
}

// waitHealthy polls the health URL until it answers 200, the server fails,
// or ten seconds pass.
func waitHealthy(ctx context.Context, url string, errc chan error) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-errc:
			return fmt.Errorf("API stopped: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if httpOK(ctx, url) {
			return nil
		}
	}
	return fmt.Errorf("API did not become healthy at %s", url)
}
