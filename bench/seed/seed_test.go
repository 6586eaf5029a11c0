package main

import (
	"context"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

func TestParseOptions(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr bool
		check   func(options) bool
	}{
		{"defaults", nil, false, func(o options) bool {
			return o.users == 1000 && o.transactions == 1_000_000 && o.recreate && strings.Contains(o.databaseURL, "finsync_bench")
		}},
		{"flags", []string{"-users", "3", "-transactions", "10", "-keys", "k.txt", "-recreate=false"}, false, func(o options) bool {
			return o.users == 3 && o.transactions == 10 && o.keysFile == "k.txt" && !o.recreate
		}},
		{"no users", []string{"-users", "0"}, true, nil},
		{"negative transactions", []string{"-transactions", "-1"}, true, nil},
		{"unknown flag", []string{"-nope"}, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseOptions(tt.args, io.Discard)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if tt.check != nil && !tt.check(o) {
				t.Errorf("options = %+v", o)
			}
		})
	}
}

func TestBenchName(t *testing.T) {
	for name, want := range map[string]bool{"finsync_bench": true, "bench2": true, "finsync": false, "postgres": false} {
		if got := benchName(name); got != want {
			t.Errorf("benchName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestTxSourceRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	users := newUsers(rng, 10)
	end := time.Date(2026, 6, 30, 15, 0, 0, 0, time.UTC)
	src := newTxSource(rng, users, 5000, end)
	perUser := map[[16]byte]int{}
	providerIDs := map[string]bool{}
	var n, pending int
	for src.Next() {
		row, err := src.Values()
		if err != nil {
			t.Fatal(err)
		}
		if len(row) != len(transactionColumns) {
			t.Fatalf("row has %d values for %d columns", len(row), len(transactionColumns))
		}
		u := users[n%len(users)]
		if row[1] != u.id || row[2] != u.connectionID {
			t.Fatalf("row %d: not user %d's", n, n%len(users))
		}
		perUser[u.id]++
		providerIDs[row[5].(string)] = true
		authorized := row[10].(time.Time)
		if authorized.After(end) || authorized.Before(end.AddDate(-1, 0, -3)) {
			t.Errorf("row %d: authorized %s outside the year before %s", n, authorized, end)
		}
		if amt := row[8].(pgtype.Numeric); !amt.Valid || amt.Exp != -2 || amt.Int.Sign() == 0 {
			t.Errorf("row %d: amount %+v is not a non-zero amount in cents", n, amt)
		}
		switch row[6] {
		case domain.TxPending:
			pending++
			if row[11] != nil {
				t.Errorf("row %d: pending with a posted date", n)
			}
			if end.Sub(authorized) > (pendingDays+2)*24*time.Hour { // authorized up to 2 days before the day
				t.Errorf("row %d: pending since %s", n, authorized)
			}
		case domain.TxPosted:
			if posted := row[11].(time.Time); posted.Before(authorized) {
				t.Errorf("row %d: posted %s before authorized %s", n, posted, authorized)
			}
		default:
			t.Errorf("row %d: status %v", n, row[6])
		}
		n++
	}
	if n != 5000 || len(providerIDs) != 5000 {
		t.Fatalf("%d rows with %d distinct provider ids, want 5000", n, len(providerIDs))
	}
	for id, c := range perUser {
		if c != 500 {
			t.Errorf("user %x has %d transactions, want 500", id, c)
		}
	}
	if pending == 0 || pending > 100 {
		t.Errorf("%d pending transactions, want a few recent ones", pending)
	}
}

func TestSeederFillsDatabase(t *testing.T) {
	ctx := context.Background()
	pool, _ := storagetest.NewDB(t)
	sd := &seeder{pool: pool, st: storage.New(pool)}
	rng := rand.New(rand.NewPCG(1, 2))
	users := newUsers(rng, 4)
	keysFile := filepath.Join(t.TempDir(), "keys.txt")
	if err := sd.insertOwners(ctx, users); err != nil {
		t.Fatal(err)
	}
	if err := sd.insertTransactions(ctx, newTxSource(rng, users, 400, time.Now().UTC())); err != nil {
		t.Fatal(err)
	}
	if err := sd.issueKeys(ctx, users, keysFile); err != nil {
		t.Fatal(err)
	}
	if err := sd.analyze(ctx); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(keysFile)
	if err != nil {
		t.Fatal(err)
	}
	keys := strings.Fields(string(raw))
	if len(keys) != len(users) {
		t.Fatalf("%d keys, want %d", len(keys), len(users))
	}
	for i, k := range keys {
		p, err := sd.st.LookupCredential(ctx, storage.HashSecret(k))
		if err != nil {
			t.Fatalf("key %d: %v", i, err)
		}
		if p.UserID != users[i].id || p.Plan != domain.PlanPro || !p.PlanActive || !p.StorageMode || !p.Enabled {
			t.Errorf("key %d: principal %+v, want user %s on an active pro plan in storage mode", i, p, users[i].id)
		}
		rows, _, err := sd.st.ListTransactions(ctx, p.Scope(), storage.TransactionFilter{IncludeHidden: true}, storage.Keyset{}, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 100 {
			t.Errorf("user %d lists %d transactions, want 100", i, len(rows))
		}
	}
}
