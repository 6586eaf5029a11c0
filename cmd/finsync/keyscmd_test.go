package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/finsync/finsync/config"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/secrets/secretstest"
	"github.com/finsync/finsync/storage/storagetest"
)

// runKeysCmd executes one finsync command with ctx, progress going to
// errOut, and returns what it printed on standard output and its error.
func runKeysCmd(ctx context.Context, dbURL string, errOut io.Writer, args ...string) ([]byte, error) {
	var out bytes.Buffer
	root := newRoot(&out, errOut)
	root.SetArgs(append([]string{"--database-url", dbURL, "--json"}, args...))
	err := root.ExecuteContext(ctx)
	return out.Bytes(), err
}

// TestServeAndWorkerRefuseWithoutKeys: outside `finsync dev`, serve and
// worker do not start without both shared keys, and say how to make one,
// before they touch the database.
func TestServeAndWorkerRefuseWithoutKeys(t *testing.T) {
	const unreachable = "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=1"
	good := strings.Repeat("1a", 32)
	for _, tt := range []struct {
		name                  string
		encryption, cursorKey string
		want                  []string
	}{
		{"no keys", "", "", []string{"FINSYNC_ENCRYPTION_KEY and FINSYNC_CURSOR_KEY are not set", "finsync keys generate"}},
		{"no cursor key", good, "", []string{"FINSYNC_CURSOR_KEY is not set"}},
		{"no encryption key", "", good, []string{"FINSYNC_ENCRYPTION_KEY is not set"}},
		{"short encryption key", "abcd", good, []string{"FINSYNC_ENCRYPTION_KEY: encryption key 1 of 1 must be 64 hex characters"}},
		{"short cursor key", good, "short", []string{"FINSYNC_CURSOR_KEY: cursor key 1 of 1 is shorter than 16 bytes"}},
		{"both malformed", "abcd", "short", []string{"FINSYNC_ENCRYPTION_KEY: encryption key", "FINSYNC_CURSOR_KEY: cursor key"}},
	} {
		t.Setenv("FINSYNC_ENCRYPTION_KEY", tt.encryption)
		t.Setenv("FINSYNC_CURSOR_KEY", tt.cursorKey)
		for _, command := range []string{"serve", "worker"} {
			_, err := runKeysCmd(context.Background(), unreachable, io.Discard, command, "--metrics-addr", "")
			if err == nil {
				t.Fatalf("%s: %s started", tt.name, command)
			}
			for _, w := range append(tt.want, "openssl rand -hex 32") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: %s: error %q does not say %q", tt.name, command, err, w)
				}
			}
			if strings.Contains(err.Error(), "database") {
				t.Errorf("%s: %s reached the database before checking its keys: %v", tt.name, command, err)
			}
		}
	}
}

func TestKeysGenerate(t *testing.T) {
	out, err := runKeysCmd(context.Background(), "", io.Discard, "keys", "generate")
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Key, KeyID string }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	raw, err := hex.DecodeString(got.Key)
	if err != nil || len(raw) != secrets.KeySize || secrets.KeyID(raw) != got.KeyID {
		t.Fatalf("generated %+v", got)
	}
	t.Setenv("FINSYNC_ENCRYPTION_KEY", got.Key)
	t.Setenv("FINSYNC_CURSOR_KEY", got.Key)
	t.Setenv("FINSYNC_OPS_TOKEN", got.Key)
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		t.Fatalf("a generated key is refused as FINSYNC_OPS_TOKEN: %v", err)
	}
	if _, err := cfg.RequireKeys(); err != nil {
		t.Fatalf("a generated key is refused: %v", err)
	}
	cmd, _, err := newRoot(io.Discard, io.Discard).Find([]string{"keys", "generate"})
	if err != nil || !strings.Contains(cmd.Short, "FINSYNC_OPS_TOKEN") || !strings.Contains(cmd.Long, "FINSYNC_OPS_TOKEN") {
		t.Fatalf("keys generate's help does not name FINSYNC_OPS_TOKEN (%v)", err)
	}
}

