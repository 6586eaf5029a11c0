package storage_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// TestLeaseRateTokensNeverGrantsTooMuch: many concurrent leases from two
// holders grant exactly the bucket's tokens, never more.
func TestLeaseRateTokensNeverGrantsTooMuch(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	fx := storagetest.NewFixtures(t, pool)
	user := fx.User(domain.PlanStandard, true).ID
	holders := []uuid.UUID{uuid.New(), uuid.New()}
	var granted atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(holder uuid.UUID) {
			defer wg.Done()
			for {
				g, err := fx.St.LeaseRateTokens(context.Background(), storage.RateLease{
					UserID: user, Name: "general|100/1h0m0s", Holder: holder,
					Capacity: 100, PerSecond: 1e-9, Want: 3, TTL: time.Minute,
				})
				if err != nil {
					t.Error(err)
					return
				}
				if g.Granted == 0 {
					return
				}
				granted.Add(int64(g.Granted))
			}
		}(holders[w%2])
	}
	wg.Wait()
	if n := granted.Load(); n != 100 {
		t.Fatalf("granted %d of a bucket of 100", n)
	}
}

// TestLeaseRateTokensCountsOtherLeases: a bucket never refills past its
// capacity minus the live leases of other holders; tokens kept in a renewed
// lease stay counted; an expired lease counts no more.
func TestLeaseRateTokensCountsOtherLeases(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	fx := storagetest.NewFixtures(t, pool)
	ctx := context.Background()
	user := fx.User(domain.PlanPro, true).ID
	a, b := uuid.New(), uuid.New()
	lease := func(holder uuid.UUID, want, unused, keep int, ttl time.Duration) storage.RateGrant {
		t.Helper()
		g, err := fx.St.LeaseRateTokens(ctx, storage.RateLease{
			UserID: user, Name: "general|1000/1m0s", Holder: holder,
			Capacity: 1000, PerSecond: 1e6, Want: want, Unused: unused, Keep: keep, TTL: ttl,
		})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	if g := lease(a, 20, 0, 0, time.Minute); g.Granted != 20 || g.Tokens != 980 {
		t.Fatalf("first lease: %+v", g)
	}
	// However fast the refill, b sees 1,000 minus a's 20.
	if g := lease(b, 0, 0, 0, time.Minute); g.Tokens != 980 {
		t.Fatalf("with a's lease live, the bucket holds %v, want 980", g.Tokens)
	}
	// a renews keeping 5 and taking 20 more: 25 held.
	if g := lease(a, 20, 0, 5, time.Minute); g.Granted != 20 || g.Tokens != 975 {
		t.Fatalf("renewal: %+v", g)
	}
	// a gives everything back: the bucket is whole again.
	if g := lease(a, 0, 25, 0, time.Minute); g.Tokens != 1000 {
		t.Fatalf("after giving back: %+v", g)
	}
	// A lease that expired counts no more.
	lease(a, 20, 0, 0, time.Millisecond)
	time.Sleep(10 * time.Millisecond)
	if g := lease(b, 0, 0, 0, time.Minute); g.Tokens != 1000 {
		t.Fatalf("with a's lease expired, the bucket holds %v, want 1000", g.Tokens)
	}
	var leases int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM rate_limit_leases WHERE user_id = $1`, user).Scan(&leases); err != nil {
		t.Fatal(err)
	}
	if leases != 0 {
		t.Fatalf("%d lease rows left, want none (expired and empty ones deleted)", leases)
	}
}

// TestNoteProviderQuotaLowerCountWins: within one quota window a late
// report never raises the count; a later window replaces it.
func TestNoteProviderQuotaLowerCountWins(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	st := storage.New(pool)
	ctx := context.Background()
	reset := time.Now().Add(10 * time.Hour).Truncate(time.Second)
	note := func(remaining int, reset time.Time) {
		t.Helper()
		if err := st.NoteProviderQuota(ctx, "gocardless", "acc-1", "balances", remaining, reset); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(remaining int, reset time.Time) {
		t.Helper()
		rem, at, known, err := st.GetProviderQuota(ctx, "gocardless", "acc-1", "balances")
		if err != nil || !known || rem != remaining || !at.Equal(reset) {
			t.Fatalf("quota %d until %v (known %v, %v), want %d until %v", rem, at, known, err, remaining, reset)
		}
	}
	if _, _, known, err := st.GetProviderQuota(ctx, "gocardless", "acc-1", "balances"); known || err != nil {
		t.Fatalf("unknown quota: known %v, %v", known, err)
	}
	note(2, reset)
	note(3, reset.Add(time.Second)) // an earlier call's answer, arriving late
	expect(2, reset.Add(time.Second))
	note(0, reset)
	expect(0, reset.Add(time.Second))
	next := reset.Add(24 * time.Hour)
	note(4, next) // the next day's window
	expect(4, next)
}

// BenchmarkLeaseRateTokens is one lease round trip (renewing a holder's
// lease of a pro budget), the database cost an active key pays per block.
func BenchmarkLeaseRateTokens(b *testing.B) {
	pool, _ := storagetest.NewDB(b)
	fx := storagetest.NewFixtures(b, pool)
	user := fx.User(domain.PlanPro, true).ID
	holder := uuid.New()
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := fx.St.LeaseRateTokens(ctx, storage.RateLease{
			UserID: user, Name: "general|1000/1m0s", Holder: holder,
			Capacity: 1000, PerSecond: 1e6, Want: 20, Unused: 20, TTL: 30 * time.Second,
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSpendProviderQuotaIsAtomic: workers spending one counted quota
// concurrently get exactly its limit per window, and a window over on the
// caller's clock starts anew.
func TestSpendProviderQuotaIsAtomic(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	st := storage.New(pool)
	ctx := context.Background()
	now := time.Date(2026, 6, 15, 10, 0, 0, 0, time.UTC)
	reset := now.Truncate(24 * time.Hour).Add(24 * time.Hour)
	var spent atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				ok, err := st.SpendProviderQuota(ctx, "acme", "acct-1", "transactions", 4, reset, now)
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					spent.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if spent.Load() != 4 {
		t.Fatalf("spent %d calls of a quota of 4", spent.Load())
	}
	if ok, err := st.SpendProviderQuota(ctx, "acme", "acct-2", "transactions", 4, reset, now); err != nil || !ok {
		t.Fatalf("another resource's quota: ok=%v err=%v", ok, err)
	}
	next := reset.Add(time.Hour)
	if ok, err := st.SpendProviderQuota(ctx, "acme", "acct-1", "transactions", 4, reset.Add(24*time.Hour), next); err != nil || !ok {
		t.Fatalf("the next day's window: ok=%v err=%v", ok, err)
	}
	rem, _, known, err := st.GetProviderQuota(ctx, "acme", "acct-1", "transactions")
	if err != nil || !known || rem != 3 {
		t.Fatalf("after one call of a new window: remaining %d known %v err %v, want 3", rem, known, err)
	}
}
