package storage_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// TestReserveSyncRowsSharesOneBudget: two stores on separate pools (two
// workers) draw on one budget; the banked burst is free, then each
// reservation waits for the debt that all reservations before it left.
func TestReserveSyncRowsSharesOneBudget(t *testing.T) {
	pool, url := storagetest.NewDB(t)
	other, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	a, b := storage.New(pool), storage.New(other)
	ctx := context.Background()
	const rate, burst = 100, 100
	// Each wait is checked against what refilled between the first
	// reservation and the one checked.
	start := time.Now()
	near := func(wait, want time.Duration) bool {
		return wait <= want && wait >= want-time.Since(start)
	}

	if wait, err := a.ReserveSyncRows(ctx, 100, rate, burst); err != nil || wait != 0 {
		t.Fatalf("the banked burst: wait %v, %v; want 0", wait, err)
	}
	wait, err := b.ReserveSyncRows(ctx, 50, rate, burst)
	if err != nil {
		t.Fatal(err)
	}
	if !near(wait, 500*time.Millisecond) {
		t.Fatalf("50 rows after the burst, on the other worker: wait %v, want about 0.5 s", wait)
	}
	wait, err = a.ReserveSyncRows(ctx, 50, rate, burst)
	if err != nil {
		t.Fatal(err)
	}
	if !near(wait, time.Second) {
		t.Fatalf("50 more rows: wait %v, want about 1 s (the debt of both)", wait)
	}
	if wait, err := a.ReserveSyncRows(ctx, 500, 0, 0); err != nil || wait != 0 {
		t.Fatalf("no rate: wait %v, %v; want 0", wait, err)
	}
}
