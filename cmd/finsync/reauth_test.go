package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/finsync/finsync/api/ops"
	"github.com/finsync/finsync/linking"
	"github.com/finsync/finsync/process"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simkit"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
	"github.com/finsync/finsync/worker"
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

// TestOpsConsoleReauthIsTheCLIs: the ops console's re-auth (opsReauth,
// wired by serve and dev) does what `connections reauth` does through the
// same linking.Linker: credentials that are not the provider's are a
// refusal naming the problem but no value, nothing stored; an unknown
// connection stays storage.ErrNotFound; good credentials are sealed on the
// connection and its sync is enqueued.
func TestOpsConsoleReauthIsTheCLIs(t *testing.T) {
	key := strings.Repeat("0d", 32)
	t.Setenv("FINSYNC_ENCRYPTION_KEY", key)
	pool, dbURL := storagetest.NewDB(t)
	s := httptest.NewServer(allsim.New(sim.Options{Seed: 9}))
	defer s.Close()
	ctx := context.Background()
	box, err := secrets.FromHex(key)
	if err != nil {
		t.Fatal(err)
	}
	uid := run(t, dbURL, "users", "create", "--email", "ops-reauth@example.com", "--plan", "standard")["id"].(string)
	id := uuid.MustParse(run(t, dbURL, "connections", "add", "--user", uid, "--provider", "plaid", "--sim", "--sim-url", s.URL, "--sim-name", "bob")["id"].(string))
	if _, err := pool.Exec(ctx, `DELETE FROM river_job`); err != nil {
		t.Fatal(err)
	}
	st := storage.New(pool)
	jobs, err := worker.NewInsertClient(st)
	if err != nil {
		t.Fatal(err)
	}
	reauth := process.OpsReauth(&linking.Linker{Store: st, Registry: all.NewRegistry(), Box: box, Jobs: jobs})
	sealed := func() []byte {
		var b []byte
		if err := pool.QueryRow(ctx, `SELECT credentials_encrypted FROM bank_connections WHERE id = $1`, id).Scan(&b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	before := sealed()

	for _, c := range []struct{ creds, want string }{
		{`{"api_key":"sk_live_SECRET1"}`, `unknown key "api_key"`},
		{`{"access_token":"SECRET2"`, "not valid JSON"},
		{`["SECRET3"]`, "must be a JSON object"},
		{`{"access_token":""}`, "access_token is empty"},
	} {
		res, err := reauth(ctx, ops.ReauthRequest{ConnectionID: id, Credentials: []byte(c.creds)})
		if err != nil || !strings.Contains(res.Refused, c.want) || res.JobID != 0 {
			t.Errorf("reauth with %s: %+v, %v; want a refusal saying %q", c.creds, res, err, c.want)
		}
		if strings.Contains(res.Refused, "SECRET") {
			t.Errorf("the refusal shows a credential: %s", res.Refused)
		}
	}
	if res, err := reauth(ctx, ops.ReauthRequest{ConnectionID: id, Credentials: allsim.Credentials("plaid", "bob"), BaseURL: "ftp://x"}); err != nil || !strings.Contains(res.Refused, "not an absolute http(s) URL") {
		t.Errorf("reauth with a bad base URL: %+v, %v", res, err)
	}
	if _, err := reauth(ctx, ops.ReauthRequest{ConnectionID: uuid.New(), Credentials: allsim.Credentials("plaid", "bob")}); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("reauth of an unknown connection: %v, want storage.ErrNotFound", err)
	}
	var queued int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM river_job`).Scan(&queued); err != nil || queued != 0 || !bytes.Equal(sealed(), before) {
		t.Fatalf("refused re-auths changed the connection or queued %d jobs (%v)", queued, err)
	}

	fresh := allsim.Credentials("plaid", "bob"+simkit.RelinkSeparator+"1")
	res, err := reauth(ctx, ops.ReauthRequest{ConnectionID: id, Credentials: fresh})
	if err != nil || res.Refused != "" || res.JobID == 0 {
		t.Fatalf("reauth: %+v, %v", res, err)
	}
	plain, err := box.Open(sealed())
	if err != nil || !bytes.Equal(plain, fresh) {
		t.Fatalf("stored credentials %s (%v), want the new ones", plain, err)
	}
	var kind, conn string
	if err := pool.QueryRow(ctx, `SELECT kind, args->>'connection_id' FROM river_job WHERE id = $1`, res.JobID).Scan(&kind, &conn); err != nil || kind != "sync_connection" || conn != id.String() {
		t.Fatalf("job %d: %s %s (%v)", res.JobID, kind, conn, err)
	}
}
