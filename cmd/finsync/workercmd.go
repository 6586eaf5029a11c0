package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/destinations"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/rules"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/worker"
)

// box returns the encryption box from FINSYNC_ENCRYPTION_KEY.
func (a *app) box() (*secrets.Box, error) {
	return a.cfg.encryptionBox()
}

// requireKeys checks, before a serve or worker process starts, that both
// keys every process of a fleet must share are configured and valid, and
// returns the encryption box. The error names every key that is missing.
func (a *app) requireKeys() (*secrets.Box, error) {
	if unset := a.cfg.unsetKeys(); len(unset) > 0 {
		return nil, errKeysUnset(unset)
	}
	box, boxErr := a.cfg.encryptionBox()
	_, cursorErr := a.cfg.cursorKeys()
	if err := errors.Join(boxErr, cursorErr); err != nil {
		return nil, err
	}
	return box, nil
}

// devKeys gives `finsync dev` its keys with zero configuration: each of
// FINSYNC_ENCRYPTION_KEY and FINSYNC_CURSOR_KEY that is not set comes from a
// demo key kept in dir (created once, so demo data sealed by an earlier run
// still opens and cursors survive a restart). It returns the encryption box.
func (a *app) devKeys(dir string) (*secrets.Box, error) {
	for _, k := range []struct {
		value *string
		file  string
	}{{&a.cfg.EncryptionKey, "dev-encryption-key"}, {&a.cfg.CursorKey, "dev-cursor-key"}} {
		if *k.value != "" {
			continue
		}
		key, err := demoKey(filepath.Join(dir, k.file))
		if err != nil {
			return nil, err
		}
		*k.value = key
	}
	return a.box()
}

// demoKey reads the demo key kept at path, creating it the first time.
func demoKey(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read demo key: %w", err)
	}
	key, err := secrets.Generate()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("store demo key: %w", err)
	}
	if err := os.WriteFile(path, []byte(key), 0o600); err != nil {
		return "", fmt.Errorf("store demo key: %w", err)
	}
	return key, nil
}

// workerOptions are the flags of commands that run workers.
type workerOptions struct {
	unlimited bool
	periodic  bool
	// stopping closes when the process begins to stop (nil: never).
	stopping <-chan struct{}
}

// newWorkerClient builds the River client with every worker. With a
// registry, it registers the workers' metrics there (docs/metrics.md); the
// process's own (baseMetrics) are the caller's.
func (a *app) newWorkerClient(st *storage.Store, box *secrets.Box, log *slog.Logger, opts workerOptions, reg prometheus.Registerer) (*storage.JobClient, error) {
	var metrics *worker.Metrics
	if reg != nil {
		metrics = worker.NewMetrics(reg, all.NewRegistry().Names())
	}
	provs, err := worker.NewProviders(all.NewRegistry(), worker.ProviderOptions{Unlimited: opts.unlimited, Rates: st, Quotas: st, Metrics: metrics})
	if err != nil {
		return nil, err
	}
	// Unset, no reconnect URL is recorded: finsync serves no re-link page.
	reconnect := a.cfg.ReconnectURLTemplate
	rate, err := a.cfg.syncWriteRate()
	if err != nil {
		return nil, err
	}
	policy, err := a.cfg.webhookPolicy()
	if err != nil {
		return nil, err
	}
	warning, err := a.cfg.consentWarning()
	if err != nil {
		return nil, err
	}
	// One rule cache for the process: sync pages and rule jobs share it.
	ruleCache := rules.NewCache(rules.DefaultCacheSize)
	syncer := &worker.Syncer{Store: st, Providers: provs, Box: box, Log: log, ReconnectURL: reconnect, Rules: ruleCache, WriteRate: rate,
		Metrics: metrics, ConsentWarning: warning}
	cfg := worker.Config{Store: st, Log: log, Syncer: syncer, Periodic: opts.periodic, Rules: ruleCache,
		Destinations: &worker.Destinations{Box: box, Metrics: metrics,
			Deliverer: destinations.NewDeliverer(destinations.Options{Webhooks: policy, Rates: st})},
		Webhooks: &worker.Webhooks{Box: box, Policy: policy, Metrics: metrics}, Stopping: opts.stopping}
	if reg != nil {
		names := all.NewRegistry().Names()
		reg.MustRegister(worker.NewBreakerCollector(provs), worker.NewJobCollector(st, worker.JobKinds(cfg)),
			worker.NewLastSyncCollector(st, names), worker.NewConsentExpiryCollector(st, names))
	}
	return worker.NewClient(cfg)
}

