package plaid_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/plaid"
	"github.com/finsync/finsync/providers/providertest"
	"github.com/finsync/finsync/providers/sim"
)

// BenchmarkSyncWalk measures a first sync of a 100,000-transaction Plaid
// connection from the simulator over HTTP (200 pages of 500), adapter
// decoding and mapping included.
func BenchmarkSyncWalk(b *testing.B) {
	const n = 100_000
	sm := allsim.New(sim.Options{Seed: 1, Start: providertest.Start})
	srv := httptest.NewServer(sm)
	defer srv.Close()
	creds := allsim.Credentials(plaid.Name, "bench")
	key, _ := allsim.CredentialKey(plaid.Name, creds)
	if err := sm.SetConnection(sim.ConnectionSettings{Provider: plaid.Name, Credential: key, Transactions: n, HistoryDays: 365}); err != nil {
		b.Fatal(err)
	}
	conn := providers.Connection{Provider: plaid.Name, BaseURL: srv.URL, Credentials: creds}
	p := plaid.New(srv.Client())
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		got, cursor := 0, ""
		for {
			page, err := p.Transactions(ctx, conn, providers.TransactionRequest{Cursor: cursor})
			if err != nil {
				b.Fatal(err)
			}
			got += len(page.Upserts)
			cursor = page.Next
			if page.Done {
				break
			}
		}
		if got < n*9/10 {
			b.Fatalf("walked %d transactions, want %d", got, n)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tx/s")
}
