package main

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"os"
	"runtime/debug"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/api/ops"
	"github.com/finsync/finsync/linking"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/worker"
)

func (a *app) migrateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Apply finsync's and River's database migrations",
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := storage.Connect(cmd.Context(), a.cfg.databaseURL(), storage.Options{})
			if err != nil {
				return err
			}
			defer st.Close()
			if err := st.Migrate(cmd.Context()); err != nil {
				return err
			}
			return a.print(map[string]any{"migrated": true}, "migrations applied")
		},
	}
}

func (a *app) serveCmd() *cobra.Command {
	var addr, metricsAddr string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if _, err := a.requireKeys(); err != nil {
				return err
			}
			if _, err := a.cfg.readMaxLag(); err != nil {
				return err
			}
			if _, err := a.cfg.opsToken(); err != nil {
				return err
			}
			conns, err := a.cfg.dbMaxConns(defaultServeConns)
			if err != nil {
				return err
			}
			primary, err := awaitDatabase(ctx, a.cfg.databaseURL(), storage.Options{MaxConns: conns}, a.logger())
			if err != nil {
				return err
			}
			defer primary.Close()
			st, rep, err := a.readReplica(ctx, primary, conns)
			if err != nil {
				return err
			}
			if rep != nil {
				defer rep.Close()
				go rep.Run(ctx)
			}
			reg := prometheus.NewRegistry()
			baseMetrics(reg, st)
			return a.runAPI(ctx, st, addr, metricsAddr, reg)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "API listen address")
	cmd.Flags().StringVar(&metricsAddr, "metrics-addr", "127.0.0.1:9090", "ops address for /metrics, /livez and /readyz (empty disables)")
	return cmd
}

// readReplica opens the read replica named by FINSYNC_READ_DATABASE_URL,
// if any, and returns the store to serve with. The replica need not be up:
// its pool (of conns connections) connects lazily and, while it is down,
// reads go to the primary.
func (a *app) readReplica(ctx context.Context, primary *storage.Store, conns int32) (*storage.Store, *storage.Replica, error) {
	if a.cfg.ReadDatabaseURL == "" {
		return primary, nil, nil
	}
	maxLag, err := a.cfg.readMaxLag()
	if err != nil {
		return nil, nil, err
	}
	rep, err := primary.ConnectReplica(ctx, a.cfg.ReadDatabaseURL, storage.ReplicaOptions{MaxLag: maxLag, MaxConns: conns, Log: a.logger()})
	if err != nil {
		return nil, nil, fmt.Errorf("FINSYNC_READ_DATABASE_URL: %w", err)
	}
	a.logger().Info("reads go to the replica while it is within the lag bound", "max_lag", rep.MaxLag().String())
	return primary.WithReplica(rep), rep, nil
}

// Waits between attempts to reach a database that is down at start-up.
const (
	awaitDatabaseFirst = 500 * time.Millisecond
	awaitDatabaseMax   = 5 * time.Second
)

// awaitDatabase opens the store, waiting for the database while it is
// unreachable or restarting (storage.Unavailable) instead of exiting, so a
// process started during an outage serves as soon as the database is back
// rather than depending on a supervisor's restart backoff. Other errors (a
// bad URL, a missing database, bad credentials) end it at once, as does ctx.
func awaitDatabase(ctx context.Context, url string, opts storage.Options, log *slog.Logger) (*storage.Store, error) {
	wait := awaitDatabaseFirst
	for {
		st, err := storage.Connect(ctx, url, opts)
		if err == nil {
			return st, nil
		}
		if !storage.Unavailable(err) || ctx.Err() != nil {
			return nil, err
		}
		log.Warn("database unreachable; waiting for it", "error", err, "retry_in", wait.String())
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for the database: %w", ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, awaitDatabaseMax)
	}
}

// defaultGCPercent is the garbage collector's target when GOGC is unset:
// the API's live heap is small and its garbage is short-lived response
// data, so a higher target trades a little memory for less GC work on the
// read path (see BENCHMARKS.md).
const defaultGCPercent = 400

