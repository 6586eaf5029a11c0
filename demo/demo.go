// Package demo is `finsync dev`: the zero-config demo that finds or starts
// a database, keeps demo keys under its directory, serves the simulator of
// every provider, seeds a demo user with one connection per provider,
// destinations and a fresh API key, syncs them, and runs the API and the
// worker in one process. It is for a developer's machine only: it lets
// webhooks reach private addresses unless told otherwise.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/config"
	"github.com/finsync/finsync/process"
	"github.com/finsync/finsync/servicekeys"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/syncwait"
)

// Options are the demo's flags and outputs.
type Options struct {
	// Env is the process's configuration, registry and logger.
	Env process.Env
	// Out receives the demo's summary, ErrOut its progress lines; JSON
	// prints the summary as one JSON object and no progress.
	Out, ErrOut io.Writer
	JSON        bool
	// Addr is the API's listen address, SimAddr the simulator's,
	// MetricsAddr the ops endpoints' (empty: none).
	Addr, SimAddr, MetricsAddr string
	// Dir keeps the demo keys and, when needed, a private PostgreSQL
	// cluster.
	Dir string
}

// Run runs the demo until ctx ends.
func Run(ctx context.Context, o Options) error {
	cfg := o.Env.Config
	logf := func(format string, args ...any) { fmt.Fprintf(o.ErrOut, "finsync dev: "+format+"\n", args...) }
	if !cfg.WebhookPolicySet {
		// The demo's receivers are local: let webhooks reach them.
		cfg.WebhookPolicy.AllowPrivate = true
	}
	dbURL, stopDB, err := findDatabase(ctx, cfg.DatabaseURL, cfg.PGBinDir, o.Dir, logf)
	if err != nil {
		return err
	}
	defer stopDB()
	box, err := keys(&cfg, o.Dir)
	if err != nil {
		return err
	}
	// One pool serves the API and the worker of this process.
	st, err := storage.Connect(ctx, dbURL, storage.Options{MaxConns: cfg.DBConns(config.DefaultServeConns + config.DefaultWorkerConns)})
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	simRoot := "http://" + o.SimAddr
	simulator := Simulator(1)
	simErr := make(chan error, 1)
	g.Go(func() error { err := api.Serve(gctx, o.SimAddr, simulator, o.Env.Log); simErr <- err; return err })
	if err := waitHealthy(ctx, simRoot+"/_sim/state", simErr); err != nil {
		return orCause(gctx, fmt.Errorf("simulator at %s: %w", o.SimAddr, err))
	}
	d, err := seed(ctx, st, box, o.Env.Registry, simRoot)
	if err != nil {
		return err
	}
	env := o.Env
	env.Config = cfg
	// One registry for the API and the worker this process runs.
	reg := prometheus.NewRegistry()
	process.BaseMetrics(reg, st)
	stopping := make(chan struct{})
	client, err := env.NewWorkerClient(st, box, process.WorkerOptions{Unlimited: true, Periodic: true, Stopping: stopping}, reg)
	if err != nil {
		return err
	}
	g.Go(func() error { return process.RunWorkers(gctx, client, stopping) })
	logf("syncing %d demo connections from the simulator", len(d.Connections))
	var progress io.Writer
	if !o.JSON {
		progress = o.ErrOut
	}
	if _, err := syncwait.Wait(ctx, st, client, d.Jobs, d.Asked, progress); err != nil {
		logf("%v", err)
	}
	if err := ownAddresses(&env.Config, o.Addr); err != nil {
		return err
	}
	apiErr := make(chan error, 1)
	g.Go(func() error { err := env.RunAPI(gctx, st, o.Addr, o.MetricsAddr, reg); apiErr <- err; return err })
	if err := waitHealthy(ctx, "http://"+o.Addr+"/v2/health", apiErr); err != nil {
		return orCause(gctx, fmt.Errorf("API at %s: %w", o.Addr, err))
	}
	// The simulated providers notify this API, as real ones would.
	if err := notifyHere(simulator, env.Registry, "http://"+o.Addr); err != nil {
		return err
	}
	if o.MetricsAddr != "" {
		d.MetricsURL = "http://" + o.MetricsAddr + "/metrics"
	}
	if err := printDemo(o.Out, o.JSON, o.Addr, simRoot, dbURL, env.Config.OpsToken, d); err != nil {
		return err
	}
	return g.Wait()
}

// ownAddresses gives the demo an operator token when none is configured,
// and makes v1's links name this process's own API unless
// FINSYNC_PUBLIC_URL says otherwise.
func ownAddresses(cfg *config.Config, addr string) error {
	if cfg.OpsToken == "" {
		tok, err := servicekeys.NewKey()
		if err != nil {
			return fmt.Errorf("make ops token: %w", err)
		}
		cfg.OpsToken = tok
	}
	if cfg.PublicURL == nil {
		u, _, err := cfg.PublicURLFor(addr)
		if err != nil {
			return err
		}
		cfg.PublicURL = u
	}
	return nil
}

// orCause is err, or, when one of the demo's servers or workers failed
// first (gctx was cancelled for it), that failure: a server stopped by the
// cancellation would only say it stopped.
func orCause(gctx context.Context, err error) error {
	if cause := context.Cause(gctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}
