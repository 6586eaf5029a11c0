package providertest

import (
	"sort"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
)

// Store applies transaction pages the way the sync worker does, in memory.
type Store struct {
	// Tx holds every live transaction by provider id.
	Tx map[string]providers.Transaction
	// Deleted holds the ids removed or vanished.
	Deleted map[string]bool
	// seen holds the pending ids the pages of the sync under way listed.
	seen map[string]bool
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{Tx: map[string]providers.Transaction{}, Deleted: map[string]bool{}, seen: map[string]bool{}}
}

// Apply upserts a page's transactions, deletes its removals, and deletes
// the pending transactions of ReplacePendingFor accounts that neither the
// page nor an earlier page of the same sync listed as pending; after the
// sync's last page (Done), the next page starts a new sync.
func (s *Store) Apply(p providers.TransactionPage) {
	for _, tx := range p.Upserts {
		if tx.Status == domain.TxPending {
			s.seen[tx.ProviderID] = true
		}
		s.Tx[tx.ProviderID] = tx
		delete(s.Deleted, tx.ProviderID)
	}
	for _, id := range p.Removed {
		if _, ok := s.Tx[id]; ok {
			delete(s.Tx, id)
			s.Deleted[id] = true
		}
	}
	replace := map[string]bool{}
	for _, a := range p.ReplacePendingFor {
		replace[a] = true
	}
	for id, tx := range s.Tx {
		if tx.Status == domain.TxPending && replace[tx.ProviderAccountID] && !s.seen[id] {
			delete(s.Tx, id)
			s.Deleted[id] = true
		}
	}
	if p.Done {
		clear(s.seen)
	}
}

// PendingIDs lists the stored pending transactions, sorted.
func (s *Store) PendingIDs() []string {
	var out []string
	for id, tx := range s.Tx {
		if tx.Status == domain.TxPending {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}
