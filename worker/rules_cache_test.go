package worker_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/finsync/finsync/jobargs"
	"github.com/finsync/finsync/rules"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/worker"
)

// runRuleJob runs one rule job of the world's user with the worker.
func (w *ruleWorld) runRuleJob(t testing.TB, rw *worker.ApplyRulesWorker) {
	t.Helper()
	job := &river.Job[jobargs.ApplyRules]{JobRow: &rivertype.JobRow{}, Args: jobargs.ApplyRules{UserID: w.user}}
	if err := rw.Work(context.Background(), job); err != nil {
		t.Fatal(err)
	}
}

// TestRuleJobCompilesEachVersionOnce runs rule jobs of one batch per
// transaction and checks that the worker's cache compiles each rule once
// per version across batches and jobs, and that a changed rule is
// compiled again and applied in its new version.
func TestRuleJobCompilesEachVersionOnce(t *testing.T) {
	w := newRuleWorld(t)
	coffee := w.rule(t, `[{"field":"Summary","operator":"matches","value":"(?i)coffee"}]`, hide, 10)
	w.rule(t, `[{"field":"Amount","operator":"gt","value":1000}]`, hide, 20)
	rw := &worker.ApplyRulesWorker{Store: storage.New(w.pool), BatchSize: 1, Rules: rules.NewCache(rules.DefaultCacheSize)}
	w.runRuleJob(t, rw) // 4 transactions: 5 batches
	w.runRuleJob(t, rw)
	if n := rw.Rules.Compilations(); n != 2 {
		t.Fatalf("2 rules over 2 jobs of 5 batches: %d compilations, want 2", n)
	}
	if got := w.hidden(t); !slices.Equal(got, []int{0, 2, 3}) {
		t.Fatalf("hidden %v, want [0 2 3]", got)
	}
	w.exec(t, `UPDATE rules SET conditions = '[{"field":"Summary","operator":"matches","value":"^Coffee"}]',
		updated_at = clock_timestamp() WHERE id = $1`, coffee)
	w.runRuleJob(t, rw)
	if n := rw.Rules.Compilations(); n != 3 {
		t.Fatalf("after one rule changed: %d compilations, want 3", n)
	}
	if got := w.hidden(t); !slices.Equal(got, []int{0, 2}) {
		t.Fatalf("hidden after the change %v, want [0 2]", got)
	}
}

// TestRuleJobIgnoresPastSaves checks that the rule job's work does not
// grow with the user's past rule saves: thousands of rules created and
// archived, and thousands of saves of an active rule, leave the job
// compiling only the active rules' current versions and reading the same
// rows (TestActiveRulesIgnoreArchived in storage checks the plan); the
// job's time with and without that history is in BENCHMARKS.md
// (BenchmarkRuleJobPastSaves).
func TestRuleJobIgnoresPastSaves(t *testing.T) {
	w := newRuleWorld(t)
	w.rule(t, `[{"field":"Summary","operator":"contains","value":"coffee"}]`, hide, 10)
	saved := w.rule(t, `[{"field":"Amount","operator":"gt","value":1000}]`, hide, 20)
	rw := &worker.ApplyRulesWorker{Store: storage.New(w.pool), BatchSize: 1, Rules: rules.NewCache(rules.DefaultCacheSize)}
	w.runRuleJob(t, rw)
	before := rw.Rules.Compilations()
	pastSaves(t, w, saved, 3000)
	rw.Rules = rules.NewCache(rules.DefaultCacheSize)
	w.runRuleJob(t, rw)
	if n := rw.Rules.Compilations(); n != before {
		t.Fatalf("after 3000 past saves: %d compilations, want %d as before", n, before)
	}
	if got := w.hidden(t); !slices.Equal(got, []int{0, 2, 3}) {
		t.Fatalf("hidden %v, want [0 2 3]", got)
	}
}

