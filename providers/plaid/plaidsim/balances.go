package plaidsim

import (
	"sort"
	"time"

	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simkit"
)

// plaidMoves is how the booked balance of each transaction account of one
// item moves by day, at one clock, for a history of a given shape.
type plaidMoves struct {
	clock int64
	shape [2]int64 // the history's size at day 0 and its span
	byDay [plaidTxAccounts]map[int64]int64
}

// shapeOf returns what identifies a connection's history besides its seed.
func shapeOf(snap sim.Snapshot) [2]int64 { return [2]int64{snap.TL.Count(0), snap.TL.Days} }

// total returns the sum of the moves of slot k.
func (m *plaidMoves) total(k int) int64 {
	var t int64
	for _, v := range m.byDay[k] {
		t += v
	}
	return t
}

// movesOf computes the moves of a timeline at its clock, from prev (the
// moves of the same history at an earlier clock) when given.
func movesOf(snap sim.Snapshot, prev *plaidMoves) *plaidMoves {
	m := &plaidMoves{clock: snap.Clock, shape: shapeOf(snap)}
	for k := range m.byDay {
		if prev == nil {
			m.byDay[k] = snap.TL.PostedByDay(k, simkit.AccountKind(k), snap.Clock)
			continue
		}
		m.byDay[k] = make(map[int64]int64, len(prev.byDay[k])+int(snap.Clock-prev.clock))
		for d, v := range prev.byDay[k] {
			m.byDay[k][d] = v
		}
		snap.TL.AddPosted(m.byDay[k], k, simkit.AccountKind(k), prev.clock, snap.Clock)
	}
	return m
}

// moves returns the item's balance moves at the current clock: a history
// of millions costs one pass over it, and each later day only that day's
// transactions.
func (s *server) moves(token string) *plaidMoves {
	snap := s.h.View(Name, token, plaidTxAccounts)
	s.movesMu.Lock()
	m, ok := s.movesBy[snap.Seed]
	s.movesMu.Unlock()
	if ok && m.shape != shapeOf(snap) || ok && m.clock > snap.Clock {
		m, ok = nil, false
	}
	if ok && m.clock == snap.Clock {
		return m
	}
	m = movesOf(snap, m)
	s.movesMu.Lock()
	if s.movesBy == nil {
		s.movesBy = map[uint64]*plaidMoves{}
	}
	s.movesBy[snap.Seed] = m
	s.movesMu.Unlock()
	return m
}

// runningSign is how a posted amount moves the current balance of slot k:
// a credit card's balance is the amount owed, which a purchase (a negative
// amount) raises.
func runningSign(k int) int64 {
	if k == plaidCredit {
		return -1
	}
	return 1
}

// DailyBalances returns the simulator's own end-of-day current balance,
// in cents, of each transaction account of the item behind accessToken,
// by Plaid account id and date (YYYY-MM-DD): from the day before the
// account's first posting to the simulator's today, whose balance is the
// one /accounts/get reports. Checking and savings balances are booked
// balances (pending transactions do not count); the credit card's is the
// amount owed. Hidden history (ConnectionSettings.RecentDays) counts.
func DailyBalances(h *sim.Simulator, accessToken string) map[string]map[string]int64 {
	s := &server{h: h}
	it := s.plaidItemFor(accessToken)
	m := s.moves(accessToken)
	out := map[string]map[string]int64{}
	for k := 0; k < plaidTxAccounts; k++ {
		days := make([]int64, 0, len(m.byDay[k]))
		for d := range m.byDay[k] {
			days = append(days, d)
		}
		sort.Slice(days, func(i, j int) bool { return days[i] < days[j] })
		bal := it.accounts[k].current
		byDate := map[string]int64{}
		for d, n := m.clock, len(days)-1; len(days) > 0 && d >= days[0]-1; d-- {
			byDate[h.DateOf(d).Format(time.DateOnly)] = bal
			if n >= 0 && days[n] == d {
				bal -= runningSign(k) * m.byDay[k][d]
				n--
			}
		}
		out[it.accounts[k].id] = byDate
	}
	return out
}
