package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/storage/storagetest"
)

// runErr executes one finsync command that should fail and returns its error.
func runErr(t *testing.T, dbURL string, args ...string) error {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRoot(&out, &errOut)
	root.SetArgs(append([]string{"--database-url", dbURL, "--json"}, args...))
	err := root.ExecuteContext(context.Background())
	if err == nil {
		t.Fatalf("finsync %s succeeded: %s", strings.Join(args, " "), out.String())
	}
	return err
}

// storedRows counts the connections and jobs in the database.
func storedRows(t *testing.T, pool *pgxpool.Pool) (conns, jobs int) {
	t.Helper()
	err := pool.QueryRow(context.Background(),
		`SELECT (SELECT count(*) FROM bank_connections), (SELECT count(*) FROM river_job)`).Scan(&conns, &jobs)
	if err != nil {
		t.Fatal(err)
	}
	return conns, jobs
}

// TestConnectionsAddRefusesMalformedCredentials: credentials that do not
// fit the provider's declared schema, and with --check credentials the
// provider refuses, store nothing and enqueue nothing.
func TestConnectionsAddRefusesMalformedCredentials(t *testing.T) {
	t.Setenv("FINSYNC_ENCRYPTION_KEY", strings.Repeat("0a", 32))
	pool, dbURL := storagetest.NewDB(t)
	s := httptest.NewServer(allsim.New(sim.Options{Seed: 3}))
	defer s.Close()
	uid := run(t, dbURL, "users", "create", "--email", "creds@example.com", "--plan", "standard")["id"].(string)
	add := func(provider, creds string, extra ...string) []string {
		return append([]string{"connections", "add", "--user", uid, "--provider", provider, "--credentials", creds}, extra...)
	}

	for _, c := range []struct{ provider, creds, want string }{
		{"mercury", `{"nope":1}`, `unknown key "nope"`},
		{"mercury", `{"token":"t","nope":"x"}`, `unknown key "nope"`},
		{"mercury", `{"token":42}`, "token must be a string"},
		{"mercury", `{"token":""}`, "token is empty"},
		{"mercury", `{"token":null}`, "token must be a string"},
		{"mercury", `{}`, "lacks token"},
		{"mercury", `["token"]`, "must be a JSON object"},
		{"mercury", `token`, "must be a JSON object"},
		{"mercury", `{"token":"t"} {"token":"u"}`, "nothing after it"},
		{"stripe", `{"api_key":"k","account":""}`, "account is empty"},
		{"plaid", `{"client_id":"c","secret":"s"}`, "lacks access_token"},
	} {
		err := runErr(t, dbURL, add(c.provider, c.creds)...)
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: %v, want %q", c.provider, c.creds, err, c.want)
		}
	}
	if err := runErr(t, dbURL, add("mercury", `{"token":"t"}`, "--base-url", "not a url")...); !strings.Contains(err.Error(), "--base-url") {
		t.Errorf("bad --base-url: %v", err)
	}
	if conns, jobs := storedRows(t, pool); conns != 0 || jobs != 0 {
		t.Fatalf("refused credentials stored %d connections and %d jobs", conns, jobs)
	}

	// --check: well-formed credentials the provider refuses store nothing.
	base := allsim.BaseURL("mercury", s.URL)
	err := runErr(t, dbURL, add("mercury", `{"token":"not-a-simulated-token"}`, "--base-url", base, "--check")...)
	if !strings.Contains(err.Error(), "--check") || !strings.Contains(err.Error(), "nothing stored") {
		t.Fatalf("--check with refused credentials: %v", err)
	}
	if conns, jobs := storedRows(t, pool); conns != 0 || jobs != 0 {
		t.Fatalf("--check refusal stored %d connections and %d jobs", conns, jobs)
	}
	// ... and credentials the provider accepts are stored, with their sync.
	good := string(allsim.Credentials("mercury", "checked"))
	if c := run(t, dbURL, add("mercury", good, "--base-url", base, "--check")...); c["status"] != "active" {
		t.Fatalf("checked connection %v", c)
	}
	if conns, jobs := storedRows(t, pool); conns != 1 || jobs != 1 {
		t.Fatalf("after a checked add: %d connections and %d jobs, want 1 and 1", conns, jobs)
	}
}

