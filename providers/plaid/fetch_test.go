package plaid

import (
	"testing"

	"github.com/finsync/finsync/providers/providertest"
)

// BenchmarkFetchSyncPage measures one 500-row /transactions/sync page end
// to end: the request to the simulator over HTTP, the simulator writing the
// page, and the adapter reading and decoding it (no mapping).
func BenchmarkFetchSyncPage(b *testing.B) {
	conn, client := providertest.SimConnection(b, Name, "bench", "", 42, 2000, 365)
	a := New(client).(*Adapter)
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
