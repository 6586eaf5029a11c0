package worker_test

import (
	"context"
	"errors"
	"testing"

	"github.com/riverqueue/river"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers/sim"
)

// TestLoginRequiredWithoutReconnectURLRecordsNull: with no reconnect page
// configured (FINSYNC_RECONNECT_URL unset), a connection that needs
// re-linking records its error and a null reconnectUrl, not a link to a
// page nobody serves.
func TestLoginRequiredWithoutReconnectURLRecordsNull(t *testing.T) {
	e := newSyncEnv(t)
	e.syncer.ReconnectURL = ""
	c := e.connect("plaid", "login-no-page")
	if err := e.sim.SetFault(sim.Fault{Provider: "plaid", Mode: sim.FaultLoginRequired}); err != nil {
		t.Fatal(err)
	}
	var cancelErr *river.JobCancelError
	if err := e.sync(c); !errors.As(err, &cancelErr) {
		t.Fatalf("want a cancelled job, got %v", err)
	}
	got, err := e.st.GetConnectionAnyUser(context.Background(), c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != domain.ConnectionError || got.LastProviderErrorCode == nil || *got.LastProviderErrorCode != "ITEM_LOGIN_REQUIRED" ||
		got.ReconnectURL != nil {
		t.Fatalf("connection: %+v", got)
	}
}
