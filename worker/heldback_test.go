package worker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/worker"
)

// TestSpentSimpleFINQuotaHoldsTheSyncBack syncs a SimpleFIN connection
// with the provider's declared limits, counted in PostgreSQL, until its
// daily request quota is spent: the next sync calls nothing, records no
// failure and shows in the connection's health as held back for the
// provider's quota until about when the quota affords a call again; a sync
// that then runs clears the hold.
func TestSpentSimpleFINQuotaHoldsTheSyncBack(t *testing.T) {
	e := newSyncEnv(t)
	e.syncer.Now = e.sim.WallNow
	limited, err := worker.NewProviders(all.NewRegistry(), worker.ProviderOptions{Rates: e.st})
	if err != nil {
		t.Fatal(err)
	}
	unlimited := e.syncer.Providers
	e.syncer.Providers = limited
	c := e.connect("simplefin", "quota")
	ctx := context.Background()
	health := func() storage.ConnectionHealth {
		t.Helper()
		h, err := e.st.GetConnectionHealth(ctx, []domain.BankConnection{c})
		if err != nil {
			t.Fatal(err)
		}
		return h[c.ID]
	}
	// The quota's burst is 6 requests; a sync spends 2.
	held := -1
	for i := 0; i < 5 && held < 0; i++ {
		err := e.sync(c)
		switch {
		case err == nil:
			if h := health(); h.HeldBackUntil != nil || h.HeldBackReason != nil {
				t.Fatalf("sync %d ran but the connection shows a hold: %+v", i, h)
			}
		case isSnooze(err):
			held = i
		default:
			t.Fatalf("sync %d: %v", i, err)
		}
	}
	if held != 3 {
		t.Fatalf("held back at sync %d, want the fourth (index 3)", held)
	}
	h := health()
	if h.HeldBackReason == nil || *h.HeldBackReason != storage.HeldBackProviderQuota || h.HeldBackUntil == nil {
		t.Fatalf("health after the quota was spent: %+v", h)
	}
	// 24 requests a day: one more is allowed within the hour.
	if d := time.Until(*h.HeldBackUntil); d <= 0 || d > time.Hour+time.Minute {
		t.Fatalf("held back until %s (in %s), want within the hour", h.HeldBackUntil, d)
	}
	if h.ConsecutiveFailures != 0 || e.connectionStatus(c) != domain.ConnectionActive {
		t.Fatalf("a held-back sync counted as a failure: %+v, status %s", h, e.connectionStatus(c))
	}

	// A sync that runs (here without limits) clears the hold.
	e.syncer.Providers = unlimited
	e.mustSync(c)
	if h := health(); h.HeldBackUntil != nil || h.HeldBackReason != nil {
		t.Fatalf("health after a sync ran: %+v, want no hold", h)
	}
}

// TestProviderRateLimitHoldsTheSyncBack: a provider's own 429 fails the
// attempt (recorded on the connection, as every provider error is) and
// holds the sync back for the provider's Retry-After, with reason
// rate_limit; the next sync that runs clears the hold.
func TestProviderRateLimitHoldsTheSyncBack(t *testing.T) {
	e := newSyncEnv(t)
	c := e.connect("stripe", "rate-limited")
	e.mustSync(c)
	if err := e.sim.SetFault(sim.Fault{Provider: "stripe", Mode: sim.FaultRateLimit}); err != nil {
		t.Fatal(err)
	}
	if err := e.sync(c); !isSnooze(err) {
		t.Fatalf("sync against a 429: %v, want a snooze", err)
	}
	ctx := context.Background()
	var reason *string
	var code string
	if err := e.pool.QueryRow(ctx, `SELECT held_back_reason, coalesce(last_provider_error_code, '') FROM bank_connections WHERE id = $1`,
		c.ID).Scan(&reason, &code); err != nil {
		t.Fatal(err)
	}
	if reason == nil || *reason != storage.HeldBackRateLimit || code == "" {
		t.Fatalf("after a 429: held back for %v, error code %q; want rate_limit and the provider's code", reason, code)
	}
	if err := e.sim.SetFault(sim.Fault{Provider: "stripe", Mode: sim.FaultNone}); err != nil {
		t.Fatal(err)
	}
	e.mustSync(c)
	if err := e.pool.QueryRow(ctx, `SELECT held_back_reason FROM bank_connections WHERE id = $1`, c.ID).Scan(&reason); err != nil {
		t.Fatal(err)
	}
	if reason != nil {
		t.Fatalf("held back for %s after a sync ran", *reason)
	}
}

// isSnooze reports whether err asks River to snooze the job.
func isSnooze(err error) bool {
	var s *rivertype.JobSnoozeError
	return errors.As(err, &s)
}
