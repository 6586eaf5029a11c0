package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
)

// revocationBound is the guarantee of docs/consistency.md (2 ×
// VersionCheckEvery); revocationSlack allows for the HTTP round trips and
// scheduling of a loaded test machine on top of it.
const (
	revocationBound = 2 * time.Second
	revocationSlack = time.Second
)

// call sends one request with key to base+path and returns the status and
// body.
func call(t *testing.T, method, url, key, body string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// TestScopedKeyReadsItsOwnAccountsOnEveryReplica creates accounts with a
// key scoped by --accounts through one API process and reads each on the
// next request through the other (and the same), caches warm: no miss.
func TestScopedKeyReadsItsOwnAccountsOnEveryReplica(t *testing.T) {
	f := newFleet(t)
	urls := make([]string, 2)
	urls[0], _ = f.instance()
	urls[1], _ = f.instance()
	u := f.fx.User(domain.PlanPro, true)
	key := f.fx.Key(u.ID, []uuid.UUID{}) // scoped, to no account yet
	for _, url := range urls {
		if st, b := call(t, http.MethodGet, url+"/v2/accounts", key, ""); st != http.StatusOK {
			t.Fatalf("warm-up: %d %s", st, b)
		}
	}
	const rounds = 50
	misses := 0
	for i := 0; i < rounds; i++ {
		writer, reader := urls[i%2], urls[(i+1)%2]
		st, b := call(t, http.MethodPost, writer+"/v2/accounts", key,
			fmt.Sprintf(`{"name":"Cash %d","type":"depository","currency":"EUR"}`, i))
		if st != http.StatusCreated {
			t.Fatalf("round %d: create: %d %s", i, st, b)
		}
		var created struct {
			Account struct {
				ID string `json:"id"`
			} `json:"account"`
		}
		if err := json.Unmarshal(b, &created); err != nil || created.Account.ID == "" {
			t.Fatalf("round %d: create answered %s (%v)", i, b, err)
		}
		// The next request of the credential: the other replica, then the
		// writer itself.
		for _, url := range []string{reader, writer} {
			if st, b := call(t, http.MethodGet, url+"/v2/accounts/"+created.Account.ID, key, ""); st != http.StatusOK {
				misses++
				t.Errorf("round %d: GET own new account on %s: %d %s", i, url, st, b)
			}
		}
		st, b = call(t, http.MethodGet, reader+"/v2/accounts?limit=100", key, "")
		if st != http.StatusOK || !strings.Contains(string(b), created.Account.ID) {
			misses++
			t.Errorf("round %d: list on the other replica misses the new account %s (status %d)", i, created.Account.ID, st)
		}
	}
	t.Logf("%d create-then-read rounds across 2 replicas: %d misses", rounds, misses)
}

// waitStatus polls url with key until it answers want, and returns how long
// that took after since; it fails the test past the bound and slack.
func waitStatus(t *testing.T, url, key string, want int, since time.Time) time.Duration {
	t.Helper()
	for {
		st, _ := call(t, http.MethodGet, url, key, "")
		if st == want {
			return time.Since(since)
		}
		if time.Since(since) > revocationBound+revocationSlack {
			t.Fatalf("%s still answers %d, not %d, %s after the change", url, st, want, time.Since(since))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRevocationReachesEveryReplicaWithoutNotify disables a key, and turns
// a user's storage mode off, by plain SQL (no NOTIFY is sent) while both
// replicas hold the credential in their caches: the other replica refuses
// within the stated bound.
func TestRevocationReachesEveryReplicaWithoutNotify(t *testing.T) {
	f := newFleet(t)
	a, b := f.instancePair()
	ctx := context.Background()
	id, key := f.warmKey(a, b)
	changed := time.Now()
	if _, err := f.pool.Exec(ctx, `UPDATE credentials SET enabled = false WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	took := waitStatus(t, b+"/v2/accounts", key, http.StatusUnauthorized, changed)
	t.Logf("key disabled by SQL without NOTIFY: refused by the other replica after %s", took)

	u2 := f.fx.User(domain.PlanPro, true)
	key2 := f.fx.Key(u2.ID, nil)
	for _, url := range []string{a, b} {
		waitStatus(t, url+"/v2/accounts", key2, http.StatusOK, time.Now())
	}
	changed = time.Now()
	if _, err := f.pool.Exec(ctx, `UPDATE users SET storage_mode = false WHERE id = $1`, u2.ID); err != nil {
		t.Fatal(err)
	}
	took = waitStatus(t, b+"/v2/accounts", key2, http.StatusForbidden, changed)
	t.Logf("storage mode turned off by SQL without NOTIFY: honoured by the other replica after %s", took)
}

// TestRevocationReachesReplicaWhoseListenerWasKilled terminates every
// backend listening for credential changes, then disables a key through the
// storage path the CLI uses: each replica refuses it within the bound.
func TestRevocationReachesReplicaWhoseListenerWasKilled(t *testing.T) {
	f := newFleet(t)
	a, b := f.instancePair()
	ctx := context.Background()
	id, key := f.warmKey(a, b)
	// Both listeners connected (each process starts its own at Run).
	listeners := func() int {
		t.Helper()
		var n int
		if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND query ILIKE 'LISTEN %' AND state = 'idle'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for start := time.Now(); listeners() < 2; time.Sleep(20 * time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("%d listening backends after 10 s, want one per replica", listeners())
		}
	}
	var killed int
	if err := f.pool.QueryRow(ctx, `
		SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND query ILIKE 'LISTEN %' AND pid <> pg_backend_pid()) k`).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	if killed < 2 {
		t.Fatalf("terminated %d listening backends, want one per replica", killed)
	}
	changed := time.Now()
	if err := f.fx.St.DisableCredential(ctx, id); err != nil {
		t.Fatal(err)
	}
	for _, url := range []string{b, a} {
		took := waitStatus(t, url+"/v2/accounts", key, http.StatusUnauthorized, changed)
		t.Logf("listeners killed, key disabled: %s refuses after %s", url, took)
	}
}

// instancePair starts two API processes over the fleet's database.
func (f *fleet) instancePair() (a, b string) {
	a, _ = f.instance()
	b, _ = f.instance()
	return a, b
}

// warmKey issues a key of a new pro user and waits until every process
// at urls has accepted it (so each holds it in its credential cache).
func (f *fleet) warmKey(urls ...string) (id uuid.UUID, key string) {
	f.t.Helper()
	u := f.fx.User(domain.PlanPro, true)
	id, key = f.fx.KeyWithID(u.ID, nil, nil)
	for _, url := range urls {
		waitStatus(f.t, url+"/v2/accounts", key, http.StatusOK, time.Now())
	}
	return id, key
}
