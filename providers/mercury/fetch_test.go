package mercury

import (
	"net/http/httptest"
	"testing"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/providertest"
	"github.com/finsync/finsync/providers/sim"
)

// BenchmarkFetchTransactionsPage measures one full (PageSize rows) account
// transactions page end to end: the request to the simulator over HTTP, the simulator
// writing the page, and the adapter reading and decoding it (no mapping).
func BenchmarkFetchTransactionsPage(b *testing.B) {
	sm := allsim.New(sim.Options{Seed: 42, Start: providertest.Start})
	srv := httptest.NewServer(sm)
	defer srv.Close()
	creds := allsim.Credentials(Name, "bench")
	key, err := allsim.CredentialKey(Name, creds)
	if err != nil {
		b.Fatal(err)
	}
	if err := sm.SetConnection(sim.ConnectionSettings{Provider: Name, Credential: key, Transactions: 6000, HistoryDays: 365}); err != nil {
		b.Fatal(err)
	}
	conn := providers.Connection{Provider: Name, BaseURL: srv.URL + "/api/v1", Credentials: creds}
	a := New(srv.Client()).(*Adapter)
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
