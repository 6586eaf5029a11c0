package plaid

import (
	"net/http/httptest"
	"testing"

	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/providertest"
	"github.com/finsync/finsync/providers/sim"
)

// BenchmarkFetchSyncPage measures one 500-row /transactions/sync page end
// to end: the request to the simulator over HTTP, the simulator writing the
// page, and the adapter reading and decoding it (no mapping).
func BenchmarkFetchSyncPage(b *testing.B) {
	sm := allsim.New(sim.Options{Seed: 42, Start: providertest.Start})
	srv := httptest.NewServer(sm)
	defer srv.Close()
	creds := allsim.Credentials(Name, "bench")
	key, err := allsim.CredentialKey(Name, creds)
	if err != nil {
		b.Fatal(err)
	}
	if err := sm.SetConnection(sim.ConnectionSettings{Provider: Name, Credential: key, Transactions: 2000, HistoryDays: 365}); err != nil {
		b.Fatal(err)
	}
	conn := providers.Connection{Provider: Name, BaseURL: srv.URL, Credentials: creds}
	a := New(srv.Client()).(*Adapter)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		body := map[string]any{
			"count":   SyncPageSize,
			"options": map[string]any{"include_original_description": true},
		}
		var resp syncResponse
		if err := a.post(ctx, conn, "/transactions/sync", body, &resp); err != nil {
			b.Fatal(err)
		}
		if len(resp.Added) != SyncPageSize {
			b.Fatalf("page has %d added rows, want %d", len(resp.Added), SyncPageSize)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*SyncPageSize), "ns/row")
}
