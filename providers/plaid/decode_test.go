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

// TestDecodeAgreesWithEncodingJSON decodes every answer the simulator
// gives the adapter into the adapter's own types, with wire.Decode and with
// encoding/json, and requires the same values.
func TestDecodeAgreesWithEncodingJSON(t *testing.T) {
	rec := providertest.NewRecording(t, recordingSuite(), 1500)
	rec.Exercise(t)
	bodies := rec.Recorder.Bodies()
	seen := map[string]bool{}
	for _, b := range bodies {
		seen[answerKind(b.Path)] = true
	}
	for _, kind := range []string{"/accounts/get", "/liabilities/get", "/transactions/sync", "/investments/holdings/get", "/investments/transactions/get"} {
		if !seen[kind] {
			t.Errorf("no %s answer recorded", kind)
		}
	}
	t.Logf("comparing %d answers", len(bodies))
	providertest.CompareDecoding(t, bodies, func(path string) any { return answerType(answerKind(path)) },
		func(data []byte, v any) error {
			return wire.Decode(name, &wire.Response{Status: http.StatusOK, Body: data}, v)
		})
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
