package mercury

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/internal/wire"
	"github.com/finsync/finsync/providers/providertest"
)

func recordingSuite() providertest.Suite {
	return providertest.Suite{
		Provider: Name,
		New:      func(c *http.Client) providers.Provider { return New(c) },
		BaseURL:  func(root string) string { return root + "/api/v1" },
	}
}

// TestDecodeAgreesWithEncodingJSON decodes every answer the simulator
// gives the adapter into the adapter's own types, with wire.Decode and with
// encoding/json, and requires the same values.
func TestDecodeAgreesWithEncodingJSON(t *testing.T) {
	providertest.CheckDecoding(t, recordingSuite(), 1500, []string{"/api/v1/accounts", "/api/v1/account/{id}/transactions"}, answerKind, answerType)
}

// answerKind names the kind of answer at path.
func answerKind(path string) string {
	if strings.HasPrefix(path, "/api/v1/account/") && strings.HasSuffix(path, "/transactions") {
		return "/api/v1/account/{id}/transactions"
	}
	return path
}

// answerType is a fresh value of the type the adapter decodes an answer
// of kind into (nil: unknown).
func answerType(kind string) any {
	switch kind {
	case "/api/v1/accounts", "/api/v1/credit":
		return new(accountsResponse)
	case "/api/v1/account/{id}/transactions":
		return new(transactionsResponse)
	}
	return nil
}

// transactionsPage returns one full /account/{id}/transactions answer
// (PageSize rows) as the simulator sends it.
func transactionsPage(tb testing.TB) *wire.Response {
	tb.Helper()
	r := providertest.FirstPage(tb, recordingSuite(), 6000, func(path string) bool { return strings.HasSuffix(path, "/transactions") })
	var resp transactionsResponse
	if err := json.Unmarshal(r.Body, &resp); err != nil {
		tb.Fatal(err)
	}
	if len(resp.Transactions) != PageSize {
		tb.Fatalf("transactions page has %d rows, want %d", len(resp.Transactions), PageSize)
	}
	return r
}

// BenchmarkDecodeTransactionsPage measures decoding one full (PageSize
// rows) account transactions page.
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
