package mercury

import (
	"testing"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers/providertest"
)

// BenchmarkFetchTransactionsPage measures one full (PageSize rows) account
// transactions page end to end: the request to the simulator over HTTP, the simulator
// writing the page, and the adapter reading and decoding it (no mapping).
func BenchmarkFetchTransactionsPage(b *testing.B) {
	conn, client := providertest.SimConnection(b, Name, "bench", "/api/v1", 42, 6000, 365)
	a := New(client).(*Adapter)
	ctx := b.Context()
	dep, _, err := a.fetchAccounts(ctx, conn)
	if err != nil {
		b.Fatal(err)
	}
	today := domain.DateOf(providertest.Start)
	cur := cursor{Start: domain.DateOf(today.AddDate(0, 0, -365)).String(), End: today.String()}
	for _, acc := range dep {
		cur.Accounts = append(cur.Accounts, acc.ID)
	}
	if len(cur.Accounts) == 0 {
		b.Fatal("no deposit account")
	}
	b.ReportAllocs()
	for b.Loop() {
		resp, err := a.listPage(ctx, conn, cur)
		if err != nil {
			b.Fatal(err)
		}
		if len(resp.Transactions) != PageSize {
			b.Fatalf("page has %d rows, want %d", len(resp.Transactions), PageSize)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*PageSize), "ns/row")
}
