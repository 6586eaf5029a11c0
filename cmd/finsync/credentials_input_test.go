package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/storage/storagetest"
)

// TestConnectionsAddReadsCredentialsFromFileOrStdin: `connections add`
// takes the credentials from --credentials-file PATH or from standard
// input (--credentials -), storing exactly them (sealed) without a
// warning; --credentials JSON still works but warns on standard error that
// the process list shows it. Both flags at once, a missing or oversized
// file, and malformed credentials from a file store nothing.
func TestConnectionsAddReadsCredentialsFromFileOrStdin(t *testing.T) {
	key := strings.Repeat("0a", 32)
	t.Setenv("FINSYNC_ENCRYPTION_KEY", key)
	pool, dbURL := storagetest.NewDB(t)
	uid := run(t, dbURL, "users", "create", "--email", "stdin@example.com", "--plan", "standard")["id"].(string)
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	exec := func(stdin string, args ...string) (stderr string, err error) {
		var out, errOut bytes.Buffer
		root := newRoot(&out, &errOut)
		root.SetIn(strings.NewReader(stdin))
		root.SetArgs(append([]string{"--database-url", dbURL, "--json", "connections", "add", "--user", uid, "--provider", "mercury"}, args...))
		err = root.ExecuteContext(context.Background())
		return errOut.String(), err
	}
	box, err := secrets.FromHex(key)
	if err != nil {
		t.Fatal(err)
	}
	stored := func() []string {
		rows, err := pool.Query(context.Background(), `SELECT credentials_encrypted FROM bank_connections ORDER BY created_at, id`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var sealed []byte
			if err := rows.Scan(&sealed); err != nil {
				t.Fatal(err)
			}
			plain, err := box.Open(sealed)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(plain))
		}
		return out
	}

	fromFile := write("creds.json", "{\"token\":\"from-file\"}\n")
	if stderr, err := exec("", "--credentials-file", fromFile); err != nil || stderr != "" {
		t.Fatalf("--credentials-file: %v, stderr %q", err, stderr)
	}
	if stderr, err := exec(`{"token":"from-stdin"}`, "--credentials", "-"); err != nil || stderr != "" {
		t.Fatalf("--credentials -: %v, stderr %q", err, stderr)
	}
	stderr, err := exec("", "--credentials", `{"token":"inline"}`)
	if err != nil || !strings.Contains(stderr, "process list") || !strings.Contains(stderr, "--credentials-file") {
		t.Fatalf("--credentials JSON: %v, stderr %q: want it stored with a warning", err, stderr)
	}
	want := []string{`{"token":"from-file"}`, `{"token":"from-stdin"}`, `{"token":"inline"}`}
	if got := stored(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("stored credentials %v, want %v", got, want)
	}

	for _, c := range []struct {
		name, stdin string
		args        []string
		want        string
	}{
		{"both flags", "", []string{"--credentials", `{"token":"t"}`, "--credentials-file", fromFile}, "not both"},
		{"missing file", "", []string{"--credentials-file", filepath.Join(dir, "nope.json")}, "--credentials-file"},
		{"oversized file", "", []string{"--credentials-file", write("big.json", `{"token":"`+strings.Repeat("x", 70<<10)+`"}`)}, "longer than 64 KiB"},
		{"malformed file", "", []string{"--credentials-file", write("bad.json", `{"nope":1}`)}, `unknown key "nope"`},
		{"empty stdin", "", []string{"--credentials", "-"}, "credentials are required"},
		{"malformed stdin", "token", []string{"--credentials", "-"}, "must be a JSON object"},
		{"none", "", nil, "credentials are required"},
	} {
		if _, err := exec(c.stdin, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error about %q", c.name, err, c.want)
		}
	}
	if got := stored(); len(got) != 3 {
		t.Fatalf("refused credentials were stored: %d connections", len(got))
	}
}
