package storage_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// TestHeldBackSyncInHealth: a hold shows in the connection's health and in
// Holds with its reason and end (by the database's clock), only on that
// connection; a hold that has ended, or was released, shows nowhere; an
// unknown reason is refused by the schema.
func TestHeldBackSyncInHealth(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	fx := storagetest.NewFixtures(t, pool)
	st := storage.New(pool)
	ctx := context.Background()
	u := fx.User(domain.PlanPro, true)
	held, other := fx.Connection(u.ID, "simplefin", "active"), fx.Connection(u.ID, "plaid", "active")
	conns := make([]domain.BankConnection, 2)
	for i, id := range []uuid.UUID{held, other} {
		c, err := st.GetConnectionAnyUser(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	health := func() map[uuid.UUID]storage.ConnectionHealth {
		t.Helper()
		h, err := st.GetConnectionHealth(ctx, conns)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	for id, h := range health() {
		if h.HeldBackUntil != nil || h.HeldBackReason != nil {
			t.Fatalf("connection %s held back before any hold: %+v", id, h)
		}
	}

	before := time.Now()
	if err := st.HoldBack(ctx, held, time.Hour, storage.HeldBackProviderQuota); err != nil {
		t.Fatal(err)
	}
	h := health()
	got := h[held]
	if got.HeldBackUntil == nil || got.HeldBackReason == nil || *got.HeldBackReason != storage.HeldBackProviderQuota {
		t.Fatalf("health of the held connection: %+v", got)
	}
	if d := got.HeldBackUntil.Sub(before); d < 59*time.Minute || d > 61*time.Minute {
		t.Fatalf("held back until %s, want about an hour after %s", got.HeldBackUntil, before)
	}
	if o := h[other]; o.HeldBackUntil != nil || o.HeldBackReason != nil {
		t.Fatalf("the other connection shows a hold: %+v", o)
	}
	holds, err := st.ListHolds(ctx, []uuid.UUID{held, other})
	if err != nil {
		t.Fatal(err)
	}
	if len(holds) != 1 || holds[held].Reason != storage.HeldBackProviderQuota || !holds[held].Until.Equal(*got.HeldBackUntil) {
		t.Fatalf("holds %+v, want only the held connection's", holds)
	}

	// A new hold replaces the old one; a hold whose end has passed shows
	// nowhere.
	if err := st.HoldBack(ctx, held, 0, storage.HeldBackBreakerOpen); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	if g := health()[held]; g.HeldBackUntil != nil || g.HeldBackReason != nil {
		t.Fatalf("an ended hold shows: %+v", g)
	}
	if holds, err := st.ListHolds(ctx, []uuid.UUID{held}); err != nil || len(holds) != 0 {
		t.Fatalf("holds after the end: %v %v", holds, err)
	}

	// Released: nothing left in the row.
	if err := st.HoldBack(ctx, held, time.Minute, storage.HeldBackRateLimit); err != nil {
		t.Fatal(err)
	}
	if g := health()[held]; g.HeldBackReason == nil || *g.HeldBackReason != storage.HeldBackRateLimit {
		t.Fatalf("health after a rate-limit hold: %+v", g)
	}
	if err := st.ReleaseHold(ctx, held); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM bank_connections WHERE held_back_until IS NOT NULL OR held_back_reason IS NOT NULL`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d connections keep a hold after its release", n)
	}
	if err := st.HoldBack(ctx, held, time.Minute, "because"); err == nil {
		t.Fatal("a hold with an unknown reason was stored")
	}
}
