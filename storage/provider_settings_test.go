package storage_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// TestProviderSettings stores, replaces, lists and deletes a provider's
// sealed settings, and walks them as a sealed column (key rotation).
func TestProviderSettings(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	st := storage.New(pool)
	ctx := context.Background()
	if got, err := st.GetProviderSettings(ctx, "p"); got != nil || err != nil {
		t.Fatalf("unset settings %q, %v", got, err)
	}
	for _, v := range []string{"sealed-1", "sealed-2"} {
		if err := st.SetProviderSettings(ctx, "p", []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := st.GetProviderSettings(ctx, "p"); string(got) != "sealed-2" || err != nil {
		t.Fatalf("settings %q, %v; want the latest", got, err)
	}
	list, err := st.ListProviderSettings(ctx)
	if err != nil || len(list) != 1 || list[0].Provider != "p" || list[0].UpdatedAt.IsZero() {
		t.Fatalf("list %+v, %v", list, err)
	}
	vals, err := st.ListSealedValuesAfter(ctx, storage.SealedProviderSettings, uuid.Nil, 10)
	if err != nil || len(vals) != 1 || string(vals[0].Sealed) != "sealed-2" {
		t.Fatalf("sealed walk %+v, %v", vals, err)
	}
	if err := st.DeleteProviderSettings(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteProviderSettings(ctx, "p"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}