// baseMetrics registers what every long-running process exports on reg:
// Go runtime, process and database pool statistics, and the read
// replica's when there is one.
func baseMetrics(reg prometheus.Registerer, st *storage.Store) {
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), newPoolCollector(st))
	if st.Replica() != nil {
		reg.MustRegister(newReplicaCollector(st))
	}
}

// newAPI builds the API server, registering its metrics on reg, with the
// ops console when FINSYNC_OPS_TOKEN is set; ctx bounds the console's
// background work.
func (a *app) newAPI(ctx context.Context, st *storage.Store, reg prometheus.Registerer) (*api.API, error) {
	proxies, err := a.cfg.trustedProxies()
	if err != nil {
		return nil, err
	}
	jobs, err := worker.NewInsertClient(st)
	if err != nil {
		return nil, err
	}
	cursorKeys, err := a.cfg.cursorKeys()
	if err != nil {
		return nil, err
	}
	token, err := a.cfg.opsToken()
	if err != nil {
		return nil, err
	}
	box, err := a.cfg.encryptionBox()
	if err != nil {
		return nil, err
	}
	policy, err := a.cfg.webhookPolicy()
	if err != nil {
		return nil, err
	}
	var public *url.URL
	if a.cfg.PublicURL != "" {
		if public, err = parsePublicURL(a.cfg.PublicURL); err != nil {
			return nil, err
		}
	}
	var console *ops.Console
	if token != "" {
		linker := &linking.Linker{Store: st, Registry: registry(), Box: box, Jobs: jobs}
		if console, err = ops.New(ctx, ops.Config{Token: token, Store: st, Jobs: jobs, Log: a.logger(),
			Providers: providerNames(linker.Registry), Reauth: opsReauth(linker)}); err != nil {
			return nil, err
		}
	}
	receiver, err := a.noticeReceiver(st, box, jobs)
	if err != nil {
		return nil, err
	}
	return api.New(api.Config{Store: st, Log: a.logger(), Providers: registry().Profiles(), CursorKey: cursorKeys[0], PreviousCursorKeys: cursorKeys[1:], Metrics: reg, Jobs: jobs,
		TrustedProxies: proxies, Ops: console, Box: box, WebhookPolicy: policy, PublicURL: public, Notices: receiver})
}

// noticeReceiver builds what serve answers the providers' notifications
// with: the adapters (to read and verify them) and what a sync records
// (docs/webhooks.md, "Provider notifications in").
func (a *app) noticeReceiver(st *storage.Store, box *secrets.Box, jobs *storage.JobClient) (*worker.NoticeReceiver, error) {
	provs, err := worker.NewProviders(registry(), worker.ProviderOptions{Rates: st, Quotas: st})
	if err != nil {
		return nil, err
	}
	warning, err := a.cfg.consentWarning()
	if err != nil {
		return nil, err
	}
	syncer := &worker.Syncer{Store: st, Providers: provs, Box: box, Log: a.logger(),
		ReconnectURL: a.cfg.ReconnectURLTemplate, ConsentWarning: warning}
	return &worker.NoticeReceiver{Syncer: syncer, Jobs: jobs}, nil
}

// runAPI serves the API, and the ops endpoints with reg's metrics, until
// ctx ends.
func (a *app) runAPI(ctx context.Context, st *storage.Store, addr, metricsAddr string, reg *prometheus.Registry) error {
	log := a.logger()
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
	if a.cfg.PublicURL == "" {
		u, _, err := a.cfg.publicURL(addr)
		if err != nil {
			return err
		}
		a.cfg.PublicURL = u.String()
		log.Warn("FINSYNC_PUBLIC_URL is not set: v1's nextPage links name the listen address; set it to the URL clients reach the API at",
			"public_url", a.cfg.PublicURL)
	}
	g, ctx := errgroup.WithContext(ctx)
	srv, err := a.newAPI(ctx, st, reg)
	if err != nil {
		return err
	}
	g.Go(func() error { srv.Run(ctx); return nil })
	g.Go(func() error { return api.Serve(ctx, addr, srv.Handler, log) })
	if metricsAddr != "" {
		g.Go(func() error { return api.Serve(ctx, metricsAddr, opsHandler(st, reg), log) })
	}
	return g.Wait()
}

