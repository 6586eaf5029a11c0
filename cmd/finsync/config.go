package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"strings"
)

// config is read from the environment; flags override it.
type config struct {
	DatabaseURL string
	// CursorKey seals pagination cursors (FINSYNC_CURSOR_KEY, hex or text).
	CursorKey string
	// EncryptionKey encrypts provider credentials at rest (FINSYNC_ENCRYPTION_KEY, 64 hex chars).
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
}

func configFromEnv() config {
	c := config{
		DatabaseURL:          os.Getenv("DATABASE_URL"),
		CursorKey:            os.Getenv("FINSYNC_CURSOR_KEY"),
		EncryptionKey:        os.Getenv("FINSYNC_ENCRYPTION_KEY"),
		SimURL:               os.Getenv("FINSYNC_SIM_URL"),
		ReconnectURLTemplate: os.Getenv("FINSYNC_RECONNECT_URL"),
		TrustedProxies:       os.Getenv("FINSYNC_TRUSTED_PROXIES"),
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

// cursorKey returns the configured cursor key, or a random one for this
// process (cursors then do not survive a restart) with a warning.
func (c config) cursorKey(log *slog.Logger) []byte {
	if c.CursorKey != "" {
		if b, err := hex.DecodeString(c.CursorKey); err == nil && len(b) >= 16 {
			return b
		}
		return []byte(c.CursorKey)
	}
	log.Warn("FINSYNC_CURSOR_KEY is not set; pagination cursors will not survive a restart")
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return b
}

func (c config) databaseURL() string {
	if c.DatabaseURL != "" {
		return c.DatabaseURL
	}
	return "postgres://postgres@127.0.0.1:5432/finsync?sslmode=disable"
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
