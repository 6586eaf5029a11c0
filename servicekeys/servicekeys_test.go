package servicekeys

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/finsync/finsync/api/ops"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// TestNewKeyServesEveryVariable: a new key is 32 random bytes in hex that
// FINSYNC_ENCRYPTION_KEY and FINSYNC_OPS_TOKEN both accept, and no two
// are the same.
func TestNewKeyServesEveryVariable(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 200; i++ {
		key, err := NewKey()
		if err != nil {
			t.Fatal(err)
		}
		if err := ops.ValidateToken(key); err != nil {
			t.Fatalf("key %d refused as an ops token: %v", i, err)
		}
		if _, err := secrets.FromHex(key); err != nil {
			t.Fatalf("key %d refused as an encryption key: %v", i, err)
		}
		if seen[key] {
			t.Fatal("the same key twice")
		}
		seen[key] = true
	}
}

// TestRotationNeverOverwritesAConcurrentWrite: when a row changed between
// the rotation's read and its write (a reconnect stored new credentials),
// the stale value is not written back; the new value is read again and
// re-sealed.
func TestRotationNeverOverwritesAConcurrentWrite(t *testing.T) {
	oldKey, newKey := strings.Repeat("4a", 32), strings.Repeat("4b", 32)
	oldBox, _ := secrets.FromHex(oldKey)
	both, _ := secrets.FromHex(newKey + "," + oldKey)
	newBox, _ := secrets.FromHex(newKey)
	ctx := context.Background()
	pool, _ := storagetest.NewDB(t)
	fx := storagetest.NewFixtures(t, pool)
	user := fx.User(domain.PlanPro, true).ID
	stale, _ := oldBox.Seal([]byte("credentials before the reconnect"))
	c, err := fx.St.CreateConnection(ctx, storage.NewConnection{UserID: user, Provider: "mercury", SealedCredentials: stale})
	if err != nil {
		t.Fatal(err)
	}
	fresh, _ := oldBox.Seal([]byte("credentials after the reconnect"))
	if _, err := pool.Exec(ctx, `UPDATE bank_connections SET credentials_encrypted = $2 WHERE id = $1`, c.ID, fresh); err != nil {
		t.Fatal(err)
	}
	r := Rotation{Store: fx.St, Box: both, Batch: 10, Progress: io.Discard}
	res := &ColumnResult{Column: storage.SealedConnectionCredentials}
	if err := r.reseal(ctx, res, []storage.SealedValue{{ID: c.ID, Sealed: stale}}); err != nil {
		t.Fatal(err)
	}
	if res.Resealed != 1 || len(res.Busy) != 0 {
		t.Fatalf("result %+v", res)
	}
	var stored []byte
	if err := pool.QueryRow(ctx, `SELECT credentials_encrypted FROM bank_connections WHERE id = $1`, c.ID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if got, err := newBox.Open(stored); err != nil || string(got) != "credentials after the reconnect" {
		t.Fatalf("stored after rotation: %q %v", got, err)
	}
}
