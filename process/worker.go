package process

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/config"
	"github.com/finsync/finsync/destinations"
	"github.com/finsync/finsync/rules"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/worker"
)

// WorkerOptions shape the workers of a process.
type WorkerOptions struct {
	// Unlimited turns local provider rate limits off (the simulator's).
	Unlimited bool
	// Periodic runs the periodic sync scheduler.
	Periodic bool
	// Stopping closes when the process begins to stop (nil: never).
	Stopping <-chan struct{}
}

// Work is `finsync worker`: it checks the keys, waits for the database and
// runs every worker and the periodic scheduler, with the ops endpoints on
// metricsAddr (empty: none), until ctx ends; then it stops them gracefully
// (RunWorkers).
func (e Env) Work(ctx context.Context, metricsAddr string, unlimited bool) error {
	debug.SetGCPercent(e.Config.GCPercentOr(worker.DefaultGCPercent))
	box, err := e.Config.RequireKeys()
	if err != nil {
		return err
	}
	st, err := AwaitDatabase(ctx, e.Config.DatabaseURLOrDefault(),
		storage.Options{MaxConns: e.Config.DBConns(config.DefaultWorkerConns)}, e.Log)
	if err != nil {
		return err
	}
	defer st.Close()
	reg := prometheus.NewRegistry()
	BaseMetrics(reg, st)
	stopping := make(chan struct{})
	client, err := e.NewWorkerClient(st, box, WorkerOptions{Unlimited: unlimited, Periodic: true, Stopping: stopping}, reg)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	if metricsAddr != "" {
		g.Go(func() error { return api.Serve(gctx, metricsAddr, OpsHandler(st, reg), e.Log) })
	}
	g.Go(func() error { return RunWorkers(gctx, client, stopping) })
	return g.Wait()
}

// NewWorkerClient builds the River client with every worker. With a
// registry, it registers the workers' metrics there (docs/metrics.md); the
// process's own (BaseMetrics) are the caller's.
func (e Env) NewWorkerClient(st *storage.Store, box *secrets.Box, opts WorkerOptions, reg prometheus.Registerer) (*storage.JobClient, error) {
	names := e.Registry.Names()
	var metrics *worker.Metrics
	if reg != nil {
		metrics = worker.NewMetrics(reg, names)
	}
	provs, err := worker.NewProviders(e.Registry, worker.ProviderOptions{Unlimited: opts.Unlimited, Rates: st, Quotas: st, Metrics: metrics})
	if err != nil {
		return nil, fmt.Errorf("provider adapters: %w", err)
	}
	policy := e.Config.WebhookPolicy
	// One rule cache for the process: sync pages and rule jobs share it.
	ruleCache := rules.NewCache(rules.DefaultCacheSize)
	// Unset, no reconnect URL is recorded: finsync serves no re-link page.
	syncer := &worker.Syncer{Store: st, Providers: provs, Box: box, Log: e.Log, ReconnectURL: e.Config.ReconnectURL, Rules: ruleCache,
		WriteRate: e.Config.SyncWriteRate, Metrics: metrics, ConsentWarning: e.Config.ConsentWarning}
	cfg := worker.Config{Store: st, Log: e.Log, Syncer: syncer, Periodic: opts.Periodic, Rules: ruleCache,
		Destinations: &worker.Destinations{Box: box, Metrics: metrics,
			Deliverer: destinations.NewDeliverer(destinations.Options{Webhooks: policy, Rates: st})},
		Webhooks: &worker.Webhooks{Box: box, Policy: policy, Metrics: metrics}, Stopping: opts.Stopping}
	if reg != nil {
		reg.MustRegister(worker.NewBreakerCollector(provs), worker.NewJobCollector(st, worker.JobKinds(cfg)),
			worker.NewLastSyncCollector(st, names), worker.NewConsentExpiryCollector(st, names))
	}
	return worker.NewClient(cfg)
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

// RunWorkers starts the client and, when ctx ends, stops fetching new jobs,
// closes stopping so running syncs checkpoint, and stops the client: softly
// first, then by cancelling the jobs still running. A job whose outcome
// could not be recorded is rescued by another worker later.
func RunWorkers(ctx context.Context, client *storage.JobClient, stopping chan<- struct{}) error {
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
