package destinations_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/destinations"
	"github.com/finsync/finsync/destinations/destsim"
	"github.com/finsync/finsync/resilience"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// TestRateLimitHoldsAcrossDeliverers checks that a destination's rate
// limit is one budget for every process that delivers to it: two
// deliverers (two workers) sharing the database's buckets send, together,
// no more than the limit allows, and the calls past it are RateLimited
// without reaching the destination.
func TestRateLimitHoldsAcrossDeliverers(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	st := storage.New(pool)
	f := newFixture(t)
	limits := resilience.Limits{Provider: resilience.PerMinute(3, 3)}
	cfg := resilience.Config{Limits: &limits, Retries: -1, MaxLimiterWait: time.Millisecond}
	workers := []*destinations.Deliverer{
		destinations.NewDeliverer(destinations.Options{Guard: &cfg, Rates: st}),
		destinations.NewDeliverer(destinations.Options{Guard: &cfg, Rates: st}),
	}
	target := f.target(t, "airtable", fmt.Sprintf(`{"baseUrl":%q,"baseId":"a","table":"t","token":"pat"}`, f.url))
	ctx := context.Background()
	sent, limited := 0, 0
	for i := range 8 {
		err := workers[i%2].Deliver(ctx, target, event("account.created", uuid.NewString(), "X", "active"))
		switch pe := resilience.AsError(err); {
		case err == nil:
			sent++
		case pe != nil && pe.Class == resilience.RateLimited:
			limited++
		default:
			t.Fatalf("delivery %d: %v", i, err)
		}
	}
	if sent != 3 || limited != 5 {
		t.Fatalf("%d sent and %d rate limited by two deliverers, want 3 and 5 (a burst of 3 for both together)", sent, limited)
	}
	if got := len(f.sim.Requests(destsim.Airtable)); got != 3 {
		t.Fatalf("the destination received %d requests, want 3", got)
	}
}
