package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/finsync/finsync/api/idempotency"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage/storagetest"
)

// previewSetup gives a user n transactions whose summaries are long
// enough for a page of previews to pass the size kept for replay, and
// returns a key and a preview body matching them all.
func previewSetup(e *env, n int) (key, body string) {
	e.t.Helper()
	u := e.fx.User(domain.PlanPro, true)
	conn := e.fx.Connection(u.ID, "plaid", "active")
	acct := e.fx.Account(u.ID, conn, "plaid", "Checking")
	txs := make([]storagetest.Tx, n)
	for i := range txs {
		txs[i] = storagetest.Tx{Summary: fmt.Sprintf("Coffee %d %s", i, strings.Repeat("x", 300))}
	}
	e.fx.Transactions(u.ID, conn, acct, "plaid", txs)
	cat := e.fx.Category(u.ID, "Cafe", "Food")
	return e.fx.Key(u.ID, nil), categoryRule("Summary", "contains", `"coffee"`, cat, 10)
}

// TestIdempotencyFingerprintCoversQuery: the same key with another query
// is another request (422 IDEMPOTENCY_KEY_REUSED), not a replay of the
// first answer; with the same query it is replayed.
func TestIdempotencyFingerprintCoversQuery(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key, body := previewSetup(e, 10)
	first := e.sendIdem(http.MethodPost, "/v2/rules/preview?limit=1", key, "preview-1", body)
	e.expect(first, http.StatusOK, "")
	e.expect(e.sendIdem(http.MethodPost, "/v2/rules/preview?limit=5", key, "preview-1", body),
		http.StatusUnprocessableEntity, idempotency.CodeKeyReused)
	e.expect(e.sendIdem(http.MethodPost, "/v2/rules/preview", key, "preview-1", body),
		http.StatusUnprocessableEntity, idempotency.CodeKeyReused)
	again := e.sendIdem(http.MethodPost, "/v2/rules/preview?limit=1", key, "preview-1", body)
	e.expect(again, http.StatusOK, "")
	if again.header.Get(idempotency.HeaderReplayed) != "true" || string(again.body) != string(first.body) {
		t.Fatalf("same query not replayed: %v %s", again.header, again.body)
	}
}

// TestIdempotencyLargeAnswerGuardedNotStored: a preview page of 250 long
// rows (over 64 KiB) is answered, its body is not stored, and a retry
// with the key answers 409 CONFLICT saying it completed, instead of
// running again or replaying.
func TestIdempotencyLargeAnswerGuardedNotStored(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key, body := previewSetup(e, 260)
	first := e.sendIdem(http.MethodPost, "/v2/rules/preview?limit=250", key, "big", body)
	e.expect(first, http.StatusOK, "")
	if len(first.body) <= idempotency.MaxAnswerBytes {
		t.Fatalf("answer of %d bytes, the test needs one over %d", len(first.body), idempotency.MaxAnswerBytes)
	}
	var (
		stored  *int
		size    *int
		dropped *string
	)
	// The answer reaches the client as it is written; the key is completed
	// right after, so the test waits for that.
	waitFor(t, 10*time.Second, "the key completed", func() bool {
		if err := e.fx.Pool.QueryRow(context.Background(),
			`SELECT octet_length(body), body_bytes, answer_dropped FROM idempotency_keys WHERE key = 'big'`).Scan(&stored, &size, &dropped); err != nil {
			t.Fatal(err)
		}
		return size != nil
	})
	if stored != nil || *size != len(first.body) || dropped == nil || *dropped != "too_large" {
		t.Fatalf("stored body %v, size %v, dropped %v; want none, %d, too_large", stored, size, dropped, len(first.body))
	}
	retry := e.sendIdem(http.MethodPost, "/v2/rules/preview?limit=250", key, "big", body)
	e.expect(retry, http.StatusConflict, idempotency.CodeConflict)
	if msg := string(retry.body); !strings.Contains(msg, "completed with status 200") || !strings.Contains(msg, "will not run again") {
		t.Fatalf("retry's message does not say the request completed: %s", msg)
	}
	// Another request with the key is still told the key was reused.
	e.expect(e.sendIdem(http.MethodPost, "/v2/rules/preview?limit=2", key, "big", body),
		http.StatusUnprocessableEntity, idempotency.CodeKeyReused)
}

