package providertest

import (
	"slices"
	"testing"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
)

// TestStorePendingSetSpansPages applies the ReplacePendingFor contract: the
// pending rows of every page of a sync so far are the account's set, and
// the next sync starts afresh after a Done page.
func TestStorePendingSetSpansPages(t *testing.T) {
	pend := func(ids ...string) []providers.Transaction {
		out := make([]providers.Transaction, len(ids))
		for i, id := range ids {
			out[i] = providers.Transaction{ProviderID: id, ProviderAccountID: "a", Status: domain.TxPending}
		}
		return out
	}
	st := NewStore()
	st.Apply(providers.TransactionPage{Upserts: pend("x1", "x2")})
	st.Apply(providers.TransactionPage{Upserts: pend("x3"), ReplacePendingFor: []string{"a"}, Done: true})
	if got := st.PendingIDs(); !slices.Equal(got, []string{"x1", "x2", "x3"}) {
		t.Fatalf("first sync: pending %v, want x1 x2 x3", got)
	}
	st.Apply(providers.TransactionPage{Upserts: pend("x2")})
	st.Apply(providers.TransactionPage{Upserts: pend("x4"), ReplacePendingFor: []string{"a"}, Done: true})
	if got := st.PendingIDs(); !slices.Equal(got, []string{"x2", "x4"}) || !st.Deleted["x1"] || !st.Deleted["x3"] {
		t.Fatalf("second sync: pending %v, deleted %v; want x2 x4, x1 and x3 deleted", got, st.Deleted)
	}
}
