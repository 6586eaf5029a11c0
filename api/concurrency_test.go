package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/api/middleware"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/storage"
)

// cappedInstance starts one more API process over the fleet's database
// with the given cap on expensive requests.
func (f *fleet) cappedInstance(cfg middleware.ConcurrencyConfig) string {
	f.t.Helper()
	a := api.MustNew(api.Config{Providers: all.NewRegistry().Profiles(),
		Store:     storage.New(f.pool),
		Log:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		CursorKey: []byte("test cursor key, 32 bytes long!!"),
		Auth:      middleware.DefaultAuthConfig(),
		Expensive: cfg,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.Run(ctx) }()
	srv := httptest.NewServer(a.Handler)
	f.t.Cleanup(func() { srv.Close(); cancel(); <-done })
	return srv.URL
}

// capResult is one answer of a capped request.
type capResult struct {
	status     int
	retryAfter string
	body       string
}

func getWith(t *testing.T, url, key string) capResult {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return capResult{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: string(b)}
}

// wantCapped asserts a 429 with Retry-After, in v2's envelope
// (RATE_LIMITED, retryAfter in seconds) or v1's (error, retryAfter).
func wantCapped(t *testing.T, what string, r capResult, v1 bool) {
	t.Helper()
	if r.status != http.StatusTooManyRequests {
		t.Fatalf("%s: %d %s, want 429", what, r.status, r.body)
	}
	if n, err := strconv.Atoi(r.retryAfter); err != nil || n < 1 {
		t.Fatalf("%s: Retry-After %q, want whole seconds", what, r.retryAfter)
	}
	var env struct {
		Error      json.RawMessage `json:"error"`
		RetryAfter int64           `json:"retryAfter"`
	}
	if err := json.Unmarshal([]byte(r.body), &env); err != nil || env.RetryAfter < 1 {
		t.Fatalf("%s: body %s, want the error envelope with retryAfter", what, r.body)
	}
	if v1 {
		var msg string
		if json.Unmarshal(env.Error, &msg) != nil || msg == "" {
			t.Fatalf("%s: v1 body %s, want error as a string", what, r.body)
		}
		return
	}
	var d struct{ Code, Message string }
	if json.Unmarshal(env.Error, &d) != nil || d.Code != "RATE_LIMITED" || d.Message == "" {
		t.Fatalf("%s: v2 body %s, want error.code RATE_LIMITED with a message", what, r.body)
	}
}

// TestExpensiveCapAcrossInstances: one credential's expensive requests
// are capped for two API processes together. A large listing held open
// (its table locked) on one process takes the credential's only slot, so
// the same credential's large listings on either process answer 429 with
// Retry-After, while its small listings and another key's large ones pass;
// once the held request ends, its slot serves the next one.
func TestExpensiveCapAcrossInstances(t *testing.T) {
	f := newFleet(t)
	u := f.fx.User(domain.PlanPro, true)
	cred, key := f.fx.KeyWithID(u.ID, nil, nil)
	cfg := middleware.ConcurrencyConfig{PerCredential: 1}
	a, b := f.cappedInstance(cfg), f.cappedInstance(cfg)
	large := "/v2/transactions?limit=250"

	ctx := context.Background()
	lock := lockTransactions(t, f)
	defer lock.Rollback(ctx)
	held := make(chan capResult, 1)
	go func() { held <- getWith(t, a+large, key) }()
	waitHeld(t, f, u.ID, 1, cred)

	for _, url := range []string{a, b} {
		wantCapped(t, "second large listing on "+url, getWith(t, url+large, key), false)
		wantCapped(t, "large v1 listing on "+url, getWith(t, url+"/v1/transactions?limit=150", key), true)
	}
	// Refused requests take no slot and leave the held one alone.
	waitHeld(t, f, u.ID, 1, cred)
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if r := <-held; r.status != http.StatusOK {
		t.Fatalf("held listing: %d %s", r.status, r.body)
	}
	waitHeld(t, f, u.ID, 0, cred)
	// b refused the credential a moment ago, and remembers it that long.
	time.Sleep(middleware.ConcurrencyConfig{}.Defaults().RefusalMemory)
	for _, url := range []string{b, a} {
		if r := getWith(t, url+large, key); r.status != http.StatusOK {
			t.Fatalf("large listing after the slot came back, on %s: %d %s", url, r.status, r.body)
		}
	}
	// A small listing is not capped.
	if r := getWith(t, b+"/v2/transactions?limit=100", key); r.status != http.StatusOK {
		t.Fatalf("small listing: %d %s", r.status, r.body)
	}
}

// TestExpensiveCapCountsEveryInstance: with a cap of 2, two requests held
// open, one on each process, take both slots; a third on either is
// refused, and a different key of the same user is not.
func TestExpensiveCapCountsEveryInstance(t *testing.T) {
	f := newFleet(t)
	u := f.fx.User(domain.PlanPro, true)
	cred, key := f.fx.KeyWithID(u.ID, nil, nil)
	otherCred, otherKey := f.fx.KeyWithID(u.ID, nil, nil)
	cfg := middleware.ConcurrencyConfig{PerCredential: 2}
	a, b := f.cappedInstance(cfg), f.cappedInstance(cfg)
	large := "/v2/transactions?limit=101"

	ctx := context.Background()
	lock := lockTransactions(t, f)
	defer lock.Rollback(ctx)
	held := make(chan capResult, 2)
	go func() { held <- getWith(t, a+large, key) }()
	go func() { held <- getWith(t, b+large, key) }()
	waitHeld(t, f, u.ID, 2, cred)
	wantCapped(t, "third on a", getWith(t, a+large, key), false)
	wantCapped(t, "third on b", getWith(t, b+large, key), false)
	// Another key has its own slots: its request waits on the lock too,
	// and is released with it.
	go func() { held <- getWith(t, a+large, otherKey) }()
	waitHeld(t, f, u.ID, 2, cred)
	waitHeld(t, f, u.ID, 1, otherCred)
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if r := <-held; r.status != http.StatusOK {
			t.Fatalf("held listing: %d %s", r.status, r.body)
		}
	}
	if r := <-held; r.status != http.StatusOK {
		t.Fatalf("other key's listing: %d %s", r.status, r.body)
	}
	waitHeld(t, f, u.ID, 0, cred, otherCred)
}

