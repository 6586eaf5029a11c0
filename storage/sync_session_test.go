package storage_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
)

func TestOnlyAdds(t *testing.T) {
	page := func(added []string, removed []string, replace ...string) storage.SyncPage {
		p := storage.SyncPage{Removed: removed, ReplacePendingFor: replace}
		for _, id := range added {
			p.Upserts = append(p.Upserts, domain.Transaction{ProviderID: id})
		}
		return p
	}
	for _, tt := range []struct {
		name  string
		batch []storage.SyncPage
		want  bool
	}{
		{"adds only", []storage.SyncPage{page([]string{"a", "b"}, nil), page([]string{"c"}, nil)}, true},
		{"removes ids it does not add", []storage.SyncPage{page([]string{"a"}, []string{"x"}), page([]string{"b"}, []string{"y"})}, true},
		{"removes an id a later page adds", []storage.SyncPage{page(nil, []string{"b"}), page([]string{"b"}, nil)}, false},
		{"removes an id an earlier page adds", []storage.SyncPage{page([]string{"a"}, nil), page(nil, []string{"a"})}, false},
		{"replaces a pending set", []storage.SyncPage{page([]string{"a"}, nil, "acct")}, false},
	} {
		if got := storage.OnlyAdds(tt.batch); got != tt.want {
			t.Errorf("%s: onlyAdds = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestSyncSessionCopiesThenUpserts stores a first batch with COPY, then a
// batch of a run that began fresh but meets stored rows: the copy falls
// back to upserts, only the new rows count and reach the rules, and each
// batch leaves its cursor and the provider's category on its rows.
func TestSyncSessionCopiesThenUpserts(t *testing.T) {
	e := newWriterEnv(t)
	ctx := context.Background()
	var ruled []int
	rules := func(_ context.Context, _ *storage.Tx, _ uuid.UUID, ids []uuid.UUID) error {
		ruled = append(ruled, len(ids))
		return nil
	}
	open := func() (*storage.SyncSession, uuid.UUID) {
		s := e.f.St.OpenSyncSession(storage.SyncTarget{Connection: e.conn}, storage.SyncSessionOptions{Rules: rules})
		ids, err := s.ApplyAccounts(ctx, "", []storage.SyncedAccount{{ProviderAccountID: "a1", Name: "Checking", Currency: "USD", BalancesUnknown: true}},
			domain.DateOf(time.Now()))
		if err != nil {
			t.Fatal(err)
		}
		if ids["a1"] == uuid.Nil {
			t.Fatalf("account ids %v", ids)
		}
		return s, ids["a1"]
	}
	food := storage.ProviderCategory{ProviderID: "food", Name: "Food", Group: "Living"}
	pages := func(from, n int, cursor string, acct uuid.UUID) []storage.SyncPage {
		rows := e.synced(from + n)[from:]
		cats := make([]storage.ProviderCategory, len(rows))
		for i := range rows {
			rows[i].AccountID = acct
			cats[i] = food
		}
		half := len(rows) / 2
		return []storage.SyncPage{{Upserts: rows[:half], Categories: cats[:half]},
			{Upserts: rows[half:], Categories: cats[half:], Next: cursor}}
	}
	cursor := func() string {
		var c string
		if err := e.f.Pool.QueryRow(ctx, `SELECT coalesce(sync_cursor, '') FROM bank_connections WHERE id = $1`, e.conn.ID).Scan(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	s, acct := open()
	res, err := s.ApplyBatch(ctx, pages(0, 10, "c1", acct))
	if err != nil {
		t.Fatal(err)
	}
	if res.Changes != (storage.RowChanges{Added: 10}) || cursor() != "c1" || len(ruled) != 1 || ruled[0] != 10 {
		t.Fatalf("first batch: changes %+v, cursor %q, rules ran on %v", res.Changes, cursor(), ruled)
	}
	if n := e.count(t, `category_id IS NOT NULL AND category_source = 'provider'`); n != 10 {
		t.Fatalf("%d rows carry the provider's category, want 10", n)
	}

	// A run that began fresh (no sync finished yet) gets rows 5..14 again.
	ruled = nil
	s, acct = open()
	res, err = s.ApplyBatch(ctx, pages(5, 10, "c2", acct))
	if err != nil {
		t.Fatal(err)
	}
	if res.Changes != (storage.RowChanges{Added: 5}) || cursor() != "c2" || e.count(t, `true`) != 15 {
		t.Fatalf("overlapping batch: changes %+v, cursor %q, %d rows", res.Changes, cursor(), e.count(t, `true`))
	}
	if sum := func() int {
		n := 0
		for _, k := range ruled {
			n += k
		}
		return n
	}(); sum != 5 {
		t.Fatalf("rules ran on %v, want the 5 new rows", ruled)
	}
	if n := e.count(t, `category_id IS NOT NULL`); n != 15 {
		t.Fatalf("%d rows have a category, want 15", n)
	}
}
