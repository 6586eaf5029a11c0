package demo

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/finsync/finsync/config"
	"github.com/finsync/finsync/secrets/secretstest"
)

// TestDevTextOutputNamesEveryURL: the text output of finsync dev names the
// metrics URL, like --json does, besides the ops URL and token.
func TestDevTextOutputNamesEveryURL(t *testing.T) {
	var out bytes.Buffer
	token := "69d76aa0731ca7183a8f4faa6ec72e79c6d6fbefc949fb5d4f94c7f2f61f6212"
	d := seeded{UserID: uuid.New(), Key: "fsk_test", MetricsURL: "http://127.0.0.1:9090/metrics"}
	if err := printDemo(&out, false, "127.0.0.1:8080", "http://127.0.0.1:8181", "postgres://x", token, d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Metrics:    http://127.0.0.1:9090/metrics",
		"Ops:        http://127.0.0.1:8080/ops",
		"operator token " + token,
		`curl -s -H "Authorization: Bearer ` + token + `" http://127.0.0.1:8080/ops`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dev output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	d.MetricsURL = ""
	if err := printDemo(&out, false, "127.0.0.1:8080", "http://127.0.0.1:8181", "postgres://x", token, d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Metrics:    none") {
		t.Errorf("dev output without metrics:\n%s", out.String())
	}
}

// TestDevMakesItsOwnOpsTokenAndLinks: without FINSYNC_OPS_TOKEN and
// FINSYNC_PUBLIC_URL, the demo makes a token serve accepts and links name
// its own API; configured ones are kept.
func TestDevMakesItsOwnOpsTokenAndLinks(t *testing.T) {
	var cfg config.Config
	if err := ownAddresses(&cfg, "127.0.0.1:8080"); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Load(func(name string) string {
		if name == "FINSYNC_OPS_TOKEN" {
			return cfg.OpsToken
		}
		return ""
	}); err != nil || cfg.PublicURL.String() != "http://127.0.0.1:8080" {
		t.Fatalf("dev's token %q, links %v: %v", cfg.OpsToken, cfg.PublicURL, err)
	}
	kept := cfg
	if err := ownAddresses(&kept, "127.0.0.1:9999"); err != nil || kept.OpsToken != cfg.OpsToken || kept.PublicURL != cfg.PublicURL {
		t.Fatalf("configured values replaced: %+v %v", kept, err)
	}
}

// TestDevKeysNeedNoConfiguration: `finsync dev` keeps the demo key an
// earlier run wrote (values it sealed before key ids existed still open),
// and creates a cursor key once that the next run reuses.
func TestDevKeysNeedNoConfiguration(t *testing.T) {
	dir := t.TempDir()
	earlier := strings.Repeat("3c", 32)
	if err := os.WriteFile(filepath.Join(dir, "dev-encryption-key"), []byte(earlier+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sealed := secretstest.SealWithoutKeyID(t, earlier, []byte("demo credentials"))
	var first config.Config
	box, err := keys(&first, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := box.Open(sealed); err != nil || string(got) != "demo credentials" {
		t.Fatalf("demo data of an earlier run: %q %v", got, err)
	}
	if _, err := first.RequireKeys(); err != nil {
		t.Fatalf("dev keys are not a valid configuration: %v", err)
	}
	var second config.Config
	if _, err := keys(&second, dir); err != nil {
		t.Fatal(err)
	}
	if len(first.CursorKeys) == 0 || !bytes.Equal(second.CursorKeys[0], first.CursorKeys[0]) {
		t.Fatalf("cursor keys of two dev runs: %x, %x", first.CursorKeys, second.CursorKeys)
	}
}
