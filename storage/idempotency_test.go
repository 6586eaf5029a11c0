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
	ok, err := fx.St.CompleteIdempotencyKey(ctx, k, second, storage.IdemResponse{Status: 201, ContentType: "application/json", Body: []byte(`{}`)}, testBounds)
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
		if _, err := fx.St.CompleteIdempotencyKey(ctx, k, id, storage.IdemResponse{Status: 200}, testBounds); err != nil {
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
	if _, err := fx.St.CompleteIdempotencyKey(ctx, k, first, storage.IdemResponse{Status: 200}, testBounds); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	st, _, err := fx.St.ClaimIdempotencyKey(ctx, storage.IdemClaim{IdemKey: k, RequestHash: []byte("h2"), Claim: uuid.New(), Lock: time.Minute, TTL: time.Hour})
	if err != nil || st != storage.IdemClaimed {
		t.Fatalf("claim of an expired key with another request: %v %v, want claimed", st, err)
	}
}

// testBounds are the production bounds' shape at a size no test reaches
// unless it means to.
var testBounds = storage.IdemBounds{MaxBody: 64 << 10, MaxAnswers: 1000, MaxBytes: 8 << 20}

// TestIdempotencyAnswersBounded: an answer over MaxBody keeps its status
// and size but no body; past MaxAnswers or MaxBytes a credential's oldest
// answers lose their bodies (evicted) and its newest are kept; another
// credential's answers are untouched; every key stays done (guarded).
func TestIdempotencyAnswersBounded(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	fx := storagetest.NewFixtures(t, pool)
	ctx := context.Background()
	user := fx.User(domain.PlanPro, true).ID
	cred, _ := fx.KeyWithID(user, nil, nil)
	other, _ := fx.KeyWithID(user, nil, nil)
	b := storage.IdemBounds{MaxBody: 100, MaxAnswers: 3, MaxBytes: 250}
	complete := func(cred uuid.UUID, key string, body []byte) {
		t.Helper()
		k := storage.IdemKey{UserID: user, CredentialID: cred, Key: key}
		id := uuid.New()
		if _, _, err := fx.St.ClaimIdempotencyKey(ctx, storage.IdemClaim{IdemKey: k, RequestHash: []byte(key), Claim: id, Lock: time.Minute, TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
		if ok, err := fx.St.CompleteIdempotencyKey(ctx, k, id, storage.IdemResponse{Status: 201, ContentType: "application/json", Body: body}, b); err != nil || !ok {
			t.Fatalf("complete %s: %v %v", key, ok, err)
		}
	}
	read := func(cred uuid.UUID, key string) storage.IdemResponse {
		t.Helper()
		st, r, err := fx.St.ClaimIdempotencyKey(ctx, storage.IdemClaim{IdemKey: storage.IdemKey{UserID: user, CredentialID: cred, Key: key},
			RequestHash: []byte(key), Claim: uuid.New(), Lock: time.Minute, TTL: time.Hour})
		if err != nil || st != storage.IdemDone {
			t.Fatalf("%s: state %v (%v), want done", key, st, err)
		}
		return r
	}
	ten := []byte("0123456789")
	complete(other, "o1", ten)
	complete(cred, "big", make([]byte, 101))
	if r := read(cred, "big"); r.Dropped != storage.IdemTooLarge || r.Body != nil || r.Size != 101 || r.Status != 201 {
		t.Fatalf("large answer: %+v", r)
	}
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		complete(cred, k, ten)
	}
	for k, want := range map[string]storage.IdemDrop{"a": storage.IdemEvicted, "b": storage.IdemEvicted, "c": storage.IdemKept, "d": storage.IdemKept, "e": storage.IdemKept} {
		if r := read(cred, k); r.Dropped != want || (want == storage.IdemKept) != (string(r.Body) == string(ten)) || r.Size != 10 {
			t.Errorf("%s after five answers of at most 3: %+v, want %q", k, r, want)
		}
	}
	// Three answers of 100 bytes: the third passes the credential's 250
	// bytes, so the oldest of them goes although only three are kept.
	complete(cred, "f", make([]byte, 100))
	complete(cred, "g", make([]byte, 100))
	complete(cred, "h", make([]byte, 100))
	for k, want := range map[string]storage.IdemDrop{"e": storage.IdemEvicted, "f": storage.IdemEvicted, "g": storage.IdemKept, "h": storage.IdemKept} {
		if r := read(cred, k); r.Dropped != want {
			t.Errorf("%s after 300 bytes of answers, 250 kept: %+v, want %q", k, r, want)
		}
	}
	if r := read(other, "o1"); r.Dropped != storage.IdemKept || string(r.Body) != string(ten) {
		t.Fatalf("another credential's answer: %+v", r)
	}
}
