package main

import (
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/finsync/finsync/api/cursor"
	"github.com/finsync/finsync/api/ops"
	"github.com/finsync/finsync/secrets"
)

// config is read from the environment; flags override it.
type config struct {
	DatabaseURL string
	// CursorKey seals pagination cursors (FINSYNC_CURSOR_KEY): keys of at
	// least 16 bytes, hex or text, comma-separated, newest first.
	CursorKey string
	// EncryptionKey encrypts provider credentials and destination secrets
	// at rest (FINSYNC_ENCRYPTION_KEY): keys of 64 hex characters,
	// comma-separated, newest first.
	EncryptionKey string
	// SimURL is the provider simulator's root URL (FINSYNC_SIM_URL).
	SimURL string
	// ReconnectURLTemplate builds a connection's reconnect URL (FINSYNC_RECONNECT_URL).
	ReconnectURLTemplate string
	LogLevel             slog.Level
	// TrustedProxies lists the proxies whose X-Forwarded-For header names
	// the client (FINSYNC_TRUSTED_PROXIES: comma-separated IPs or CIDRs;
	// empty trusts none).
	TrustedProxies string
	// ReadDatabaseURL names a PostgreSQL streaming replica of DatabaseURL
	// that serve sends API reads to (FINSYNC_READ_DATABASE_URL; empty: all
	// reads on the primary). See docs/replicas.md.
	ReadDatabaseURL string
	// ReadMaxLag is the replica's lag bound (FINSYNC_READ_MAX_LAG, a Go
	// duration such as 5s; empty: storage.DefaultReplicaMaxLag).
	ReadMaxLag string
	// SyncWriteRate is the transaction rows a second that the syncs of all
	// workers together store (FINSYNC_SYNC_WRITE_RATE; empty:
	// defaultSyncWriteRate; 0: unbounded). See docs/recovery.md.
	SyncWriteRate string
	// OpsToken is the operator credential of the ops console at /ops
	// (FINSYNC_OPS_TOKEN; empty: no console). See docs/ops.md.
	OpsToken string
}

// defaultSyncWriteRate is the shared sync write budget when
// FINSYNC_SYNC_WRITE_RATE is not set, in rows a second: about a quarter of
// what one first sync stores unpaced on two cores, measured to keep the
// API's reads within 2x of idle during it (BENCHMARKS.md, "Fleet").
const defaultSyncWriteRate = 5000

func configFromEnv() config {
	c := config{
		DatabaseURL:          os.Getenv("DATABASE_URL"),
		CursorKey:            os.Getenv("FINSYNC_CURSOR_KEY"),
		EncryptionKey:        os.Getenv("FINSYNC_ENCRYPTION_KEY"),
		SimURL:               os.Getenv("FINSYNC_SIM_URL"),
		ReconnectURLTemplate: os.Getenv("FINSYNC_RECONNECT_URL"),
		TrustedProxies:       os.Getenv("FINSYNC_TRUSTED_PROXIES"),
		ReadDatabaseURL:      os.Getenv("FINSYNC_READ_DATABASE_URL"),
		ReadMaxLag:           os.Getenv("FINSYNC_READ_MAX_LAG"),
		SyncWriteRate:        os.Getenv("FINSYNC_SYNC_WRITE_RATE"),
		OpsToken:             os.Getenv("FINSYNC_OPS_TOKEN"),
	}
	switch strings.ToLower(os.Getenv("FINSYNC_LOG_LEVEL")) {
	case "debug":
		c.LogLevel = slog.LevelDebug
	case "warn":
		c.LogLevel = slog.LevelWarn
	case "error":
		c.LogLevel = slog.LevelError
	}
	return c
}

// keysHelp says how to make a key; every refusal to start for want of one
// quotes it.
const keysHelp = "make each with `finsync keys generate` or `openssl rand -hex 32`, and give every serve and worker process the same values " +
	"(several keys, comma-separated and newest first, rotate a key without downtime: see README, Rotating keys)"