// TestExpensiveSlotOfADeadProcessIsReclaimed: a slot left by a process
// that died (claimed, never renewed nor released) refuses the credential's
// expensive requests on every process until its lease expires, and no
// longer.
func TestExpensiveSlotOfADeadProcessIsReclaimed(t *testing.T) {
	f := newFleet(t)
	u := f.fx.User(domain.PlanPro, true)
	credID, key := f.fx.KeyWithID(u.ID, nil, nil)
	cfg := middleware.ConcurrencyConfig{PerCredential: 1}
	a, b := f.cappedInstance(cfg), f.cappedInstance(cfg)
	large := "/v2/transactions?limit=250"

	ttl := 2 * time.Second
	st := storage.New(f.pool)
	_, ok, err := st.AcquireSlot(context.Background(), storage.SlotClaim{
		UserID: u.ID, CredentialID: credID, Cap: 1, Holder: uuid.New(), TTL: ttl,
	})
	if err != nil || !ok {
		t.Fatalf("claim as a dead process: %v, %v", ok, err)
	}
	claimed := time.Now()
	wantCapped(t, "on a while the dead slot lives", getWith(t, a+large, key), false)
	wantCapped(t, "on b while the dead slot lives", getWith(t, b+large, key), false)
	for {
		r := getWith(t, b+large, key)
		if r.status == http.StatusOK {
			break
		}
		wantCapped(t, "before the lease expired", r, false)
		if time.Since(claimed) > ttl+2*time.Second {
			t.Fatalf("dead process's slot not reclaimed %v after its claim (TTL %v)", time.Since(claimed), ttl)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if since := time.Since(claimed); since < ttl-200*time.Millisecond {
		t.Fatalf("slot reclaimed after %v, before its TTL %v", since, ttl)
	}
	t.Logf("dead process's slot reclaimed %v after its claim (TTL %v)", time.Since(claimed).Round(time.Millisecond), ttl)
}

// TestExpensiveSlotRenewedWhileItsRequestRuns: a request running longer
// than the slot's TTL keeps its slot (renewed every third of the TTL), so
// the cap still holds for it.
func TestExpensiveSlotRenewedWhileItsRequestRuns(t *testing.T) {
	f := newFleet(t)
	u := f.fx.User(domain.PlanPro, true)
	cred, key := f.fx.KeyWithID(u.ID, nil, nil)
	cfg := middleware.ConcurrencyConfig{PerCredential: 1, SlotTTL: 600 * time.Millisecond}
	a, b := f.cappedInstance(cfg), f.cappedInstance(cfg)
	large := "/v2/transactions?limit=250"

	ctx := context.Background()
	lock := lockTransactions(t, f)
	defer lock.Rollback(ctx)
	held := make(chan capResult, 1)
	go func() { held <- getWith(t, a+large, key) }()
	waitHeld(t, f, u.ID, 1, cred)
	time.Sleep(3 * cfg.SlotTTL)
	wantCapped(t, "after three TTLs of the held request", getWith(t, b+large, key), false)
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if r := <-held; r.status != http.StatusOK {
		t.Fatalf("held listing: %d %s", r.status, r.body)
	}
}

// waitHeld waits until the credentials hold n unexpired slots in all.
func waitHeld(t *testing.T, f *fleet, userID uuid.UUID, n int, creds ...uuid.UUID) {
	t.Helper()
	st := storage.New(f.pool)
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := 0
		for _, c := range creds {
			k, err := st.CountHeldSlots(context.Background(), userID, c)
			if err != nil {
				t.Fatal(err)
			}
			got += k
		}
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d slots held, want %d", got, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestExpensiveCapPerProcess: a process runs at most PerProcess expensive
// requests at once of all credentials together, so tenants each within
// their own cap cannot take its whole pool: with one held open on a, the
// next tenant's large listing on a answers 429 with Retry-After; once it
// ends, that tenant is served on both processes.
func TestExpensiveCapPerProcess(t *testing.T) {
	f := newFleet(t)
	u1, u2 := f.fx.User(domain.PlanPro, true), f.fx.User(domain.PlanPro, true)
	cred1, key1 := f.fx.KeyWithID(u1.ID, nil, nil)
	key2 := f.fx.Key(u2.ID, nil)
	cfg := middleware.ConcurrencyConfig{PerCredential: 1, PerProcess: 1}
	a, b := f.cappedInstance(cfg), f.cappedInstance(cfg)
	large := "/v2/transactions?limit=250"

	ctx := context.Background()
	lock := lockTransactions(t, f)
	defer lock.Rollback(ctx)
	held := make(chan capResult, 1)
	go func() { held <- getWith(t, a+large, key1) }()
	waitHeld(t, f, u1.ID, 1, cred1)
	busy := getWith(t, a+large, key2)
	wantCapped(t, "another tenant's large listing on the busy process", busy, false)
	// The refusal says it is the server's cap, not the key's.
	if !strings.Contains(busy.body, "on this server: 1 at a time, all API keys together") {
		t.Fatalf("the process cap's refusal: %s", busy.body)
	}
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if r := <-held; r.status != http.StatusOK {
		t.Fatalf("held listing: %d %s", r.status, r.body)
	}
	for _, url := range []string{b, a} {
		if r := getWith(t, url+large, key2); r.status != http.StatusOK {
			t.Fatalf("large listing on %s once the process is free: %d %s", url, r.status, r.body)
		}
	}
}

// lockTransactions holds the transactions table in a transaction of its
// own, so that listings started meanwhile wait (holding their slots) until
// the caller rolls it back.
func lockTransactions(t *testing.T, f *fleet) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	lock, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Exec(ctx, `LOCK TABLE transactions IN ACCESS EXCLUSIVE MODE`); err != nil {
		lock.Rollback(ctx)
		t.Fatal(err)
	}
	return lock
}