// opsHandler serves /metrics, /livez and /readyz.
func opsHandler(st *storage.Store, reg *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/livez", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		defer cancel()
		if err := st.Ping(ctx); err != nil {
			http.Error(w, "database unreachable", http.StatusServiceUnavailable)
			return
		}
		ok, err := st.MigrationsCurrent(ctx)
		if err != nil || !ok {
			http.Error(w, "migrations not current", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// poolCollector exports the database pool's statistics.
type poolCollector struct {
	st                               *storage.Store
	acquired, idle, total, wait, max *prometheus.Desc
}

func newPoolCollector(st *storage.Store) *poolCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("finsync_db_pool_"+name, help, nil, nil)
	}
	return &poolCollector{st: st,
		acquired: d("acquired_conns", "Connections in use."),
		idle:     d("idle_conns", "Idle connections."),
		total:    d("total_conns", "All open connections."),
		wait:     d("empty_acquire_total", "Acquires that had to wait for a connection."),
		max:      d("max_conns", "The pool's size (FINSYNC_DB_MAX_CONNS or the command's default)."),
	}
}

// Describe implements prometheus.Collector.
func (p *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- p.acquired
	ch <- p.idle
	ch <- p.total
	ch <- p.wait
	ch <- p.max
}

// Collect implements prometheus.Collector.
func (p *poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := p.st.PoolStats()
	ch <- prometheus.MustNewConstMetric(p.acquired, prometheus.GaugeValue, float64(s.Acquired))
	ch <- prometheus.MustNewConstMetric(p.idle, prometheus.GaugeValue, float64(s.Idle))
	ch <- prometheus.MustNewConstMetric(p.total, prometheus.GaugeValue, float64(s.Total))
	ch <- prometheus.MustNewConstMetric(p.wait, prometheus.CounterValue, float64(s.EmptyAcquires))
	ch <- prometheus.MustNewConstMetric(p.max, prometheus.GaugeValue, float64(s.Max))
}

// replicaCollector exports where reads went and the read replica's state.
type replicaCollector struct {
	st                 *storage.Store
	reads, usable, lag *prometheus.Desc
}

func newReplicaCollector(st *storage.Store) *replicaCollector {
	return &replicaCollector{st: st,
		reads:  prometheus.NewDesc("finsync_db_reads_total", "API reads by the database that served them.", []string{"server"}, nil),
		usable: prometheus.NewDesc("finsync_read_replica_usable", "1 while reads may go to the read replica.", nil, nil),
		lag: prometheus.NewDesc("finsync_read_replica_lag_seconds",
			"Upper bound of the read replica's lag at the last probe (-1 when unknown or past the samples kept).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (r *replicaCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- r.reads
	ch <- r.usable
	ch <- r.lag
}

// Collect implements prometheus.Collector.
func (r *replicaCollector) Collect(ch chan<- prometheus.Metric) {
	replica, primary := r.st.ReadCounts()
	ch <- prometheus.MustNewConstMetric(r.reads, prometheus.CounterValue, float64(replica), "replica")
	ch <- prometheus.MustNewConstMetric(r.reads, prometheus.CounterValue, float64(primary), "primary")
	st := r.st.Replica().Status()
	usable, lag := 0.0, -1.0
	if st.Usable {
		usable = 1
	}
	if st.Lag != math.MaxInt64 {
		lag = st.Lag.Seconds()
	}
	ch <- prometheus.MustNewConstMetric(r.usable, prometheus.GaugeValue, usable)
	ch <- prometheus.MustNewConstMetric(r.lag, prometheus.GaugeValue, lag)
}
