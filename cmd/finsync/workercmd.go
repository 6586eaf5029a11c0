package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/worker"
)

// box returns the credential encryption box from FINSYNC_ENCRYPTION_KEY.
func (a *app) box() (*secrets.Box, error) {
	if a.cfg.EncryptionKey == "" {
		return nil, fmt.Errorf("FINSYNC_ENCRYPTION_KEY is not set: provide 64 hex characters (e.g. from `openssl rand -hex 32`)")
	}
	return secrets.FromHex(a.cfg.EncryptionKey)
}

// devBox returns a box keyed from FINSYNC_ENCRYPTION_KEY or, for the demo,
// from a key kept in dir (created once).
func (a *app) devBox(dir string) (*secrets.Box, error) {
	if a.cfg.EncryptionKey != "" {
		return a.box()
	}
	path := filepath.Join(dir, "dev-encryption-key")
	b, err := os.ReadFile(path)
	if err != nil {
		key := randomHex(32)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(path, []byte(key), 0o600); err != nil {
			return nil, fmt.Errorf("store demo encryption key: %w", err)
		}
		b = []byte(key)
	}
	a.cfg.EncryptionKey = strings.TrimSpace(string(b))
	return a.box()
}

// workerOptions are the flags of commands that run workers.
type workerOptions struct {
	unlimited bool
	periodic  bool
}

// newWorkerClient builds the River client with every worker.
func (a *app) newWorkerClient(st *storage.Store, box *secrets.Box, log *slog.Logger, opts workerOptions, reg prometheus.Registerer) (*river.Client[pgx.Tx], error) {
	provs, err := worker.NewProviders(all.NewRegistry(), worker.ProviderOptions{Unlimited: opts.unlimited})
	if err != nil {
		return nil, err
	}
	if reg != nil {
		reg.MustRegister(newBreakerCollector(provs), worker.NewJobCollector(st.Pool()), newPoolCollector(st))
	}
	reconnect := a.cfg.ReconnectURLTemplate
	if reconnect == "" {
		reconnect = "http://127.0.0.1:8080/reconnect/{connection_id}"
	}
	syncer := &worker.Syncer{Store: st, Providers: provs, Box: box, Log: log, ReconnectURL: reconnect, ApplyRules: worker.ApplyRulesTx}
	return worker.NewClient(worker.Config{Pool: st.Pool(), Store: st, Log: log, Syncer: syncer, Periodic: opts.periodic,
		Destinations: &worker.Destinations{Box: box}})
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
			box, err := a.box()
			if err != nil {
				return err
			}
			pool, err := awaitDatabase(ctx, a.cfg.databaseURL(), storage.Options{}, a.logger())
			if err != nil {
				return err
			}
			defer pool.Close()
			st := storage.New(pool)
			reg := prometheus.NewRegistry()
			opts.periodic = true
			client, err := a.newWorkerClient(st, box, log, opts, reg)
			if err != nil {
				return err
			}
			g, gctx := errgroup.WithContext(ctx)
			if metricsAddr != "" {
				g.Go(func() error { return api.Serve(gctx, metricsAddr, opsHandler(st, reg), log) })
			}
			g.Go(func() error { return runWorkers(gctx, client) })
			return g.Wait()
		},
	}
	cmd.Flags().StringVar(&metricsAddr, "metrics-addr", "127.0.0.1:9091", "ops address for /metrics, /livez and /readyz (empty disables)")
	cmd.Flags().BoolVar(&opts.unlimited, "no-provider-rate-limits", false, "turn local provider rate limits off (only for the simulator)")
	return cmd
}

// runWorkers starts the client and, when ctx ends, stops fetching new jobs
// and lets running ones finish (or be rescued by another worker later).
func runWorkers(ctx context.Context, client *river.Client[pgx.Tx]) error {
	if err := client.Start(ctx); err != nil {
		return fmt.Errorf("start workers: %w", err)
	}
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := client.Stop(stopCtx); err != nil {
		return fmt.Errorf("stop workers: %w", err)
	}
	return nil
}

func (a *app) simCmd() *cobra.Command {
	var addr string
	var seed int64
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Serve the provider simulator (Plaid, GoCardless, Stripe, Mercury) on one port",
		RunE: func(cmd *cobra.Command, _ []string) error {
			s := sim.New(sim.Options{Seed: seed})
			return api.Serve(cmd.Context(), addr, s, a.logger())
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8090", "listen address")
	cmd.Flags().Int64Var(&seed, "seed", 1, "seed of the simulated data")
	return cmd
}

// breakerCollector exports circuit breaker states.
type breakerCollector struct {
	provs map[string]providers.Provider
	desc  *prometheus.Desc
}

func newBreakerCollector(provs map[string]providers.Provider) *breakerCollector {
	return &breakerCollector{provs: provs, desc: prometheus.NewDesc("finsync_provider_breaker_open",
		"1 when the circuit breaker is open, 0.5 half-open, 0 closed.", []string{"provider", "institution"}, nil)}
}

// Describe implements prometheus.Collector.
func (b *breakerCollector) Describe(ch chan<- *prometheus.Desc) { ch <- b.desc }

// Collect implements prometheus.Collector.
func (b *breakerCollector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range b.provs {
		r, ok := p.(*providers.Resilient)
		if !ok {
			continue
		}
		for _, s := range r.States() {
			v := 0.0
			switch s.State {
			case "open":
				v = 1
			case "half-open":
				v = 0.5
			}
			ch <- prometheus.MustNewConstMetric(b.desc, prometheus.GaugeValue, v, s.Provider, s.InstitutionID)
		}
	}
}

var _ http.Handler = (*sim.Simulator)(nil)
