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

// TestBreakerStatesAcrossProcesses checks what a connection's breaker
// shows from the reports of several worker processes: the worst recent
// state, the institution's breaker as well as the provider's, an open
// breaker past its open period as half-open, and reports long older than
// the latest one ignored.
func TestBreakerStatesAcrossProcesses(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	fx := storagetest.NewFixtures(t, pool)
	st := storage.New(pool)
	ctx := context.Background()
	u := fx.User(domain.PlanPro, true)
	id := fx.Connection(u.ID, "plaid", "active")
	if _, err := pool.Exec(ctx, `UPDATE bank_connections SET institution_id = 'ins_3' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	conn, err := st.GetConnectionAnyUser(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	show := func() string {
		t.Helper()
		h, err := st.GetConnectionHealth(ctx, []domain.BankConnection{conn})
		if err != nil {
			t.Fatal(err)
		}
		return h[id].Breaker
	}
	save := func(holder uuid.UUID, r storage.BreakerReport) {
		t.Helper()
		r.Provider = "plaid"
		if err := st.SaveBreakerStates(ctx, holder, []storage.BreakerReport{r}); err != nil {
			t.Fatal(err)
		}
	}
	a, b := uuid.New(), uuid.New()
	if got := show(); got != storage.BreakerClosed {
		t.Fatalf("no reports: %s", got)
	}
	save(a, storage.BreakerReport{State: storage.BreakerClosed})
	save(b, storage.BreakerReport{State: storage.BreakerOpen, RetryAfter: time.Minute, ConsecutiveFailures: 5})
	if got := show(); got != storage.BreakerOpen {
		t.Fatalf("one process open, one closed: %s", got)
	}
	save(b, storage.BreakerReport{State: storage.BreakerClosed})
	save(a, storage.BreakerReport{InstitutionID: "ins_9", State: storage.BreakerOpen, RetryAfter: time.Minute})
	if got := show(); got != storage.BreakerClosed {
		t.Fatalf("another institution's breaker open: %s", got)
	}
	save(a, storage.BreakerReport{InstitutionID: "ins_3", State: storage.BreakerOpen, RetryAfter: 10 * time.Millisecond})
	time.Sleep(50 * time.Millisecond)
	if got := show(); got != storage.BreakerHalfOpen {
		t.Fatalf("institution breaker past its open period: %s", got)
	}
	// A report made long before the latest one no longer counts.
	if _, err := pool.Exec(ctx, `UPDATE provider_breakers SET updated_at = now() - interval '1 hour' WHERE institution_id = 'ins_3'`); err != nil {
		t.Fatal(err)
	}
	save(b, storage.BreakerReport{InstitutionID: "ins_3", State: storage.BreakerClosed})
	if got := show(); got != storage.BreakerClosed {
		t.Fatalf("stale report of another process: %s", got)
	}
}
