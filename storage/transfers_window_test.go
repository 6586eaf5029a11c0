package storage

import (
	"slices"
	"testing"

	"github.com/google/uuid"
)

// TestSessionRowsLetOldestBatchesGo holds sessionRows to what detection
// reads of it: past maxSessionRows the oldest batches go, and each
// amount's rows held are exactly the kept batches' rows of that amount,
// newest first; the days of the batches let go are evicted.
func TestSessionRowsLetOldestBatchesGo(t *testing.T) {
	const batch = 1000
	batches := maxSessionRows/batch + 5
	var m sessionRows
	var all [][]detectRow
	for b := range batches {
		rows := make([]detectRow, batch)
		for i := range rows {
			// A few common amounts and many rare ones, two currencies.
			minor := int64(i % 7)
			if i%3 == 0 {
				minor = int64(b*batch + i)
			}
			cur := "USD"
			if i%5 == 0 {
				cur = "EUR"
			}
			rows[i] = detectRow{id: uuid.New(), minor: minor, currency: cur, day: int64(b)}
		}
		m.add(rows)
		all = append(all, rows)
	}
	held := maxSessionRows / batch
	kept := all[len(all)-held:]
	if len(m.ring) != maxSessionRows {
		t.Fatalf("holds %d rows, want %d", len(m.ring), maxSessionRows)
	}
	want := map[amountKey][]uuid.UUID{}
	for _, rows := range kept {
		for _, r := range rows {
			k := keyOf(&r)
			want[k] = append([]uuid.UUID{r.id}, want[k]...) // newest first
		}
	}
	spans, held := map[int64]bool{}, 0
	for k := range want {
		spans[k.span] = true
	}
	for _, sp := range m.spans {
		held += sp.held
	}
	if len(m.spans) != len(spans) || held != maxSessionRows {
		t.Fatalf("%d spans holding %d rows, want %d spans holding %d", len(m.spans), held, len(spans), maxSessionRows)
	}
	for k, ids := range want {
		var got []uuid.UUID
		m.each(k, func(r *detectRow) { got = append(got, r.id) })
		if !slices.Equal(got, ids) {
			t.Fatalf("amount %v: %d rows held, want %d (or not in order)", k, len(got), len(ids))
		}
	}
	m.each(amountKey{-1, 0}, func(r *detectRow) { t.Fatalf("row %v held for an amount never noted", r.id) })
	for b := range batches {
		if gone := b < batches-len(kept); m.evicted[int64(b)] != gone {
			t.Fatalf("day %d evicted %v, want %v", b, m.evicted[int64(b)], gone)
		}
	}
}

// keyOf is w's amountKey.
func keyOf(w *detectRow) amountKey {
	return amountKey{w.minor, w.day >> spanShift}
}
