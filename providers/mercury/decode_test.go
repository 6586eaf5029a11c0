package mercury

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/internal/wire"
	"github.com/finsync/finsync/providers/providertest"
)

func recordingSuite() providertest.Suite {
	return providertest.Suite{
		Provider: domain.ProviderMercury,
		New:      func(c *http.Client) providers.Provider { return New(c) },
		BaseURL:  func(root string) string { return root + "/api/v1" },
	}
}

// transactionsPage returns one full /account/{id}/transactions answer
// (PageSize rows) as the simulator sends it.
func transactionsPage(tb testing.TB) *wire.Response {
	tb.Helper()
	rec := providertest.NewRecording(tb, recordingSuite(), 6000)
	if _, err := rec.Provider.Transactions(tb.Context(), rec.Conn, providers.TransactionRequest{}); err != nil {
		tb.Fatal(err)
	}
	for _, body := range rec.Recorder.Bodies() {
		if !strings.HasSuffix(body.Path, "/transactions") {
			continue
		}
		var resp transactionsResponse
		if err := json.Unmarshal(body.Data, &resp); err != nil {
			tb.Fatal(err)
		}
		if len(resp.Transactions) != PageSize {
			tb.Fatalf("transactions page has %d rows, want %d", len(resp.Transactions), PageSize)
		}
		return &wire.Response{Status: http.StatusOK, Body: body.Data}
	}
	tb.Fatal("no transactions answer recorded")
	return nil
}

// BenchmarkDecodeTransactionsPage measures decoding one 500-row account
// transactions page.
func BenchmarkDecodeTransactionsPage(b *testing.B) {
	r := transactionsPage(b)
	b.SetBytes(int64(len(r.Body)))
	b.ReportAllocs()
	for b.Loop() {
		var resp transactionsResponse
		if err := wire.Decode(name, r, &resp); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*PageSize), "ns/row")
}
