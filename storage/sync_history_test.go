package storage_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// TestSyncHistoryKeepsTheNewest: the history of a connection keeps its
// newest storage.SyncHistoryKept syncs, newest first, whatever order they
// were written in; another connection's history is its own; an error
// message is cut, a success keeps no error, and a sync of a connection that
// no longer exists records nothing.
func TestSyncHistoryKeepsTheNewest(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	fx := storagetest.NewFixtures(t, pool)
	st := storage.New(pool)
	ctx := context.Background()
	u := fx.User(domain.PlanPro, true)
	conn, other := fx.Connection(u.ID, "plaid", "active"), fx.Connection(u.ID, "mercury", "active")
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	const written = storage.SyncHistoryKept + 15
	for i := range written {
		// Written in an order that is not the start order: the oldest
		// starts are written last.
		n := (i + 20) % written
		r := storage.SyncRecord{StartedAt: base.Add(time.Duration(n) * time.Minute), FinishedAt: base.Add(time.Duration(n)*time.Minute + time.Duration(n)*time.Second),
			Pages: int64(n), Changes: storage.RowChanges{Added: int64(n), Modified: 1, Removed: 2}, Outcome: storage.SyncOutcomeOK, ErrorMessage: "ignored"}
		if n%10 == 0 {
			r.Outcome, r.ErrorCode, r.ErrorMessage = "unavailable", "PROVIDER_DOWN", strings.Repeat("é", 3000)
		}
		if err := st.RecordSync(ctx, conn, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.RecordSync(ctx, other, storage.SyncRecord{StartedAt: base, FinishedAt: base, Outcome: storage.SyncOutcomeOK}); err != nil {
		t.Fatal(err)
	}
	var kept int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM sync_history WHERE bank_connection_id = $1`, conn).Scan(&kept); err != nil {
		t.Fatal(err)
	}
	if kept != storage.SyncHistoryKept {
		t.Fatalf("%d rows kept of %d written, want %d", kept, written, storage.SyncHistoryKept)
	}
	got, err := st.ListSyncHistory(ctx, conn, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != storage.SyncHistoryKept {
		t.Fatalf("history lists %d syncs, want %d", len(got), storage.SyncHistoryKept)
	}
	for i, r := range got {
		n := written - 1 - i
		if !r.StartedAt.Equal(base.Add(time.Duration(n)*time.Minute)) || r.Duration() != time.Duration(n)*time.Second || r.Pages != int64(n) ||
			r.Changes != (storage.RowChanges{Added: int64(n), Modified: 1, Removed: 2}) {
			t.Fatalf("history[%d] = %+v, want the sync started %d minutes in", i, r, n)
		}
		if r.Succeeded() != (n%10 != 0) {
			t.Fatalf("history[%d]: outcome %q", i, r.Outcome)
		}
		if r.Succeeded() && (r.ErrorCode != "" || r.ErrorMessage != "") {
			t.Fatalf("a success keeps an error: %+v", r)
		}
		if !r.Succeeded() && (r.ErrorCode != "PROVIDER_DOWN" || len(r.ErrorMessage) > 2000+len("…") || !strings.HasSuffix(r.ErrorMessage, "é…")) {
			t.Fatalf("a failure's error: %q, %d bytes ending %q", r.ErrorCode, len(r.ErrorMessage), r.ErrorMessage[len(r.ErrorMessage)-8:])
		}
	}
	if h, err := st.ListSyncHistory(ctx, other, 10); err != nil || len(h) != 1 {
		t.Fatalf("the other connection's history: %d rows (%v)", len(h), err)
	}
	if h, err := st.ListSyncHistory(ctx, conn, 3); err != nil || len(h) != 3 || !h[0].StartedAt.Equal(got[0].StartedAt) {
		t.Fatalf("history limited to 3: %+v (%v)", h, err)
	}
	gone := uuid.New()
	if err := st.RecordSync(ctx, gone, storage.SyncRecord{StartedAt: base, FinishedAt: base, Outcome: storage.SyncOutcomeOK}); err != nil {
		t.Fatalf("sync of a deleted connection: %v", err)
	}
	if h, err := st.ListSyncHistory(ctx, gone, 10); err != nil || len(h) != 0 {
		t.Fatalf("a deleted connection's history: %d rows (%v)", len(h), err)
	}
	// Deleting a connection deletes its history (a trigger: no foreign key
	// pins the connections' key), and only its.
	if _, err := pool.Exec(ctx, `DELETE FROM bank_connections WHERE id = $1`, conn); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM sync_history WHERE bank_connection_id = $1`, conn).Scan(&left); err != nil || left != 0 {
		t.Fatalf("the deleted connection's history: %d rows left (%v)", left, err)
	}
	if h, err := st.ListSyncHistory(ctx, other, 10); err != nil || len(h) != 1 {
		t.Fatalf("the other connection's history after the delete: %d rows (%v)", len(h), err)
	}
}
