package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/api/ops"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/worker"
	"golang.org/x/sync/errgroup"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
)

// demoEmail is the demo user finsync dev seeds.
const demoEmail = "demo@finsync.dev"

func (a *app) devCmd() *cobra.Command {
	var addr, simAddr, metricsAddr, dir string
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Zero-config demo: database, simulator, demo data, API and worker in one process",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			logf := func(format string, args ...any) { fmt.Fprintf(a.errOut, "finsync dev: "+format+"\n", args...) }
			if a.cfg.WebhookAllowPrivate == "" {
				// The demo's receivers are local: let webhooks reach them.
				a.cfg.WebhookAllowPrivate = "1"
			}
			dbURL, stopDB, err := findDatabase(ctx, a.cfg.DatabaseURL, dir, logf)
			if err != nil {
				return err
			}
			defer stopDB()
			box, err := a.devKeys(dir)
			if err != nil {
				return err
			}
			// One pool serves the API and the worker of this process.
			conns, err := a.cfg.dbMaxConns(defaultServeConns + defaultWorkerConns)
			if err != nil {
				return err
			}
			st, err := storage.Connect(ctx, dbURL, storage.Options{MaxConns: conns})
			if err != nil {
				return err
			}
			defer st.Close()
			if err := st.Migrate(ctx); err != nil {
				return err
			}
			g, gctx := errgroup.WithContext(ctx)
			simRoot := "http://" + simAddr
			simulator := newSimulator(1)
			g.Go(func() error { return api.Serve(gctx, simAddr, simulator, a.logger()) })
			if err := waitHealthy(ctx, simRoot+"/_sim/state", nil); err != nil {
				return err
			}
			demo, err := seedDemo(ctx, st, box, simRoot)
			if err != nil {
				return err
			}
			// One registry for the API and the worker this process runs.
			reg := prometheus.NewRegistry()
			baseMetrics(reg, st)
			stopping := make(chan struct{})
			client, err := a.newWorkerClient(st, box, a.logger(), workerOptions{unlimited: true, periodic: true, stopping: stopping}, reg)
			if err != nil {
				return err
			}
			g.Go(func() error { return runWorkers(gctx, client, stopping) })
			logf("syncing %d demo connections from the simulator", len(demo.Connections))
			if _, err := a.waitSyncs(ctx, st, client, demo.Jobs, demo.Asked); err != nil {
				logf("%v", err)
			}
			if a.cfg.OpsToken == "" {
				if a.cfg.OpsToken, err = newOpsToken(); err != nil {
					return err
				}
			}
			if a.cfg.PublicURL == "" {
				// v1's links name this process's own API.
				u, _, err := a.cfg.publicURL(addr)
				if err != nil {
					return err
				}
				a.cfg.PublicURL = u.String()
			}
			apiErr := make(chan error, 1)
			g.Go(func() error { err := a.runAPI(gctx, st, addr, metricsAddr, reg); apiErr <- err; return err })
			if err := waitHealthy(ctx, "http://"+addr+"/v2/health", apiErr); err != nil {
				return err
			}
			// The simulated providers notify this API, as real ones would.
			if err := notifyHere(simulator, "http://"+addr); err != nil {
				return err
			}
			if metricsAddr != "" {
				demo.MetricsURL = "http://" + metricsAddr + "/metrics"
			}
			a.printDemo(addr, simRoot, dbURL, demo)
			return g.Wait()
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "API listen address")
	cmd.Flags().StringVar(&metricsAddr, "metrics-addr", "127.0.0.1:9090", "ops address for /metrics (the API's and the worker's), /livez and /readyz (empty disables)")
	cmd.Flags().StringVar(&simAddr, "sim-addr", "127.0.0.1:8090", "provider simulator listen address")
	cmd.Flags().StringVar(&dir, "dir", ".finsync", "where the demo keeps its encryption key and, when needed, a private PostgreSQL cluster")
	return cmd
}

// demo is what seedDemo made.
type demo struct {
	UserID      uuid.UUID
	Key         string
	Connections []uuid.UUID
	Jobs        map[uuid.UUID]int64
	// Asked is when the demo syncs were enqueued.
	Asked time.Time
	// MetricsURL serves the process's metrics, API's and worker's (empty:
	// none).
	MetricsURL string
}

