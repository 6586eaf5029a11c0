package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/storage/storagetest"
)

// TestProvidersConfigureEnableBanking: an application minted by the
// simulator is set once as Enable Banking's settings (sealed); then
// `connections add --sim --check` links a session with it through the
// simulator's flow and stores the session alone, a session given by hand
// is enough, settings of the wrong shape or for a provider without any are
// refused, and once cleared a bare session is refused before anything is
// stored.
func TestProvidersConfigureEnableBanking(t *testing.T) {
	key := strings.Repeat("0c", 32)
	t.Setenv("FINSYNC_ENCRYPTION_KEY", key)
	pool, dbURL := storagetest.NewDB(t)
	s := httptest.NewServer(allsim.New(sim.Options{Seed: 9}))
	defer s.Close()
	ctx := context.Background()
	resp, err := http.Get(s.URL + "/_sim/enablebanking/credentials")
	if err != nil {
		t.Fatal(err)
	}
	appJSON, _ := readAll(resp)
	file := filepath.Join(t.TempDir(), "eb.json")
	if err := os.WriteFile(file, appJSON, 0o600); err != nil {
		t.Fatal(err)
	}
	if c := run(t, dbURL, "providers", "configure", "enablebanking", "--credentials-file", file); c["configured"] != true {
		t.Fatalf("configure: %v", c)
	}
	var sealed []byte
	if err := pool.QueryRow(ctx, `SELECT settings_encrypted FROM provider_settings WHERE provider = 'enablebanking'`).Scan(&sealed); err != nil || bytes.Contains(sealed, []byte("PRIVATE KEY")) {
		t.Fatalf("stored settings: %v (or in the clear)", err)
	}
	list := run(t, dbURL, "providers", "list")["providers"].([]any)
	for _, p := range list {
		p := p.(map[string]any)
		if want := p["provider"] == "enablebanking"; p["configured"] != want {
			t.Errorf("listed %v", p)
		}
	}

	uid := run(t, dbURL, "users", "create", "--email", "ebs@example.com", "--plan", "standard")["id"].(string)
	add := []string{"connections", "add", "--user", uid, "--provider", "enablebanking", "--check"}
	c := run(t, dbURL, append(add, "--sim", "--sim-url", s.URL)...)
	box, err := secrets.FromHex(key)
	if err != nil {
		t.Fatal(err)
	}
	var stored map[string]string
	if err := pool.QueryRow(ctx, `SELECT credentials_encrypted FROM bank_connections WHERE id = $1`, c["id"]).Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	if plain, err := box.Open(sealed); err != nil || json.Unmarshal(plain, &stored) != nil || len(stored) != 1 || stored["session_id"] == "" {
		t.Fatalf("stored credentials: %v, keys %d; want the session alone", err, len(stored))
	}
	bySession := append(add, "--base-url", s.URL+"/enablebanking", "--credentials", `{"session_id":"`+stored["session_id"]+`"}`)
	run(t, dbURL, bySession...)

	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"providers", "configure", "enablebanking", "--credentials", `{"application_id":"a"}`}, "lacks private_key"},
		{[]string{"providers", "configure", "mercury", "--sim"}, "no provider settings"},
		{[]string{"providers", "configure", "nope", "--sim"}, "must be one of"},
	} {
		if err := runErr(t, dbURL, bad.args...); !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: %v, want %q", bad.args, err, bad.want)
		}
	}
	run(t, dbURL, "providers", "clear", "enablebanking")
	if err := runErr(t, dbURL, bySession...); !strings.Contains(err.Error(), "needs application_id, private_key") {
		t.Fatalf("a bare session without settings: %v", err)
	}
	if conns, _ := storedRows(t, pool); conns != 2 {
		t.Fatalf("%d connections, want 2", conns)
	}
}

func readAll(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	var b bytes.Buffer
	_, err := b.ReadFrom(resp.Body)
	return b.Bytes(), err
}
