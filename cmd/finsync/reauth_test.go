package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simkit"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/storage/storagetest"
)

// TestConnectionsReauth: `connections reauth ID` seals the new credentials
// on the existing connection (same id, same base URL unless told), drops
// the old link's cursor and enqueues the sync; an unknown id and another
// provider's credentials are refused with nothing changed.
func TestConnectionsReauth(t *testing.T) {
	key := strings.Repeat("0c", 32)
	t.Setenv("FINSYNC_ENCRYPTION_KEY", key)
	pool, dbURL := storagetest.NewDB(t)
	s := httptest.NewServer(allsim.New(sim.Options{Seed: 9}))
	defer s.Close()
	ctx := context.Background()
	box, err := secrets.FromHex(key)
	if err != nil {
		t.Fatal(err)
	}
	uid := run(t, dbURL, "users", "create", "--email", "reauth@example.com", "--plan", "standard")["id"].(string)
	id := run(t, dbURL, "connections", "add", "--user", uid, "--provider", "plaid", "--sim", "--sim-url", s.URL, "--sim-name", "alice")["id"].(string)
	// The link broke: the connection shows the error, its cursor is the old
	// Item's, and its sync has run.
	if _, err := pool.Exec(ctx, `UPDATE bank_connections SET status = 'error', last_provider_error_code = 'ITEM_LOGIN_REQUIRED',
		sync_cursor = 'old-item-cursor', sync_state = '{"x":1}'`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM river_job`); err != nil {
		t.Fatal(err)
	}
	stored := func() (token, cursor, state, base string, jobs int) {
		t.Helper()
		var sealed []byte
		if err := pool.QueryRow(ctx, `SELECT credentials_encrypted, sync_cursor, sync_state::text, base_url,
			(SELECT count(*) FROM river_job WHERE kind = 'sync_connection' AND state = 'available') FROM bank_connections WHERE id = $1`, id).
			Scan(&sealed, &cursor, &state, &base, &jobs); err != nil {
			t.Fatal(err)
		}
		plain, err := box.Open(sealed)
		if err != nil {
			t.Fatal(err)
		}
		var c map[string]string
		if err := json.Unmarshal(plain, &c); err != nil {
			t.Fatal(err)
		}
		return c["access_token"], cursor, state, base, jobs
	}
	oldToken, _, _, oldBase, _ := stored()

	// Refused: a malformed id, an unknown connection, another provider's
	// credentials, no credentials at all. Nothing changes.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"not-a-uuid", "--sim", "--sim-url", s.URL}, "connection id"},
		{[]string{uuid.NewString(), "--sim", "--sim-url", s.URL}, "not found"},
		{[]string{id, "--credentials", string(allsim.Credentials("mercury", "alice"))}, "unknown key"},
		{[]string{id, "--credentials", `{"api_key":"sk_test_1"}`}, `unknown key "api_key"`},
		{[]string{id}, "credentials are required"},
	} {
		err := runErr(t, dbURL, append([]string{"connections", "reauth"}, c.args...)...)
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("reauth %v: %v, want %q", c.args, err, c.want)
		}
	}
	if token, cursor, _, _, jobs := stored(); token != oldToken || cursor != "old-item-cursor" || jobs != 0 {
		t.Fatalf("a refused reauth changed the connection: token %q, cursor %q, %d jobs", token, cursor, jobs)
	}

	// Re-linked credentials from the simulator, checked with the provider.
	relinked := "alice" + simkit.RelinkSeparator + "1"
	c := run(t, dbURL, "connections", "reauth", id, "--sim", "--sim-url", s.URL, "--sim-name", relinked, "--check")
	if c["id"] != id {
		t.Fatalf("reauth answered connection %v, want %s", c["id"], id)
	}
	token, cursor, state, base, jobs := stored()
	want := map[string]string{}
	if err := json.Unmarshal(allsim.Credentials("plaid", relinked), &want); err != nil {
		t.Fatal(err)
	}
	if token == oldToken || token != want["access_token"] || cursor != "" || state != "{}" || base != oldBase || jobs != 1 {
		t.Fatalf("after reauth: token %q (want %q), cursor %q, state %s, base %q, %d sync jobs", token, want["access_token"], cursor, state, base, jobs)
	}

	// From a file, keeping the stored base URL; the waiting sync is not doubled.
	path := filepath.Join(t.TempDir(), "creds.json")
	if err := os.WriteFile(path, append(allsim.Credentials("plaid", "alice"+simkit.RelinkSeparator+"2"), '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, dbURL, "connections", "reauth", id, "--credentials-file", path)
	if token2, _, _, base2, jobs := stored(); token2 == token || base2 != oldBase || jobs != 1 {
		t.Fatalf("reauth from a file: token %q, base %q (want %q), %d jobs", token2, base2, oldBase, jobs)
	}
	if conns, _ := storedRows(t, pool); conns != 1 {
		t.Fatalf("%d connections after reauth, want 1", conns)
	}
}
