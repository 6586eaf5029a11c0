package worker_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
)

// pagedPending is a provider whose one account's pending set spans two
// pages of each sync, the account named in ReplacePendingFor on its last:
// pages[cursor] is the page a cursor asks for.
type pagedPending struct {
	providers.NoInvestments
	name  string
	pages map[string]providers.TransactionPage
}

func (p *pagedPending) Name() string { return p.name }
func (p *pagedPending) Describe() providers.Description {
	return providers.Description{ProviderProfile: domain.ProviderProfile{Name: p.name}}
}
func (p *pagedPending) Accounts(context.Context, providers.Connection) (providers.AccountSet, error) {
	return providers.AccountSet{Accounts: []providers.Account{{ProviderAccountID: "a1", Name: "Card", Currency: "EUR", Type: "credit", Subtype: "credit card", BalancesUnknown: true}}}, nil
}
func (p *pagedPending) Transactions(_ context.Context, _ providers.Connection, req providers.TransactionRequest) (providers.TransactionPage, error) {
	return p.pages[req.Cursor], nil
}

// pendingPage is a page of pending rows of account a1.
func pendingPage(next string, last bool, ids ...string) providers.TransactionPage {
	day := domain.DateOf(time.Date(2026, 6, 14, 0, 0, 0, 0, time.UTC))
	page := providers.TransactionPage{Next: next, Done: last}
	for _, id := range ids {
		page.Upserts = append(page.Upserts, providers.Transaction{ProviderID: id, ProviderAccountID: "a1", Status: domain.TxPending,
			Summary: "Card", Amount: domain.MustMoney("-4.20"), Currency: "EUR", AuthorizedDate: &day, CreatedAt: day.Time})
	}
	if last {
		page.ReplacePendingFor = []string{"a1"}
	}
	return page
}

// TestPendingSetSpanningPagesThroughTheWorker syncs, through the Syncer and
// PostgreSQL, a provider whose pending set spans the pages of a sync (each
// page its own batch): the first sync keeps every pending row of both
// pages; the second removes only those neither of its pages lists.
func TestPendingSetSpanningPagesThroughTheWorker(t *testing.T) {
	e := newSyncEnv(t)
	c := e.connect("mercury", "paged-pending")
	e.syncer.Providers["mercury"] = &pagedPending{name: "mercury", pages: map[string]providers.TransactionPage{
		"":  pendingPage("1", false, "x1", "x2"),
		"1": pendingPage("2", true, "x3"),
		"2": pendingPage("3", false, "x2"),
		"3": pendingPage("4", true, "x4"),
	}}
	e.mustSync(c)
	if got := slices.Sorted(slices.Values(e.pendingIDs(c))); !slices.Equal(got, []string{"x1", "x2", "x3"}) {
		t.Fatalf("after the first sync pending %v, want x1 x2 x3", got)
	}
	e.mustSync(c)
	if got := slices.Sorted(slices.Values(e.pendingIDs(c))); !slices.Equal(got, []string{"x2", "x4"}) {
		t.Fatalf("after the second sync pending %v, want x2 x4", got)
	}
}