func (a *app) workerCmd() *cobra.Command {
	var metricsAddr string
	var opts workerOptions
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run the sync and rule workers and the periodic sync scheduler",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			log := a.logger()
			if os.Getenv("GOGC") == "" {
				debug.SetGCPercent(worker.DefaultGCPercent)
			}
			box, err := a.requireKeys()
			if err != nil {
				return err
			}
			if _, err := a.cfg.syncWriteRate(); err != nil {
				return err
			}
			conns, err := a.cfg.dbMaxConns(defaultWorkerConns)
			if err != nil {
				return err
			}
			st, err := awaitDatabase(ctx, a.cfg.databaseURL(), storage.Options{MaxConns: conns}, a.logger())
			if err != nil {
				return err
			}
			defer st.Close()
			reg := prometheus.NewRegistry()
			baseMetrics(reg, st)
			opts.periodic = true
			stopping := make(chan struct{})
			opts.stopping = stopping
			client, err := a.newWorkerClient(st, box, log, opts, reg)
			if err != nil {
				return err
			}
			g, gctx := errgroup.WithContext(ctx)
			if metricsAddr != "" {
				g.Go(func() error { return api.Serve(gctx, metricsAddr, opsHandler(st, reg), log) })
			}
			g.Go(func() error { return runWorkers(gctx, client, stopping) })
			return g.Wait()
		},
	}
	cmd.Flags().StringVar(&metricsAddr, "metrics-addr", "127.0.0.1:9091", "ops address for /metrics, /livez and /readyz (empty disables)")
	cmd.Flags().BoolVar(&opts.unlimited, "no-provider-rate-limits", false, "turn local provider rate limits off (only for the simulator)")
	return cmd
}

// Stopping a worker: running jobs get softStopTimeout to end (a sync ends
// its slice after the batch in hand and snoozes), then their contexts are
// cancelled (a sync's uncommitted batch rolls back and the job snoozes)
// and the client gets hardStopTimeout more to record their outcomes. Their
// sum stays under the 30 s a supervisor usually allows after SIGTERM.
const (
	softStopTimeout = 15 * time.Second
	hardStopTimeout = 10 * time.Second
)

// runWorkers starts the client and, when ctx ends, stops fetching new jobs,
// closes stopping so running syncs checkpoint, and stops the client: softly
// first, then by cancelling the jobs still running. A job whose outcome
// could not be recorded is rescued by another worker later.
func runWorkers(ctx context.Context, client *storage.JobClient, stopping chan<- struct{}) error {
	// Job contexts must not end with ctx: the soft stop below decides when.
	if err := client.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("start workers: %w", err)
	}
	<-ctx.Done()
	close(stopping)
	softCtx, cancelSoft := context.WithTimeout(context.Background(), softStopTimeout)
	defer cancelSoft()
	if err := client.Stop(softCtx); err == nil {
		return nil
	}
	hardCtx, cancelHard := context.WithTimeout(context.Background(), hardStopTimeout)
	defer cancelHard()
	if err := client.StopAndCancel(hardCtx); err != nil {
		return fmt.Errorf("stop workers: %w", err)
	}
	return nil
}

func (a *app) simCmd() *cobra.Command {
	var addr string
	var seed int64
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Serve the simulator of every provider's API on one port",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return api.Serve(cmd.Context(), addr, newSimulator(seed), a.logger())
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8090", "listen address")
	cmd.Flags().Int64Var(&seed, "seed", 1, "seed of the simulated data")
	return cmd
}

var _ http.Handler = (*sim.Simulator)(nil)
