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

func TestIdempotencyClaimOfADeadRequestExpires(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	fx := storagetest.NewFixtures(t, pool)
	ctx := context.Background()
	user := fx.User(domain.PlanPro, true).ID
	cred, _ := fx.KeyWithID(user, nil, nil)
	k := storage.IdemKey{UserID: user, CredentialID: cred, Key: "k"}
	claim := func(lock time.Duration) (storage.IdemState, uuid.UUID) {
		t.Helper()
		id := uuid.New()
		st, _, err := fx.St.ClaimIdempotencyKey(ctx, storage.IdemClaim{
			IdemKey: k, RequestHash: []byte("h"), Claim: id, Lock: lock, TTL: time.Hour,
		})
		if err != nil {
			t.Fatal(err)
		}
		return st, id
	}
	if st, _ := claim(300 * time.Millisecond); st != storage.IdemClaimed {
		t.Fatalf("first claim: %v", st)
	}
	// The claimer never finishes (it died): the key is held until the
	// lock passes, then taken over.
	if st, _ := claim(time.Minute); st != storage.IdemInFlight {
		t.Fatalf("claim while held: %v, want in flight", st)
	}
	time.Sleep(400 * time.Millisecond)
	st, second := claim(time.Minute)
	if st != storage.IdemClaimed {
		t.Fatalf("claim after the lock passed: %v, want claimed", st)
	}
	ok, err := fx.St.CompleteIdempotencyKey(ctx, k, second, storage.IdemResponse{Status: 201, ContentType: "application/json", Body: []byte(`{}`)})
	if err != nil || !ok {
		t.Fatalf("complete: %v %v", ok, err)
	}
	st, _, err = fx.St.ClaimIdempotencyKey(ctx, storage.IdemClaim{
		IdemKey: k, RequestHash: []byte("h"), Claim: uuid.New(), Lock: time.Minute, TTL: time.Hour,
	})
	if err != nil || st != storage.IdemDone {
		t.Fatalf("claim after completion: %v %v, want done", st, err)
	}
}

func TestIdempotencyExpiredKeysArePurged(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	fx := storagetest.NewFixtures(t, pool)
	ctx := context.Background()
	user := fx.User(domain.PlanPro, true).ID
	cred, _ := fx.KeyWithID(user, nil, nil)
	for i, ttl := range []time.Duration{time.Millisecond, time.Millisecond, time.Hour} {
		k := storage.IdemKey{UserID: user, CredentialID: cred, Key: string(rune('a' + i))}
		id := uuid.New()
		if _, _, err := fx.St.ClaimIdempotencyKey(ctx, storage.IdemClaim{
			IdemKey: k, RequestHash: []byte("h"), Claim: id, Lock: time.Minute, TTL: ttl,
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := fx.St.CompleteIdempotencyKey(ctx, k, id, storage.IdemResponse{Status: 200}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(10 * time.Millisecond)
	n, err := fx.St.PurgeIdempotencyKeys(ctx, 1000)
	if err != nil || n != 2 {
		t.Fatalf("purged %d (%v), want 2", n, err)
	}
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM idempotency_keys`).Scan(&left); err != nil || left != 1 {
		t.Fatalf("%d keys left (%v), want 1", left, err)
	}
	// An expired key is reused in place by a new claim, even before a purge.
	k := storage.IdemKey{UserID: user, CredentialID: cred, Key: "x"}
	first := uuid.New()
	if _, _, err := fx.St.ClaimIdempotencyKey(ctx, storage.IdemClaim{IdemKey: k, RequestHash: []byte("h1"), Claim: first, Lock: time.Minute, TTL: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if _, err := fx.St.CompleteIdempotencyKey(ctx, k, first, storage.IdemResponse{Status: 200}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	st, _, err := fx.St.ClaimIdempotencyKey(ctx, storage.IdemClaim{IdemKey: k, RequestHash: []byte("h2"), Claim: uuid.New(), Lock: time.Minute, TTL: time.Hour})
	if err != nil || st != storage.IdemClaimed {
		t.Fatalf("claim of an expired key with another request: %v %v, want claimed", st, err)
	}
}
