package worker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"github.com/finsync/finsync/jobargs"
	"github.com/finsync/finsync/rules"
	"github.com/finsync/finsync/storage"
)

// A rule job works for at most ruleJobSlice, then enqueues a job that
// continues the pass after the last batch it committed; ruleJobTimeout
// bounds one job (the slice and the batch in hand), below
// RescueStuckJobsAfter so that a killed worker's job is retried soon.
const (
	ruleJobSlice   = 30 * time.Second
	ruleJobTimeout = time.Minute
)

// ApplyRulesWorker runs jobargs.ApplyRules: it re-evaluates the user's
// active rules on every stored transaction of the user.
type ApplyRulesWorker struct {
	river.WorkerDefaults[jobargs.ApplyRules]
	// Store is the database.
	Store *storage.Store
	// Log receives one line per run; nil discards.
	Log *slog.Logger
	// BatchSize overrides storage.RuleBatchSize when positive.
	BatchSize int
	// Rules holds the compiled rules, each version compiled once across
	// batches and jobs; nil compiles every rule for every batch.
	Rules *rules.Cache
}

// newApplyRulesWorker builds the rule worker from the client's config,
// with its rule cache (cfg.Rules, or its own when nil).
func newApplyRulesWorker(cfg Config) *ApplyRulesWorker {
	cache := cfg.Rules
	if cache == nil {
		cache = rules.NewCache(rules.DefaultCacheSize)
	}
	return &ApplyRulesWorker{Store: cfg.Store, Log: cfg.Log, Rules: cache}
}

// Timeout lets the job run longer than River's default.
func (w *ApplyRulesWorker) Timeout(*river.Job[jobargs.ApplyRules]) time.Duration {
	return ruleJobTimeout
}

// Work applies the user's rules to their stored transactions from the
// job's keyset position on, for at most a slice; a pass that is not done
// then continues in a new job (re-applying rules is idempotent, so a job
// killed and retried from its own start gives the same result).
func (w *ApplyRulesWorker) Work(ctx context.Context, job *river.Job[jobargs.ApplyRules]) error {
	start := time.Now()
	var after *storage.Keyset
	if job.Args.AfterDate != "" {
		day, err := time.Parse(time.DateOnly, job.Args.AfterDate)
		if err != nil {
			return river.JobCancel(fmt.Errorf("apply rules: bad continuation date %q: %w", job.Args.AfterDate, err))
		}
		after = &storage.Keyset{Date: day, ID: job.Args.AfterID}
	}
	st, next, err := w.Store.ApplyRulesFrom(ctx, job.Args.UserID, w.BatchSize, after, start.Add(ruleJobSlice), w.Rules)
	if err != nil {
		return fmt.Errorf("apply rules of user %s: %w", job.Args.UserID, err)
	}
	if next != nil {
		client, err := storage.JobClientFromContext(ctx)
		if err != nil {
			return fmt.Errorf("continue rules of user %s: %w", job.Args.UserID, err)
		}
		cont := job.Args
		cont.AfterDate, cont.AfterID = next.Date.Format(time.DateOnly), next.ID
		if _, err := client.Insert(ctx, cont, nil); err != nil {
			return fmt.Errorf("continue rules of user %s: %w", job.Args.UserID, err)
		}
	}
	if w.Log != nil {
		w.Log.InfoContext(ctx, "rules applied", "user_id", job.Args.UserID, "rule_id", job.Args.RuleID,
			"transactions", st.Seen, "changed", st.Changed, "duration", time.Since(start))
	}
	return nil
}