// unsetKeys names the shared keys that are not configured.
func (c config) unsetKeys() []string {
	var unset []string
	if strings.TrimSpace(c.EncryptionKey) == "" {
		unset = append(unset, "FINSYNC_ENCRYPTION_KEY")
	}
	if strings.TrimSpace(c.CursorKey) == "" {
		unset = append(unset, "FINSYNC_CURSOR_KEY")
	}
	return unset
}

// errKeysUnset says which keys are missing and how to make them.
func errKeysUnset(names []string) error {
	verb := "is"
	if len(names) > 1 {
		verb = "are"
	}
	return fmt.Errorf("%s %s not set: %s", strings.Join(names, " and "), verb, keysHelp)
}

// cursorKeys parses FINSYNC_CURSOR_KEY, newest first: the first signs new
// cursors, every one opens them.
func (c config) cursorKeys() ([][]byte, error) {
	if strings.TrimSpace(c.CursorKey) == "" {
		return nil, errKeysUnset([]string{"FINSYNC_CURSOR_KEY"})
	}
	keys, err := cursor.ParseKeys(c.CursorKey)
	if err != nil {
		return nil, fmt.Errorf("FINSYNC_CURSOR_KEY: %w", err)
	}
	return keys, nil
}

// encryptionBox parses FINSYNC_ENCRYPTION_KEY, newest first: the first
// seals, every one opens.
func (c config) encryptionBox() (*secrets.Box, error) {
	if strings.TrimSpace(c.EncryptionKey) == "" {
		return nil, errKeysUnset([]string{"FINSYNC_ENCRYPTION_KEY"})
	}
	box, err := secrets.FromHex(c.EncryptionKey)
	if err != nil {
		return nil, fmt.Errorf("FINSYNC_ENCRYPTION_KEY: %w", err)
	}
	return box, nil
}

func (c config) databaseURL() string {
	if c.DatabaseURL != "" {
		return c.DatabaseURL
	}
	return "postgres://postgres@127.0.0.1:5432/finsync?sslmode=disable"
}

// readMaxLag parses FINSYNC_READ_MAX_LAG; empty yields 0 (the default).
func (c config) readMaxLag() (time.Duration, error) {
	if c.ReadMaxLag == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(c.ReadMaxLag)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("FINSYNC_READ_MAX_LAG: %q is not a positive duration such as 5s", c.ReadMaxLag)
	}
	return d, nil
}

// syncWriteRate parses FINSYNC_SYNC_WRITE_RATE: a whole number of rows a
// second, 0 for no bound; empty yields defaultSyncWriteRate.
func (c config) syncWriteRate() (float64, error) {
	if c.SyncWriteRate == "" {
		return defaultSyncWriteRate, nil
	}
	n, err := strconv.Atoi(c.SyncWriteRate)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("FINSYNC_SYNC_WRITE_RATE: %q is not a whole number of rows a second (0: no bound)", c.SyncWriteRate)
	}
	return float64(n), nil
}

// opsToken checks FINSYNC_OPS_TOKEN; empty (no console) is valid.
func (c config) opsToken() (string, error) {
	if c.OpsToken == "" {
		return "", nil
	}
	if err := ops.ValidateToken(c.OpsToken); err != nil {
		return "", fmt.Errorf("FINSYNC_OPS_TOKEN %w", err)
	}
	return c.OpsToken, nil
}

// trustedProxies parses FINSYNC_TRUSTED_PROXIES: comma-separated IP
// addresses (one host each) or CIDR blocks; empty yields none.
func (c config) trustedProxies() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, item := range strings.Split(c.TrustedProxies, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if strings.Contains(item, "/") {
			p, err := netip.ParsePrefix(item)
			if err != nil {
				return nil, fmt.Errorf("FINSYNC_TRUSTED_PROXIES: %q is not an IP address or CIDR block: %w", item, err)
			}
			out = append(out, p.Masked())
			continue
		}
		addr, err := netip.ParseAddr(item)
		if err != nil {
			return nil, fmt.Errorf("FINSYNC_TRUSTED_PROXIES: %q is not an IP address or CIDR block: %w", item, err)
		}
		out = append(out, netip.PrefixFrom(addr, addr.BitLen()))
	}
	return out, nil
}
