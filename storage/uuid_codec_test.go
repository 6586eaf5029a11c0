package storage_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/finsync/finsync/storage/storagetest"
)

// TestUUIDsTravelInBinary checks the pool's uuid codec: a uuid.UUID sent
// and read back is the same id as its text form says, a NULL reaches a
// *uuid.UUID as nil and is refused by a uuid.UUID, and arrays still work.
func TestUUIDsTravelInBinary(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	ctx := context.Background()
	id := uuid.New()
	var back uuid.UUID
	var text string
	if err := pool.QueryRow(ctx, `SELECT $1::uuid, $1::uuid::text`, id).Scan(&back, &text); err != nil {
		t.Fatal(err)
	}
	if back != id || text != id.String() {
		t.Fatalf("sent %s, read %s, text %s", id, back, text)
	}
	var some, none *uuid.UUID
	if err := pool.QueryRow(ctx, `SELECT $1::uuid, NULL::uuid`, id).Scan(&some, &none); err != nil {
		t.Fatal(err)
	}
	if some == nil || *some != id || none != nil {
		t.Fatalf("nullable scans: %v, %v", some, none)
	}
	if err := pool.QueryRow(ctx, `SELECT NULL::uuid`).Scan(&back); err == nil {
		t.Fatal("a NULL was scanned into a uuid.UUID")
	}
	var ids []uuid.UUID
	if err := pool.QueryRow(ctx, `SELECT ARRAY[$1::uuid, $1::uuid]`, id).Scan(&ids); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 2 || ids[1] != id {
		t.Fatalf("array: %v", ids)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT cardinality($1::uuid[])`, []uuid.UUID{id, uuid.New()}).Scan(&n); err != nil || n != 2 {
		t.Fatalf("array parameter: %d, %v", n, err)
	}
}