// pastSaves gives the world's user n rules created and archived and n
// saves of the active rule saved.
func pastSaves(t testing.TB, w *ruleWorld, saved any, n int) {
	t.Helper()
	ctx := context.Background()
	if _, err := w.pool.Exec(ctx, `INSERT INTO rules (user_id, conditions, outcomes, priority, archived_at)
		SELECT $1, '[{"field":"Summary","operator":"contains","value":"x"}]', $2, 1 + i % 100, now()
		FROM generate_series(1, $3) i`, w.user, hide, n); err != nil {
		t.Fatal(err)
	}
	for i := range n / 100 {
		if _, err := w.pool.Exec(ctx, `UPDATE rules SET priority = $2, updated_at = clock_timestamp() WHERE id = $1`, saved, 20+i%2); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.pool.Exec(ctx, `UPDATE rules SET priority = 20, updated_at = clock_timestamp() WHERE id = $1`, saved); err != nil {
		t.Fatal(err)
	}
	if _, err := w.pool.Exec(ctx, `ANALYZE rules`); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkRuleJobPastSaves measures one rule job over a
// user's 4 transactions with 2 active rules, one batch per transaction, without and with 20,000 past
// saves (rules created and archived, and saves of an active rule).
//
//	go test ./worker -run '^$' -bench RuleJobPastSaves
func BenchmarkRuleJobPastSaves(b *testing.B) {
	for _, saves := range []int{0, 20000} {
		b.Run(fmt.Sprintf("saves=%d", saves), func(b *testing.B) {
			w := newRuleWorld(b)
			w.rule(b, `[{"field":"Summary","operator":"contains","value":"coffee"}]`, hide, 10)
			saved := w.rule(b, `[{"field":"Amount","operator":"gt","value":1000}]`, hide, 20)
			if saves > 0 {
				pastSaves(b, w, saved, saves)
			}
			rw := &worker.ApplyRulesWorker{Store: storage.New(w.pool), BatchSize: 1, Rules: rules.NewCache(rules.DefaultCacheSize)}
			for b.Loop() {
				w.runRuleJob(b, rw)
			}
		})
	}
}

// TestStoredPatternsCompileWhateverTheEstimate stores, directly in the
// database, rules whose patterns were accepted before the size estimate
// existed: (?:a*b){600} (1,802 instructions) and (?:(?:)*a){800}
// (estimated 3,202, compiled 1,602, over the estimate a client's rule is
// held to). The rule job (which compiles stored rules as a sync batch
// does: storage's compileStored) and a preview of that user still compile
// them and apply the user's other rule.
func TestStoredPatternsCompileWhateverTheEstimate(t *testing.T) {
	w := newRuleWorld(t)
	w.rule(t, `[{"field":"Summary","operator":"matches","value":"(?:a*b){600}"}]`, hide, 10)
	w.rule(t, `[{"field":"Summary","operator":"matches","value":"(?:(?:)*a){800}"}]`, hide, 11)
	w.rule(t, `[{"field":"Summary","operator":"is","value":"Salary"}]`, hide, 20)
	cache := rules.NewCache(rules.DefaultCacheSize)
	rw := &worker.ApplyRulesWorker{Store: storage.New(w.pool), BatchSize: 2, Rules: cache}
	w.runRuleJob(t, rw)
	if got := w.hidden(t); !slices.Equal(got, []int{2}) {
		t.Fatalf("rule job: hidden %v, want [2]", got)
	}
	ctx := context.Background()
	def := []byte(`{"conditions":[{"field":"Summary","operator":"contains","value":"coffee"}],"outcomes":` + hide + `,"priority":15}`)
	pv, err := previewDef(ctx, storage.New(w.pool), storage.Scope{UserID: w.user}, def)
	if err != nil {
		t.Fatalf("preview: %v", err)
	}
	if pv.Count != 2 {
		t.Fatalf("preview: %d changes, want the 2 coffee transactions", pv.Count)
	}
}

// previewDef previews a rule given as JSON, compiled under ctx as the API
// compiles it, with the store's PreviewRule.
func previewDef(ctx context.Context, st *storage.Store, sc storage.Scope, def []byte) (storage.Preview, error) {
	rule, err := rules.CompileJSONContext(ctx, def, rules.Meta{})
	if err != nil {
		return storage.Preview{}, err
	}
	return st.PreviewRule(ctx, sc, rule, nil, nil, storage.Keyset{}, 50)
}
