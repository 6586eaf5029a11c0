package providertest

import (
	"context"
	"testing"

	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/resilience"
)

func testInstitutionDown(t *testing.T, s Suite) {
	e := newEnv(t, s, "instdown", 0)
	ctx := context.Background()
	set := e.accounts(ctx)
	e.conn.InstitutionID = set.Institution.ID
	if e.conn.InstitutionID == "" {
		t.Fatal("no institution id")
	}
	// Another connection at another institution.
	var other providers.Connection
	for i := 0; i < 50 && other.InstitutionID == ""; i++ {
		c := connection(s, e.srv.URL, "instdown-other-"+string(rune('a'+i%26))+string(rune('a'+i/26)))
		if oset, err := e.p.Accounts(ctx, c); err == nil && oset.Institution.ID != e.conn.InstitutionID {
			c.InstitutionID = oset.Institution.ID
			other = c
		}
	}
	if other.InstitutionID == "" {
		t.Fatal("no connection at a second institution")
	}
	e.fault(sim.FaultInstitutionDown, func(f *sim.Fault) { f.InstitutionID = e.conn.InstitutionID })
	r := resilient(e)
	var opened *resilience.Error
	for i := 0; i < 5 && opened == nil; i++ {
		_, err := r.Accounts(ctx, e.conn)
		if pe := wantClass(t, err, resilience.Unavailable); pe.Code == resilience.CodeCircuitOpen {
			opened = pe
		} else if pe.InstitutionID == "" {
			t.Fatalf("institution outage without institution: %v", pe)
		}
	}
	if opened == nil || opened.InstitutionID != e.conn.InstitutionID {
		t.Fatalf("institution breaker did not open: %v", opened)
	}
	if _, err := r.Accounts(ctx, other); err != nil {
		t.Fatalf("one bank's outage stopped another: %v", err)
	}
	if st := r.States()[0]; st.State != "closed" {
		t.Fatalf("provider breaker %+v", st)
	}
}

// syncUntil runs Transactions from cursor, applying pages, until the
// predicate holds for the page just applied or the sync is done.
func (e *env) step(ctx context.Context, cursor string, st *Store) providers.TransactionPage {
	e.t.Helper()
	page, err := e.p.Transactions(ctx, e.conn, providers.TransactionRequest{Cursor: cursor, PendingIDs: st.PendingIDs(), Today: e.today()})
	if err != nil {
		e.t.Fatalf("Transactions: %v", err)
	}
	st.Apply(page)
	return page
}

func testMutation(t *testing.T, s Suite) {
	e := newEnv(t, s, "mutation", 0)
	e.size(1500)
	ctx := context.Background()
	e.accounts(ctx)
	st := NewStore()
	first := e.step(ctx, "", st)
	if first.Done {
		t.Fatal("want several pages")
	}
	e.fault(sim.FaultMutation, nil)
	restart := e.step(ctx, first.Next, st)
	if len(restart.Upserts) != 0 || restart.Done {
		t.Fatalf("mutation: want an empty restart page, got %d upserts, done=%v", len(restart.Upserts), restart.Done)
	}
	final, _ := e.sync(ctx, restart.Next, st)
	if len(st.Tx) < 700 {
		t.Errorf("after restart stored %d transactions", len(st.Tx))
	}
	// Nothing is missing: a fresh walk finds the same set.
	fresh := NewStore()
	e.sync(ctx, "", fresh)
	for id := range fresh.Tx {
		if _, ok := st.Tx[id]; !ok {
			t.Errorf("restarted walk missed %s", id)
		}
	}
	_ = final
}

func testAdvanceMidLoop(t *testing.T, s Suite) {
	e := newEnv(t, s, "midloop", 0)
	e.size(1500)
	ctx := context.Background()
	e.accounts(ctx)
	st := NewStore()
	first := e.step(ctx, "", st)
	if first.Done {
		t.Fatal("want several pages")
	}
	if err := e.sim.Advance(1); err != nil {
		t.Fatal(err)
	}
	e.sync(ctx, first.Next, st)
	fresh := NewStore()
	e.sync(ctx, "", fresh)
	for id, tx := range fresh.Tx {
		got, ok := st.Tx[id]
		if !ok || describe(got) != describe(tx) {
			t.Errorf("after a mid-loop advance: %s differs from a fresh walk", id)
		}
	}
	if len(st.Tx) != len(fresh.Tx) {
		t.Errorf("stored %d transactions, a fresh walk %d", len(st.Tx), len(fresh.Tx))
	}
}