// sealedSnapshot returns every stored sealed value by row id.
func sealedSnapshot(t *testing.T, pool *pgxpool.Pool) map[string][]byte {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		SELECT id::text, credentials_encrypted FROM bank_connections WHERE credentials_encrypted IS NOT NULL
		UNION ALL SELECT id::text, sealed_secret FROM destinations
		UNION ALL SELECT id::text, settings_encrypted FROM provider_settings`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][]byte{}
	for rows.Next() {
		var id string
		var v []byte
		if err := rows.Scan(&id, &v); err != nil {
			t.Fatal(err)
		}
		out[id] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// openAll opens every value with box and reports how many open.
func openAll(box *secrets.Box, sealed map[string][]byte) (map[string]string, int) {
	plain := map[string]string{}
	for id, v := range sealed {
		if p, err := box.Open(v); err == nil {
			plain[id] = string(p)
		}
	}
	return plain, len(plain)
}

// cancelOnWrite cancels a context at the first progress line it receives.
type cancelOnWrite struct {
	once   sync.Once
	cancel context.CancelFunc
}

func (c *cancelOnWrite) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("re-sealed")) {
		c.once.Do(c.cancel)
	}
	return len(p), nil
}

// rotation is what `keys rotate-encryption --json` prints.
type rotation struct {
	KeyID   string `json:"keyId"`
	Columns []struct {
		Column     string   `json:"column"`
		Read       int      `json:"read"`
		Resealed   int      `json:"resealed"`
		Current    int      `json:"alreadyCurrent"`
		Unreadable []string `json:"unreadable"`
	} `json:"columns"`
}

func (r rotation) totals() (resealed, current int) {
	for _, c := range r.Columns {
		resealed += c.Resealed
		current += c.Current
	}
	return resealed, current
}

// TestRotateEncryption seals connections, destinations and a provider's
// settings with an old key (one in the format without key ids), rotates to
// a new key with an interrupted run and a second run that resumes it, and
// checks that then only the new key is needed, that a third run changes
// nothing, and that a value sealed with an unknown key is reported by id.
func TestRotateEncryption(t *testing.T) {
	oldKey, newKey := strings.Repeat("0c", 32), strings.Repeat("0d", 32)
	oldBox, _ := secrets.FromHex(oldKey)
	newBox, _ := secrets.FromHex(newKey)
	ctx := context.Background()
	pool, dbURL := storagetest.NewDB(t)
	s := httptest.NewServer(allsim.New(sim.Options{Seed: 5}))
	defer s.Close()

	t.Setenv("FINSYNC_ENCRYPTION_KEY", oldKey)
	uid := run(t, dbURL, "users", "create", "--email", "rotate@example.com", "--plan", "pro")["id"].(string)
	var conns []string
	for _, p := range []string{"mercury", "stripe", "plaid", "gocardless", "mercury"} {
		conns = append(conns, run(t, dbURL, "connections", "add", "--user", uid, "--provider", p, "--sim", "--sim-url", s.URL)["id"].(string))
	}
	for _, name := range []string{"crm", "ledger"} {
		run(t, dbURL, "destinations", "add", "--user", uid, "--kind", "webhook", "--name", name,
			"--config", `{"url":"https://hooks.example.com/`+name+`","secret":"s3cret-`+name+`"}`)
	}
	run(t, dbURL, "providers", "configure", "enablebanking", "--sim")
	legacy := secretstest.SealWithoutKeyID(t, oldKey, []byte(`{"api_key":"from an older database"}`))
	if _, err := pool.Exec(ctx, `UPDATE bank_connections SET credentials_encrypted = $2 WHERE id = $1`, conns[0], legacy); err != nil {
		t.Fatal(err)
	}
	before := sealedSnapshot(t, pool)
	plain, n := openAll(oldBox, before)
	if n != 8 {
		t.Fatalf("%d of 8 values open with the old key", n)
	}
	if _, n := openAll(newBox, before); n != 0 {
		t.Fatalf("%d values open with the new key before rotating", n)
	}

	t.Setenv("FINSYNC_ENCRYPTION_KEY", newKey+","+oldKey)
	interrupted, cancel := context.WithCancel(ctx)
	defer cancel()
	if _, err := runKeysCmd(interrupted, dbURL, &cancelOnWrite{cancel: cancel}, "keys", "rotate-encryption", "--batch-size", "2"); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	if _, n := openAll(newBox, sealedSnapshot(t, pool)); n != 2 {
		t.Fatalf("after an interrupted first batch, %d values open with the new key alone, want 2", n)
	}

	out, err := runKeysCmd(ctx, dbURL, io.Discard, "keys", "rotate-encryption", "--batch-size", "2")
	if err != nil {
		t.Fatal(err)
	}
	var resumed rotation
	if err := json.Unmarshal(out, &resumed); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if resealed, current := resumed.totals(); resealed != 6 || current != 2 || resumed.KeyID != newBox.KeyIDs()[0] {
		t.Fatalf("resumed run: %s", out)
	}
	after := sealedSnapshot(t, pool)
	got, n := openAll(newBox, after)
	if n != 8 {
		t.Fatalf("%d of 8 values open with the new key alone", n)
	}
	for id, p := range plain {
		if got[id] != p {
			t.Fatalf("value %s changed by rotation: %q, want %q", id, got[id], p)
		}
	}

	out, err = runKeysCmd(ctx, dbURL, io.Discard, "keys", "rotate-encryption")
	if err != nil {
		t.Fatal(err)
	}
	var again rotation
	if err := json.Unmarshal(out, &again); err != nil {
		t.Fatal(err)
	}
	if resealed, current := again.totals(); resealed != 0 || current != 8 {
		t.Fatalf("a second full run re-sealed again: %s", out)
	}
	for id, v := range sealedSnapshot(t, pool) {
		if !bytes.Equal(v, after[id]) {
			t.Fatalf("value %s rewritten by a run with nothing to do", id)
		}
	}

	stranger, _ := secrets.FromHex(strings.Repeat("0e", 32))
	foreign, _ := stranger.Seal([]byte(`{"api_key":"unknown key"}`))
	if _, err := pool.Exec(ctx, `UPDATE bank_connections SET credentials_encrypted = $2 WHERE id = $1`, conns[1], foreign); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FINSYNC_ENCRYPTION_KEY", newKey)
	out, err = runKeysCmd(ctx, dbURL, io.Discard, "keys", "rotate-encryption")
	if err == nil || !strings.Contains(err.Error(), conns[1]) || !errors.Is(err, secrets.ErrDecrypt) ||
		!strings.Contains(err.Error(), "key id "+stranger.KeyIDs()[0]) {
		t.Fatalf("a value of an unknown key: the error must name the row and the key id it needs: %v", err)
	}
	var report rotation
	if err := json.Unmarshal(out, &report); err != nil || len(report.Columns[0].Unreadable) != 1 || report.Columns[0].Current != 4 {
		t.Fatalf("report with an unreadable value: %s %v", out, err)
	}
}
