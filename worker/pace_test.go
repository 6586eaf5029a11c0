package worker_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
)

// TestPacedSyncsShareTheWriteRate: two first syncs on two workers (two
// Syncers) share one write budget: together they take at least as long as
// the budget allows for their rows, and each stores exactly what an
// unpaced sync stores.
func TestPacedSyncsShareTheWriteRate(t *testing.T) {
	e := newSyncEnv(t)
	const rows, rate = 1000, 300
	var whole, paced []domain.BankConnection
	for _, name := range []string{"paced-a", "paced-b"} {
		key, err := allsim.CredentialKey("plaid", allsim.Credentials("plaid", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.sim.SetConnection(sim.ConnectionSettings{Provider: "plaid", Credential: key, Transactions: rows, HistoryDays: 120}); err != nil {
			t.Fatal(err)
		}
		w := e.connect("plaid", name)
		e.mustSync(w)
		whole = append(whole, w)
		paced = append(paced, e.connect("plaid", name))
	}
	stored := e.count(`SELECT count(*) FROM transactions WHERE bank_connection_id = ANY($1)`, []any{whole[0].ID, whole[1].ID})

	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, len(paced))
	for i, c := range paced {
		syncer := *e.syncer // one worker each
		syncer.WriteRate = rate
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = syncer.Sync(context.Background(), c.ID)
		}()
	}
	wg.Wait()
	took := time.Since(start)
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// The budget banks one second of rows; the rest comes at the rate.
	if least := time.Duration(float64(stored-rate) / rate * float64(time.Second)); took < least {
		t.Fatalf("%d rows stored in %v under a shared budget of %d rows/s: faster than the %v it allows", stored, took, rate, least)
	}
	for i := range paced {
		e.requireSameRows(whole[i], paced[i])
	}
}
