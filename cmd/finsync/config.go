package main

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
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
}

func configFromEnv() config {
	c := config{
		DatabaseURL:          os.Getenv("DATABASE_URL"),
		CursorKey:            os.Getenv("FINSYNC_CURSOR_KEY"),
		EncryptionKey:        os.Getenv("FINSYNC_ENCRYPTION_KEY"),
		SimURL:               os.Getenv("FINSYNC_SIM_URL"),
		ReconnectURLTemplate: os.Getenv("FINSYNC_RECONNECT_URL"),
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
