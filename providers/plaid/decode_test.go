package plaid

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/internal/wire"
	"github.com/finsync/finsync/providers/providertest"
)

func recordingSuite() providertest.Suite {
	return providertest.Suite{
		Provider: Name,
		New:      func(c *http.Client) providers.Provider { return New(c) },
	}
}

// TestDecodeAgreesWithEncodingJSON decodes every answer the simulator
// gives the adapter into the adapter's own types, with wire.Decode and with
// encoding/json, and requires the same values.
func TestDecodeAgreesWithEncodingJSON(t *testing.T) {
	providertest.CheckDecoding(t, recordingSuite(), 1500, []string{"/accounts/get", "/liabilities/get", "/transactions/sync", "/investments/holdings/get", "/investments/transactions/get"}, answerKind, answerType)
}

// answerKind names the kind of answer at path.
func answerKind(path string) string { return path }

// answerType is a fresh value of the type the adapter decodes an answer
// of kind into (nil: unknown).
func answerType(kind string) any {
	switch kind {
	case "/accounts/get":
		return new(accountsResponse)
	case "/liabilities/get":
		return new(liabilitiesResponse)
	case "/transactions/sync":
		return new(syncResponse)
	case "/investments/holdings/get":
		return new(holdingsResponse)
	case "/investments/transactions/get":
		return new(investmentTransactionsResponse)
	}
	return nil
}

// syncPage returns one full /transactions/sync answer (SyncPageSize added
// rows) as the simulator sends it.
func syncPage(tb testing.TB) *wire.Response {
	tb.Helper()
	r := providertest.FirstPage(tb, recordingSuite(), 2000, func(path string) bool { return path == "/transactions/sync" })
	var resp syncResponse
	if err := json.Unmarshal(r.Body, &resp); err != nil {
		tb.Fatal(err)
	}
	if len(resp.Added) != SyncPageSize {
		tb.Fatalf("sync page has %d added rows, want %d", len(resp.Added), SyncPageSize)
	}
	return r
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
