package worker_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simkit"
	"github.com/finsync/finsync/storage"
)

// reauthOnPage re-auths a connection (new credentials, stored as
// `connections reauth` stores them) while the sync it wraps asks for a
// given page of transactions.
type reauthOnPage struct {
	providers.Provider
	page  int64
	calls atomic.Int64
	do    func()
}

func (r *reauthOnPage) Transactions(ctx context.Context, c providers.Connection, req providers.TransactionRequest) (providers.TransactionPage, error) {
	if r.calls.Add(1) == r.page {
		r.do()
	}
	return r.Provider.Transactions(ctx, c, req)
}

// TestReauthDuringASyncKeepsTheNewLink: a re-auth that lands while a
// sync with the old credentials runs is not undone by it: the old run's
// next batch (and its outcome) is not stored, so it cannot put back the
// old link's cursor the re-auth reset; the sync then runs with the new
// credentials from the start of the new link, matching the re-issued rows
// to the stored ones: no duplicate, and the cursor is the new link's.
func TestReauthDuringASyncKeepsTheNewLink(t *testing.T) {
	e := newSyncEnv(t)
	ctx := context.Background()
	name := "reauth-race"
	key, err := allsim.CredentialKey("plaid", allsim.Credentials("plaid", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.sim.SetConnection(sim.ConnectionSettings{Provider: "plaid", Credential: key, Transactions: 3000, HistoryDays: 90}); err != nil {
		t.Fatal(err)
	}
	c := e.connect("plaid", name)
	relinked := allsim.Credentials("plaid", name+simkit.RelinkSeparator+"1")
	sealed, err := e.box.Seal(relinked)
	if err != nil {
		t.Fatal(err)
	}
	wrapped := &reauthOnPage{Provider: e.syncer.Providers["plaid"], page: 3, do: func() {
		// After the first batch is stored: the run the re-auth overtakes
		// then leaves rows of the old link behind and no finished sync,
		// so the next sync is still the connection's first, and must
		// match them rather than copy the new link's rows in beside them.
		for deadline := time.Now().Add(10 * time.Second); e.count(`SELECT count(*) FROM transactions WHERE bank_connection_id = $1`, c.ID) == 0; {
			if time.Now().After(deadline) {
				t.Error("the first batch was not stored within 10s")
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		if _, err := e.st.ReauthConnection(ctx, c.ID, sealed, ""); err != nil {
			t.Error(err)
		}
	}}
	e.syncer.Providers["plaid"] = wrapped
	err = e.sync(c)
	if !errors.Is(err, storage.ErrCredentialsChanged) {
		t.Fatalf("the sync the re-auth overtook: %v, want ErrCredentialsChanged", err)
	}
	cursor := func() (cur string, fresh bool) {
		t.Helper()
		if err := e.pool.QueryRow(ctx, `SELECT sync_cursor, credentials_encrypted = $2 FROM bank_connections WHERE id = $1`,
			c.ID, sealed).Scan(&cur, &fresh); err != nil {
			t.Fatal(err)
		}
		return cur, fresh
	}
	if cur, fresh := cursor(); cur != "" || !fresh {
		t.Fatalf("after the overtaken sync: cursor %q, new credentials stored %v; want the re-auth's empty cursor and its credentials", cur, fresh)
	}
	var before []uuid.UUID
	rows, err := e.pool.Query(ctx, `SELECT id FROM transactions WHERE bank_connection_id = $1`, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if before, err = pgx.CollectRows(rows, pgx.RowTo[uuid.UUID]); err != nil {
		t.Fatal(err)
	}
	stored := len(before)
	if stored == 0 {
		t.Fatal("the overtaken sync stored nothing; the test needs its first batch")
	}
	if wrapped.calls.Load() < 3 {
		t.Fatalf("the sync asked for %d pages; the re-auth came on the third", wrapped.calls.Load())
	}

	// The sync again, with the new link: every row matched, none twice.
	e.mustSync(c)
	if cur, _ := cursor(); cur == "" {
		t.Fatal("after the sync with the new credentials: no cursor")
	}
	// A fresh database syncing the new link alone stores the reference.
	ref := newSyncEnv(t)
	if err := ref.sim.SetConnection(sim.ConnectionSettings{Provider: "plaid", Credential: key, Transactions: 3000, HistoryDays: 90}); err != nil {
		t.Fatal(err)
	}
	rc := ref.connect("plaid", name+simkit.RelinkSeparator+"1")
	ref.mustSync(rc)
	const live = `SELECT count(*) FROM transactions WHERE bank_connection_id = $1 AND status <> 'deleted'`
	want := ref.count(live, rc.ID)
	if total := e.count(live, c.ID); total != want {
		t.Fatalf("after the re-linked sync: %d rows (%d before it), the new link alone stores %d", total, stored, want)
	}
	// The rows of the old link were matched, not replaced: they keep their
	// ids (a few the new link re-issues ambiguously are marked deleted, as
	// any re-link's unmatched rows are).
	if kept := e.count(live+` AND id = ANY($2)`, c.ID, before); kept < stored*9/10 {
		t.Fatalf("%d of the %d rows stored before the re-auth kept their ids", kept, stored)
	}
}