// TestConnectionsAddClaimsASetupToken: a SimpleFIN setup token is claimed
// by `connections add`, which stores only the access URL it was exchanged
// for (sealed); the spent token then stores nothing more.
func TestConnectionsAddClaimsASetupToken(t *testing.T) {
	key := strings.Repeat("0a", 32)
	t.Setenv("FINSYNC_ENCRYPTION_KEY", key)
	pool, dbURL := storagetest.NewDB(t)
	s := httptest.NewServer(allsim.New(sim.Options{Seed: 3}))
	defer s.Close()
	uid := run(t, dbURL, "users", "create", "--email", "sfin@example.com", "--plan", "standard")["id"].(string)
	resp, err := http.Get(s.URL + "/_sim/simplefin/token")
	if err != nil {
		t.Fatal(err)
	}
	token, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	creds := `{"setup_token":"` + strings.TrimSpace(string(token)) + `"}`
	add := []string{"connections", "add", "--user", uid, "--provider", "simplefin", "--credentials", creds}
	if c := run(t, dbURL, add...); c["status"] != "active" {
		t.Fatalf("connection %v", c)
	}
	var sealed []byte
	if err := pool.QueryRow(context.Background(), `SELECT credentials_encrypted FROM bank_connections`).Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	box, err := secrets.FromHex(key)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := box.Open(sealed)
	if err != nil {
		t.Fatal(err)
	}
	var stored map[string]string
	if err := json.Unmarshal(plain, &stored); err != nil || len(stored) != 1 || !strings.HasPrefix(stored["access_url"], "http://") {
		t.Fatalf("stored credentials %s: want only the access URL", plain)
	}
	if err := runErr(t, dbURL, add...); !strings.Contains(err.Error(), "nothing stored") {
		t.Fatalf("spent setup token: %v", err)
	}
	if conns, _ := storedRows(t, pool); conns != 1 {
		t.Fatalf("%d connections after the spent token, want 1", conns)
	}
}

// TestConnectionsAddEnableBanking: --sim --check adds an Enable Banking
// connection the simulator accepts, its private key sealed with the rest;
// a minted application with a session it does not own is refused by
// --check, nothing stored.
func TestConnectionsAddEnableBanking(t *testing.T) {
	key := strings.Repeat("0b", 32)
	t.Setenv("FINSYNC_ENCRYPTION_KEY", key)
	pool, dbURL := storagetest.NewDB(t)
	s := httptest.NewServer(allsim.New(sim.Options{Seed: 5}))
	defer s.Close()
	uid := run(t, dbURL, "users", "create", "--email", "eb@example.com", "--plan", "standard")["id"].(string)
	add := []string{"connections", "add", "--user", uid, "--provider", "enablebanking", "--sim-url", s.URL, "--check"}
	if c := run(t, dbURL, append(add, "--sim")...); c["status"] != "active" {
		t.Fatalf("connection %v", c)
	}
	var sealed []byte
	if err := pool.QueryRow(context.Background(), `SELECT credentials_encrypted FROM bank_connections`).Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("PRIVATE KEY")) {
		t.Fatal("the private key is stored in the clear")
	}
	box, err := secrets.FromHex(key)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := box.Open(sealed)
	var stored map[string]string
	if err != nil || json.Unmarshal(plain, &stored) != nil || stored["session_id"] == "" || !strings.Contains(stored["private_key"], "PRIVATE KEY") {
		t.Fatalf("stored credentials do not open to the three keys: %v", err)
	}
	resp, err := http.Get(s.URL + "/_sim/enablebanking/credentials")
	if err != nil {
		t.Fatal(err)
	}
	var app map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&app); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	app["session_id"] = stored["session_id"] // the demo application's session
	creds, _ := json.Marshal(app)
	err = runErr(t, dbURL, "connections", "add", "--user", uid, "--provider", "enablebanking", "--base-url", s.URL+"/enablebanking", "--check", "--credentials", string(creds))
	if err == nil || !strings.Contains(err.Error(), "nothing stored") {
		t.Fatalf("another application's session: %v", err)
	}
	if conns, _ := storedRows(t, pool); conns != 1 {
		t.Fatalf("%d connections, want 1", conns)
	}
}