// seedDemo creates (once) the demo user, a manual account and one
// simulator connection per provider kind, enqueues their syncs, and issues
// a fresh API key on every run.
func seedDemo(ctx context.Context, st *storage.Store, box *secrets.Box, simRoot string) (demo, error) {
	d := demo{Jobs: map[uuid.UUID]int64{}}
	u, err := st.CreateUser(ctx, demoEmail, domain.PlanPro, true)
	if errors.Is(err, storage.ErrConflict) {
		u, err = st.UserByEmail(ctx, demoEmail)
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
	if err := seedDemoConnections(ctx, st, box, simRoot, &d); err != nil {
		return d, err
	}
	if err := seedDemoDestinations(ctx, st, box, simRoot, d.UserID); err != nil {
		return d, fmt.Errorf("seed demo destinations: %w", err)
	}
	ic, err := st.IssueCredential(ctx, storage.NewCredential{UserID: u.ID, Kind: storage.CredentialAPIKey, Name: "demo"})
	if err != nil {
		return d, fmt.Errorf("seed demo key: %w", err)
	}
	d.Key = ic.Secret
	return d, nil
}

// seedDemoConnections makes sure the demo user has one connection per
// provider kind, pointed at this run's simulator, and enqueues their syncs.
func seedDemoConnections(ctx context.Context, st *storage.Store, box *secrets.Box, simRoot string, d *demo) error {
	existing, err := st.ListAllConnections(ctx, &d.UserID)
	if err != nil {
		return err
	}
	have := map[string]uuid.UUID{}
	for _, c := range existing {
		have[c.Provider] = c.ID
	}
	if err := seedDemoSettings(ctx, st, box); err != nil {
		return err
	}
	for _, p := range registry().Descriptions() {
		p := p.Name
		id, ok := have[p]
		if !ok {
			sealed, err := box.Seal(allsim.OwnCredentials(p, "demo-"+p))
			if err != nil {
				return err
			}
			c, err := st.CreateConnection(ctx, storage.NewConnection{UserID: d.UserID, Provider: p, BaseURL: allsim.BaseURL(p, simRoot), SealedCredentials: sealed})
			if err != nil {
				return err
			}
			id = c.ID
		} else if err := refreshDemoConnection(ctx, st, box, id, p, simRoot); err != nil {
			return err
		}
		d.Connections = append(d.Connections, id)
	}
	client, err := worker.NewInsertClient(st)
	if err != nil {
		return err
	}
	d.Asked = time.Now()
	d.Jobs, err = enqueueSyncs(ctx, client, d.Connections)
	return err
}

func (a *app) printDemo(addr, simRoot, dbURL string, d demo) {
	base := "http://" + addr
	if a.json {
		_ = a.print(map[string]any{"baseUrl": base, "key": d.Key, "userId": d.UserID, "databaseUrl": dbURL, "simulatorUrl": simRoot, "connections": d.Connections,
			"metricsUrl": d.MetricsURL, "opsUrl": base + "/ops", "opsToken": a.cfg.OpsToken}, "")
		return
	}
	metrics := d.MetricsURL
	if metrics == "" {
		metrics = "none (--metrics-addr is empty)"
	}
	fmt.Fprintf(a.out, `finsync is running.

  API:        %[1]s/v2  (and %[1]s/v1)
  User:       %[2]s (%[3]s, pro plan)
  API key:    %[4]s
  Simulator:  %[5]s  (POST /_sim/advance {"days": 1}, then: go run ./cmd/finsync sync --all --wait)
  Ops:        %[1]s/ops  (jobs: %[1]s/ops/jobs/), operator token %[6]s
  Metrics:    %[7]s

Try:
  curl -s -H "Authorization: Bearer %[4]s" %[1]s/v2/me
  curl -s -H "Authorization: Bearer %[4]s" %[1]s/v2/accounts
  curl -s -H "Authorization: Bearer %[4]s" "%[1]s/v2/transactions?limit=5"
  curl -s -H "Authorization: Bearer %[4]s" %[1]s/v2/bank-connections

Manual-account changes (POST/PATCH/DELETE /v2/accounts) propagate to the simulated destinations:
  curl -s -H "Authorization: Bearer patDemoToken" %[5]s/v0/appFinsyncDemo/Accounts
  curl -s -H "Authorization: Bearer ya29.demo" "%[5]s/v4/spreadsheets/finsync-demo/values/Accounts"

Ops console (sign in with the operator token, or send it as a bearer token):
  curl -s -H "Authorization: Bearer %[6]s" %[1]s/ops

Press Ctrl-C to stop.
`, base, demoEmail, d.UserID, d.Key, simRoot, a.cfg.OpsToken, metrics)
}

// newOpsToken makes a random operator token for the demo's ops console:
// 32 random bytes in hex, drawn again in the rare case (about one in ten
// million) that they fail ops.ValidateToken's randomness checks.
func newOpsToken() (string, error) {
	for {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return "", fmt.Errorf("make ops token: %w", err)
		}
		if t := hex.EncodeToString(b); ops.ValidateToken(t) == nil {
			return t, nil
		}
	}
}

// waitHealthy polls the health URL until it answers 200, the server fails,
// or ten seconds pass.
func waitHealthy(ctx context.Context, url string, errc chan error) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-errc:
			return fmt.Errorf("server stopped: %w", err)
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

// seedDemoSettings stores, sealed with this checkout's demo key, the
// provider-level settings the simulator accepts (Enable Banking's demo
// application) for every provider that has them, so that the demo
// connections carry only their own credentials, as an operator's would.
func seedDemoSettings(ctx context.Context, st *storage.Store, box *secrets.Box) error {
	for _, d := range registry().Descriptions() {
		settings := allsim.Settings(d.Name)
		if settings == nil {
			continue
		}
		sealed, err := box.Seal(settings)
		if err != nil {
			return err
		}
		if err := st.SetProviderSettings(ctx, d.Name, sealed); err != nil {
			return fmt.Errorf("seed demo %s settings: %w", d.Name, err)
		}
	}
	return nil
}

// refreshDemoConnection points an existing demo connection at this run's
// simulator and seals its (deterministic) credentials with this checkout's
// demo key, so a new clone against the same database can still sync it.
func refreshDemoConnection(ctx context.Context, st *storage.Store, box *secrets.Box, id uuid.UUID, provider, simRoot string) error {
	sealed, err := box.Seal(allsim.OwnCredentials(provider, "demo-"+provider))
	if err != nil {
		return err
	}
	if err := st.RepointConnection(ctx, id, allsim.BaseURL(provider, simRoot), sealed); err != nil {
		return fmt.Errorf("refresh demo connection: %w", err)
	}
	return nil
}
