package storage_test

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// TestSealedValuesWalkAndCompareAndSet walks sealed values in keyset pages
// (rows without a value skipped) and replaces only rows that still hold the
// value that was read.
func TestSealedValuesWalkAndCompareAndSet(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	fx := storagetest.NewFixtures(t, pool)
	ctx := context.Background()
	user := fx.User(domain.PlanPro, true).ID
	fx.Connection(user, "mercury", "active") // no credentials: never listed
	var ids []uuid.UUID
	for i := range 5 {
		c, err := fx.St.CreateConnection(ctx, storage.NewConnection{UserID: user, Provider: "mercury", SealedCredentials: []byte{byte(i)}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, c.ID)
	}
	var walked []storage.SealedValue
	after := uuid.Nil
	for {
		page, err := fx.St.ListSealedValuesAfter(ctx, storage.SealedConnectionCredentials, after, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		if len(page) > 2 {
			t.Fatalf("page of %d rows, limit 2", len(page))
		}
		walked = append(walked, page...)
		after = page[len(page)-1].ID
	}
	if len(walked) != 5 {
		t.Fatalf("walked %d values, want the 5 with credentials", len(walked))
	}
	for _, id := range ids {
		if !slices.ContainsFunc(walked, func(v storage.SealedValue) bool { return v.ID == id }) {
			t.Fatalf("connection %s with credentials not walked", id)
		}
	}
	for i := 1; i < len(walked); i++ {
		if bytes.Compare(walked[i-1].ID[:], walked[i].ID[:]) >= 0 {
			t.Fatal("walk not ordered by id")
		}
	}

	a, b := walked[0], walked[1]
	written, err := fx.St.ReplaceSealedValues(ctx, storage.SealedConnectionCredentials, []storage.SealedReplacement{
		{ID: a.ID, Old: a.Sealed, New: []byte("new a")},
		{ID: b.ID, Old: []byte("not what b holds"), New: []byte("new b")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != 1 || written[0] != a.ID {
		t.Fatalf("written %v, want only %s", written, a.ID)
	}
	now, err := fx.St.ListSealedValuesByID(ctx, storage.SealedConnectionCredentials, []uuid.UUID{a.ID, b.ID})
	if err != nil {
		t.Fatal(err)
	}
	got := map[uuid.UUID]string{}
	for _, v := range now {
		got[v.ID] = string(v.Sealed)
	}
	if got[a.ID] != "new a" || got[b.ID] != string(b.Sealed) {
		t.Fatalf("after compare-and-set: %q", got)
	}

	d, err := fx.St.CreateDestination(ctx, storage.NewDestination{UserID: user, Kind: storage.DestinationWebhook, SealedSecret: []byte("d")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fx.St.ReplaceSealedValues(ctx, storage.SealedDestinationSecrets, []storage.SealedReplacement{{ID: d.ID, Old: []byte("d"), New: []byte("d2")}}); err != nil {
		t.Fatal(err)
	}
	dv, err := fx.St.ListSealedValuesAfter(ctx, storage.SealedDestinationSecrets, uuid.Nil, 10)
	if err != nil || len(dv) != 1 || string(dv[0].Sealed) != "d2" {
		t.Fatalf("destination secrets %v %v", dv, err)
	}
	if _, err := fx.St.ListSealedValuesAfter(ctx, storage.SealedColumn("users; DROP TABLE users"), uuid.Nil, 1); err == nil {
		t.Fatal("unknown column accepted")
	}
}