// TestIdempotencyAnswersPerCredentialBounded: one credential keeps at most
// MaxAnswersPerCredential answers (its newest) and
// MaxAnswerBytesPerCredential bytes of them; a key whose answer was
// dropped still guards its request (409, the request does not run again);
// another key of the same user keeps its own answers and keys.
func TestIdempotencyAnswersPerCredentialBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	u := e.fx.User(domain.PlanPro, true)
	credA, keyA := e.fx.KeyWithID(u.ID, nil, nil)
	keyB := e.fx.Key(u.ID, nil)
	account := func(name string) string { return fmt.Sprintf(`{"name":%q,"type":"cash","currency":"EUR"}`, name) }

	e.expect(e.sendIdem(http.MethodPost, "/v2/accounts", keyA, "first", account("First")), http.StatusCreated, "")
	e.expect(e.sendIdem(http.MethodPost, "/v2/accounts", keyB, "b-kept", account("B kept")), http.StatusCreated, "")
	// The credential's other answers, newer than "first": completed
	// requests as the guard stores them (the hash is the guard's: method,
	// path and body, NUL-separated: 'POST\0/v2/accounts\0' in hex).
	prefill := func(n, size int) {
		t.Helper()
		if _, err := e.fx.Pool.Exec(ctx, `
			INSERT INTO idempotency_keys (user_id, credential_id, key, request_hash, claim, locked_until, status, content_type, body, body_bytes, expires_at, created_at)
			SELECT $1, $2, 'filler-' || $4 || '-' || i, sha256('\x504f5354002f76322f6163636f756e747300'::bytea || convert_to('filler ' || $4 || '-' || i, 'UTF8')),
			       gen_random_uuid(), now(), 201, 'application/json', convert_to(repeat('x', $3), 'UTF8'), $3,
			       now() + interval '1 day', clock_timestamp()
			FROM generate_series(1, $5) i`, u.ID, credA, size, fmt.Sprint(size), n); err != nil {
			t.Fatal(err)
		}
	}
	prefill(idempotency.MaxAnswersPerCredential-1, 100)
	kept := func() (n int, bytes int64) {
		t.Helper()
		if err := e.fx.Pool.QueryRow(ctx, `SELECT count(*), COALESCE(sum(body_bytes), 0) FROM idempotency_keys
			WHERE credential_id = $1 AND status IS NOT NULL AND answer_dropped IS NULL`, credA).Scan(&n, &bytes); err != nil {
			t.Fatal(err)
		}
		return n, bytes
	}
	last := e.sendIdem(http.MethodPost, "/v2/accounts", keyA, "last", account("Last"))
	e.expect(last, http.StatusCreated, "")
	if n, _ := kept(); n != idempotency.MaxAnswersPerCredential {
		t.Fatalf("credential keeps %d answers, want %d", n, idempotency.MaxAnswersPerCredential)
	}
	// The oldest answer went; its key still guards the request.
	r := e.sendIdem(http.MethodPost, "/v2/accounts", keyA, "first", account("First"))
	e.expect(r, http.StatusConflict, idempotency.CodeConflict)
	if !strings.Contains(string(r.body), "no longer kept") {
		t.Fatalf("evicted answer's message: %s", r.body)
	}
	if n := e.accountsNamed(u.ID, "First"); n != 1 {
		t.Fatalf("%d accounts named First, want 1: an evicted key ran its request again", n)
	}
	if again := e.sendIdem(http.MethodPost, "/v2/accounts", keyA, "last", account("Last")); again.status != http.StatusCreated ||
		again.header.Get(idempotency.HeaderReplayed) != "true" || string(again.body) != string(last.body) {
		t.Fatalf("newest answer not replayed: %d %s", again.status, again.body)
	}

	// Size: answers of 3 MiB; past 8 MiB the oldest go, whatever the count.
	prefill(3, 3<<20)
	e.expect(e.sendIdem(http.MethodPost, "/v2/accounts", keyA, "after-big", account("After big")), http.StatusCreated, "")
	n, size := kept()
	t.Logf("after three answers of 3 MiB: %d answers kept, %d bytes", n, size)
	// Newest first: "after-big", two of 3 MiB fit in 8 MiB, the third and
	// every older answer go.
	if size > idempotency.MaxAnswerBytesPerCredential || n != 3 {
		t.Fatalf("credential keeps %d answers of %d bytes, want at most %d bytes (two of the 3 MiB answers and the newest)", n, size, idempotency.MaxAnswerBytesPerCredential)
	}
	var newestKept bool
	if err := e.fx.Pool.QueryRow(ctx, `SELECT answer_dropped IS NULL FROM idempotency_keys WHERE credential_id = $1 AND key = 'after-big'`, credA).Scan(&newestKept); err != nil || !newestKept {
		t.Fatalf("newest answer not kept (%v)", err)
	}

	// The other key of the same user: its answer kept, and "first" is its
	// own key, which runs.
	if r := e.sendIdem(http.MethodPost, "/v2/accounts", keyB, "b-kept", account("B kept")); r.header.Get(idempotency.HeaderReplayed) != "true" {
		t.Fatalf("another credential's answer was dropped: %d %s", r.status, r.body)
	}
	if r := e.sendIdem(http.MethodPost, "/v2/accounts", keyB, "first", account("First")); r.status != http.StatusCreated || r.header.Get(idempotency.HeaderReplayed) != "" {
		t.Fatalf("another credential's key \"first\": %d %v", r.status, r.header)
	}
}
