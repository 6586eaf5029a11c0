package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/storage"
)

// finishedLines collects the "sync finished" lines a Syncer logs.
type finishedLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (f *finishedLines) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.buf.Write(p)
}

// take returns the lines logged since the last take, decoded.
func (f *finishedLines) take(t *testing.T) []map[string]any {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []map[string]any
	dec := json.NewDecoder(&f.buf)
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		if m["msg"] == "sync finished" {
			out = append(out, m)
		}
	}
	f.buf.Reset()
	return out
}

// TestSyncHistoryRecordsEachSync: a successful sync and a failed one each
// leave one row in the connection's history, counted as the sync's own
// report counts it (its "sync finished" line): the first sync's rows added
// are the rows stored, a later one's rows are the changes it made, and a
// failure keeps the provider's error with what it stored (nothing).
func TestSyncHistoryRecordsEachSync(t *testing.T) {
	e := newSyncEnv(t)
	logs := &finishedLines{}
	e.syncer.Log = slog.New(slog.NewJSONHandler(logs, nil))
	c := e.connect("plaid", "history")
	ctx := context.Background()
	history := func() []storage.SyncRecord {
		t.Helper()
		h, err := e.st.ListSyncHistory(ctx, c.ID, storage.SyncHistoryKept)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	// sameAsReport fails unless r counts what the report line says.
	sameAsReport := func(r storage.SyncRecord, line map[string]any) {
		t.Helper()
		num := func(k string) int64 { v, _ := line[k].(float64); return int64(v) }
		if r.Pages != num("pages") || r.Changes.Added != num("added") || r.Changes.Modified != num("modified") ||
			r.Changes.Removed != num("removed") || r.Outcome != line["outcome"] {
			t.Fatalf("history row %+v, report %v", r, line)
		}
		if d := r.Duration().Milliseconds() - num("duration_ms"); d < -50 || d > 50 {
			t.Fatalf("history row lasted %s, the report %d ms", r.Duration(), num("duration_ms"))
		}
	}

	before := time.Now()
	e.mustSync(c)
	h, lines := history(), logs.take(t)
	stored := e.count(`SELECT count(*) FROM transactions WHERE bank_connection_id = $1`, c.ID)
	if len(h) != 1 || len(lines) != 1 {
		t.Fatalf("after one sync: %d history rows, %d report lines", len(h), len(lines))
	}
	first := h[0]
	sameAsReport(first, lines[0])
	if !first.Succeeded() || first.ErrorCode != "" || first.ErrorMessage != "" || first.Pages == 0 ||
		first.Changes != (storage.RowChanges{Added: int64(stored)}) {
		t.Fatalf("first sync's row %+v, with %d rows stored", first, stored)
	}
	if first.StartedAt.Before(before.Add(-time.Second)) || first.FinishedAt.After(time.Now().Add(time.Second)) || first.FinishedAt.Before(first.StartedAt) {
		t.Fatalf("first sync ran %s to %s, the test from %s", first.StartedAt, first.FinishedAt, before)
	}

	// A later sync that posts pending rows and removes others.
	if err := e.sim.Advance(5); err != nil {
		t.Fatal(err)
	}
	e.mustSync(c)
	h, lines = history(), logs.take(t)
	if len(h) != 2 || len(lines) != 1 {
		t.Fatalf("after two syncs: %d history rows, %d report lines", len(h), len(lines))
	}
	sameAsReport(h[0], lines[0])
	if !h[0].Succeeded() || h[0].Changes.Removed == 0 || h[0].Changes.Added == 0 || !h[0].StartedAt.After(first.StartedAt) {
		t.Fatalf("second sync's row %+v", h[0])
	}

	// A failure: the provider wants the user.
	if err := e.sim.SetFault(sim.Fault{Provider: "plaid", Mode: sim.FaultLoginRequired}); err != nil {
		t.Fatal(err)
	}
	if err := e.sync(c); err == nil {
		t.Fatal("sync succeeded while the provider wants the user")
	}
	h, lines = history(), logs.take(t)
	if len(h) != 3 || len(lines) != 1 {
		t.Fatalf("after the failure: %d history rows, %d report lines", len(h), len(lines))
	}
	failed := h[0]
	sameAsReport(failed, lines[0])
	conn, err := e.st.GetConnectionAnyUser(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if failed.Outcome != "reauth_required" || failed.ErrorCode != "ITEM_LOGIN_REQUIRED" || conn.LastProviderErrorCode == nil ||
		failed.ErrorCode != *conn.LastProviderErrorCode || conn.LastProviderErrorMessage == nil ||
		failed.ErrorMessage != *conn.LastProviderErrorMessage || failed.Pages != 0 || failed.Changes != (storage.RowChanges{}) {
		t.Fatalf("failed sync's row %+v, connection's error %v %v", failed, conn.LastProviderErrorCode, conn.LastProviderErrorMessage)
	}
}
