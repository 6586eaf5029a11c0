// Package worker runs finsync's background jobs on River: syncing bank
// connections from their providers, applying transaction rules to stored
// transactions, and the periodic scheduling of syncs.
package worker

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/finsync/finsync/internal/requestid"
	"github.com/finsync/finsync/jobargs"
	"github.com/finsync/finsync/rules"
	"github.com/finsync/finsync/storage"
)

// DefaultGCPercent is the garbage collector's target for a worker process
// when GOGC is unset. A sync's garbage is short-lived decoded pages over a
// small live heap; at the default target of 100 the collector took about a
// quarter of a large sync's CPU, at 400 a small fraction (see BENCHMARKS.md).
const DefaultGCPercent = 400

// Config wires the workers.
type Config struct {
	// Store is the database; River's jobs live in it too.
	Store *storage.Store
	Log   *slog.Logger
	// Syncer syncs connections; nil registers no sync worker.
	Syncer *Syncer
	// Periodic turns the periodic sync scheduler on.
	Periodic bool
	// Destinations turns on the delivery of manual-account changes to
	// destinations; nil registers no delivery worker.
	Destinations *Destinations
	// Webhooks turns on the delivery of consumer webhooks; nil registers
	// no webhook worker.
	Webhooks *Webhooks
	// Rules is the rule cache of the rule worker; give the same one to the
	// Syncer (Syncer.Rules) so that the process holds one bounded cache.
	// Nil gives the rule worker its own.
	Rules *rules.Cache
	// SyncWorkers and RuleWorkers size the queues; zero uses defaults.
	SyncWorkers int
	RuleWorkers int
	// Stopping closes when the process begins to stop; running syncs then
	// end their slice after the batch in hand. Nil never closes.
	Stopping <-chan struct{}
}

// RescueStuckJobsAfter is how long a job may run before River considers its
// worker dead and retries it elsewhere. It exceeds every job timeout (a
// sliced sync's, a rule pass's and a delivery drain's, each about a minute);
// with River's rescuer checking every 30 s, a killed worker's job runs again
// within about 110 s.
const RescueStuckJobsAfter = 75 * time.Second

// NewClient returns a River client that runs every finsync worker. Start it
// with Start and stop it with Stop (running jobs finish) on shutdown.
func NewClient(cfg Config) (*storage.JobClient, error) {
	cfg.Log = requestid.Logger(cfg.Log)
	workers := river.NewWorkers()
	if err := addWorkers(workers, cfg); err != nil {
		return nil, err
	}
	syncN, ruleN := cfg.SyncWorkers, cfg.RuleWorkers
	if syncN == 0 {
		syncN = 4
	}
	if ruleN == 0 {
		ruleN = 2
	}
	queues := map[string]river.QueueConfig{
		river.QueueDefault: {MaxWorkers: 2},
		jobargs.QueueSync:  {MaxWorkers: syncN},
		jobargs.QueueRules: {MaxWorkers: ruleN},
	}
	webhookQueues(queues, cfg)
	return cfg.Store.NewJobClient(&river.Config{
		Logger:               cfg.Log,
		Middleware:           []rivertype.Middleware{&requestIDs{log: cfg.Log}},
		Queues:               queues,
		Workers:              workers,
		PeriodicJobs:         periodic(cfg),
		RescueStuckJobsAfter: RescueStuckJobsAfter,
	})
}

// NewInsertClient returns a River client that only enqueues jobs (the API
// uses it to insert jobs in the same transaction as the change causing them).
// A job inserted with a context carrying a request id (requestid.With)
// carries it in its metadata.
func NewInsertClient(st *storage.Store) (*storage.JobClient, error) {
	return st.NewJobClient(&river.Config{
		Middleware: []rivertype.Middleware{&requestIDs{log: requestid.Logger(nil)}},
	})
}

// JobKinds lists the kinds of the jobs a client built from cfg works, as
// addWorkers registers them.
func JobKinds(cfg Config) []string {
	var kinds []string
	if cfg.Syncer != nil {
		kinds = append(kinds, jobargs.SyncConnection{}.Kind())
	}
	kinds = append(kinds, ScheduleSyncs{}.Kind(), jobargs.ApplyRules{}.Kind())
	if cfg.Destinations != nil {
		kinds = append(kinds, jobargs.DeliverDestination{}.Kind())
	}
	if cfg.Webhooks != nil {
		kinds = append(kinds, jobargs.DeliverWebhook{}.Kind())
	}
	return kinds
}

// addWorkers registers every worker; each job kind adds one line here (and
// one in JobKinds).
func addWorkers(workers *river.Workers, cfg Config) error {
	if cfg.Syncer != nil {
		if timeout := syncJobTimeout(cfg.Syncer.slice()); timeout >= RescueStuckJobsAfter {
			return fmt.Errorf("sync slice %s: its job timeout %s must stay below the rescue of %s", cfg.Syncer.slice(), timeout, RescueStuckJobsAfter)
		}
		river.AddWorker(workers, &SyncWorker{Syncer: cfg.Syncer, Stopping: cfg.Stopping})
	}
	river.AddWorker(workers, &ScheduleWorker{Store: cfg.Store})
	river.AddWorker(workers, newApplyRulesWorker(cfg))
	addDeliverWorker(workers, cfg)
	addWebhookWorker(workers, cfg)
	return nil
}

func periodic(cfg Config) []*river.PeriodicJob {
	if !cfg.Periodic {
		return nil
	}
	return periodicJobs()
}
