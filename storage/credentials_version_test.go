package storage_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// TestCredentialsVersionMovesOnAuthChangesOnly checks the triggers of
// migration 00009: the version moves when a key is issued or disabled and
// when a plan or storage mode changes, by the store or by plain SQL, and
// not when last-used times are recorded.
func TestCredentialsVersionMovesOnAuthChangesOnly(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	fx := storagetest.NewFixtures(t, pool)
	st := storage.New(pool)
	ctx := context.Background()
	version := func() int64 {
		t.Helper()
		v, err := st.GetCredentialsVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	u := fx.User(domain.PlanStandard, true)
	before := version()
	id, _ := fx.KeyWithID(u.ID, nil, nil)
	steps := []struct {
		name  string
		moves bool
		do    func() error
	}{
		{"record last use", false, func() error {
			return st.TouchCredentials(ctx, map[uuid.UUID]time.Time{id: time.Now()})
		}},
		{"change plan", true, func() error {
			plan := domain.PlanPro
			_, err := st.UpdateUser(ctx, u.ID, storage.UserUpdate{Plan: &plan})
			return err
		}},
		{"storage mode off by SQL", true, func() error {
			_, err := pool.Exec(ctx, `UPDATE users SET storage_mode = false WHERE id = $1`, u.ID)
			return err
		}},
		{"disable key", true, func() error { return st.DisableCredential(ctx, id) }},
		{"enable key by SQL", true, func() error {
			_, err := pool.Exec(ctx, `UPDATE credentials SET enabled = true WHERE id = $1`, id)
			return err
		}},
	}
	if after := version(); after <= before {
		t.Fatalf("issuing a key left the version at %d", after)
	}
	for _, s := range steps {
		v := version()
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if moved := version() != v; moved != s.moves {
			t.Errorf("%s: version moved = %v, want %v", s.name, moved, s.moves)
		}
	}
}
