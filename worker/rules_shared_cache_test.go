package worker

import (
	"testing"

	"github.com/finsync/finsync/rules"
)

// TestRuleWorkerUsesTheGivenCache checks that the rule worker uses the
// cache of the client's config (the one the Syncer's Rules shares, so
// a worker process holds one bounded cache) and makes its own only
// without one.
func TestRuleWorkerUsesTheGivenCache(t *testing.T) {
	shared := rules.NewCache(rules.DefaultCacheSize)
	if w := newApplyRulesWorker(Config{Rules: shared}); w.Rules != shared {
		t.Fatal("the rule worker does not use the config's cache")
	}
	if w := newApplyRulesWorker(Config{}); w.Rules == nil || w.Rules == shared {
		t.Fatal("without a cache in the config, the rule worker has none of its own")
	}
}
