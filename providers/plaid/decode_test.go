package plaid

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/internal/wire"
	"github.com/finsync/finsync/providers/providertest"
)

func recordingSuite() providertest.Suite {
	return providertest.Suite{
		Provider: domain.ProviderPlaid,
		New:      func(c *http.Client) providers.Provider { return New(c) },
	}
}

// syncPage returns one full /transactions/sync answer (SyncPageSize added
// rows) as the simulator sends it.
func syncPage(tb testing.TB) *wire.Response {
	tb.Helper()
	rec := providertest.NewRecording(tb, recordingSuite(), 2000)
	if _, err := rec.Provider.Transactions(tb.Context(), rec.Conn, providers.TransactionRequest{}); err != nil {
		tb.Fatal(err)
	}
	for _, body := range rec.Recorder.Bodies() {
		if body.Path != "/transactions/sync" {
			continue
		}
		var resp syncResponse
		if err := json.Unmarshal(body.Data, &resp); err != nil {
			tb.Fatal(err)
		}
		if len(resp.Added) != SyncPageSize {
			tb.Fatalf("sync page has %d added rows, want %d", len(resp.Added), SyncPageSize)
		}
		return &wire.Response{Status: http.StatusOK, Body: body.Data}
	}
	tb.Fatal("no /transactions/sync answer recorded")
	return nil
}

// BenchmarkDecodeSyncPage measures decoding one 500-row /transactions/sync
// page, the sync worker's hottest decode.
func BenchmarkDecodeSyncPage(b *testing.B) {
	r := syncPage(b)
	b.SetBytes(int64(len(r.Body)))
	b.ReportAllocs()
	for b.Loop() {
		var resp syncResponse
		if err := wire.Decode(name, r, &resp); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*SyncPageSize), "ns/row")
}
