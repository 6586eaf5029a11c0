package plaidsim

import (
	"maps"
	"testing"

	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simtest"
)

// TestBalanceMovesAdvanceByTheNewDays: the moves a server keeps, extended
// day by day as the clock advances, equal the moves summed over the whole
// history at each clock, and the current balances follow them.
func TestBalanceMovesAdvanceByTheNewDays(t *testing.T) {
	h := sim.New(sim.Options{Seed: 3, Start: simtest.Start, HistoryTransactions: 2000, HistoryDays: 30}, Sim{})
	token := creds(t, "moves")["access_token"]
	s := &server{h: h}
	before := s.plaidItemFor(token).accounts
	for _, step := range []int{1, 2, 5} {
		if err := h.Advance(step); err != nil {
			t.Fatal(err)
		}
		got := s.moves(token)
		want := movesOf(h.View(Name, token, plaidTxAccounts), nil)
		for k := range want.byDay {
			if !maps.Equal(got.byDay[k], want.byDay[k]) {
				t.Fatalf("clock %d, slot %d: extended moves %v, summed %v", h.Clock(), k, got.byDay[k], want.byDay[k])
			}
		}
		after := s.plaidItemFor(token).accounts
		for k := 0; k < plaidTxAccounts; k++ {
			if after[k].current == before[k].current {
				t.Fatalf("clock %d, slot %d: balance did not move from %d", h.Clock(), k, before[k].current)
			}
		}
		before = after
	}
}
