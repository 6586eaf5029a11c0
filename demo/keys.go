package demo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/finsync/finsync/config"
	"github.com/finsync/finsync/secrets"
)

// keyFile names the file under the demo's directory that keeps the demo
// key of the variable name.
func keyFile(name string) string {
	if name == config.EncryptionKeyVar {
		return "dev-encryption-key"
	}
	return "dev-cursor-key"
}

// keys gives the demo its keys with zero configuration: each of
// FINSYNC_ENCRYPTION_KEY and FINSYNC_CURSOR_KEY that is not set comes from
// a demo key kept in dir (created once, so demo data sealed by an earlier
// run still opens and cursors survive a restart). It returns the
// encryption box.
func keys(cfg *config.Config, dir string) (*secrets.Box, error) {
	if err := cfg.DefaultKeys(func(name string) (string, error) { return demoKey(filepath.Join(dir, keyFile(name))) }); err != nil {
		return nil, err
	}
	return cfg.Box()
}

// demoKey reads the demo key kept at path, creating it the first time.
func demoKey(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read demo key: %w", err)
	}
	key, err := secrets.Generate()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("store demo key: %w", err)
	}
	if err := os.WriteFile(path, []byte(key), 0o600); err != nil {
		return "", fmt.Errorf("store demo key: %w", err)
	}
	return key, nil
}
