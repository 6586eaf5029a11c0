package config

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// env is a getenv over a fixed map.
func env(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

// TestValidSettingsPass: documented values are accepted, each parsed into
// its typed field, and the log level is what FINSYNC_LOG_LEVEL says.
func TestValidSettingsPass(t *testing.T) {
	for _, c := range []struct {
		level string
		want  slog.Level
	}{{"", slog.LevelInfo}, {"debug", slog.LevelDebug}, {"WARN", slog.LevelWarn}, {"error", slog.LevelError}, {"info+2", slog.LevelInfo + 2}} {
		cfg, err := Load(env(map[string]string{
			"FINSYNC_LOG_LEVEL":             c.level,
			"FINSYNC_RECONNECT_URL":         "https://app.example.com/relink/{connection_id}",
			"FINSYNC_SIM_URL":               "http://127.0.0.1:8090",
			"FINSYNC_READ_MAX_LAG":          "2s",
			"FINSYNC_CONSENT_WARNING":       "48h",
			"GOGC":                          "off",
			"FINSYNC_WEBHOOK_ALLOW_PRIVATE": "1",
			"FINSYNC_SYNC_WRITE_RATE":       "0",
			"FINSYNC_PAGE_CACHE_MB":         "0",
		}))
		if err != nil {
			t.Fatalf("FINSYNC_LOG_LEVEL=%q: %v", c.level, err)
		}
		if cfg.LogLevel != c.want {
			t.Fatalf("FINSYNC_LOG_LEVEL=%q: level %v, want %v", c.level, cfg.LogLevel, c.want)
		}
		if cfg.ReadMaxLag != 2*time.Second || cfg.ConsentWarning != 48*time.Hour || cfg.SimURL.String() != "http://127.0.0.1:8090" ||
			cfg.GCPercentOr(400) != -1 || !cfg.WebhookPolicy.AllowPrivate || !cfg.WebhookPolicySet || cfg.SyncWriteRate != 0 ||
			cfg.PageCacheBytes() != 0 {
			t.Fatalf("parsed %+v", cfg)
		}
	}
}

// TestDefaults: an empty environment is valid and gives the documented
// defaults.
func TestDefaults(t *testing.T) {
	cfg, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DatabaseURLOrDefault() != DefaultDatabaseURL || cfg.SyncWriteRate != DefaultSyncWriteRate || cfg.LogLevel != slog.LevelInfo ||
		cfg.GCPercentOr(400) != 400 || cfg.DBConns(DefaultWorkerConns) != DefaultWorkerConns || cfg.WebhookPolicy.AllowPrivate ||
		cfg.WebhookPolicySet || cfg.PublicURL != nil || len(cfg.TrustedProxies) != 0 || cfg.ReadMaxLag != 0 || cfg.OpsToken != "" ||
		cfg.PageCacheBytes() != DefaultPageCacheMB<<20 {
		t.Fatalf("defaults: %+v", cfg)
	}
}

// TestEveryInvalidVariableIsNamed: one Load reports every invalid variable
// at once, each with what it holds.
func TestEveryInvalidVariableIsNamed(t *testing.T) {
	bad := map[string]string{
		"FINSYNC_LOG_LEVEL":             "verbose",
		"FINSYNC_READ_MAX_LAG":          "5",
		"FINSYNC_CONSENT_WARNING":       "-1h",
		"FINSYNC_SYNC_WRITE_RATE":       "1.5",
		"FINSYNC_TRUSTED_PROXIES":       "10.0.0.0/33",
		"FINSYNC_SIM_URL":               "127.0.0.1:8090",
		"FINSYNC_RECONNECT_URL":         "ftp://example.com/{connection_id}",
		"FINSYNC_READ_DATABASE_URL":     "postgres://host:port/db",
		"DATABASE_URL":                  "postgres://host:notaport/db",
		"GOGC":                          "fast",
		"FINSYNC_PG_BINDIR":             "/nonexistent/bin",
		"FINSYNC_WEBHOOK_ALLOW_PRIVATE": "yes",
		"FINSYNC_PUBLIC_URL":            "https://api.example.com/?x=1",
		"FINSYNC_DB_MAX_CONNS":          "0",
		"FINSYNC_OPS_TOKEN":             "short",
		"FINSYNC_PAGE_CACHE_MB":         "-1",
	}
	_, err := Load(env(bad))
	if err == nil || !strings.HasPrefix(err.Error(), "invalid configuration (see README, Configuration):") {
		t.Fatalf("Load: %v", err)
	}
	for name, value := range bad {
		sep := ":"
		if name == "FINSYNC_OPS_TOKEN" {
			sep = " "
		}
		if !strings.Contains(err.Error(), name+sep) || (name != "FINSYNC_OPS_TOKEN" && name != "FINSYNC_RECONNECT_URL" && !strings.Contains(err.Error(), value)) {
			t.Errorf("%s=%q not named in: %v", name, value, err)
		}
	}
}

// TestKeysAreReportedWhereNeeded: a missing or invalid key fails no Load,
// only the commands that need it, naming every key at fault.
func TestKeysAreReportedWhereNeeded(t *testing.T) {
	cfg, err := Load(env(map[string]string{"FINSYNC_ENCRYPTION_KEY": "nothex"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.Box(); err == nil || !strings.Contains(err.Error(), "FINSYNC_ENCRYPTION_KEY:") {
		t.Errorf("Box: %v", err)
	}
	if _, err := cfg.RequireKeys(); err == nil || !strings.Contains(err.Error(), "FINSYNC_CURSOR_KEY is not set") {
		t.Errorf("RequireKeys: %v", err)
	}
	none, _ := Load(env(nil))
	if _, err := none.RequireKeys(); err == nil || !strings.Contains(err.Error(), "FINSYNC_ENCRYPTION_KEY and FINSYNC_CURSOR_KEY are not set") {
		t.Errorf("RequireKeys: %v", err)
	}
	asked := 0
	if err := none.DefaultKeys(func(string) (string, error) { asked++; return strings.Repeat("0c", 32), nil }); err != nil || asked != 2 {
		t.Fatalf("DefaultKeys: %v, asked %d", err, asked)
	}
	if _, err := none.RequireKeys(); err != nil {
		t.Errorf("after DefaultKeys: %v", err)
	}
}

// TestDBMaxConnsParsing: FINSYNC_DB_MAX_CONNS takes a whole number of
// connections from 1 to MaxDBConns; empty gives the command's default.
func TestDBMaxConnsParsing(t *testing.T) {
	cases := []struct {
		env  string
		want int32
		bad  bool
	}{
		{"", DefaultServeConns, false},
		{"1", 1, false},
		{" 24 ", 24, false},
		{"1000", 1000, false},
		{"0", 0, true},
		{"-3", 0, true},
		{"1001", 0, true},
		{"8.5", 0, true},
		{"many", 0, true},
	}
	for _, c := range cases {
		n, err := ParseDBMaxConns(c.env)
		got := Config{DBMaxConns: n}.DBConns(DefaultServeConns)
		if c.bad {
			if err == nil || !strings.Contains(err.Error(), "FINSYNC_DB_MAX_CONNS") {
				t.Errorf("%q: got %d, %v; want a refusal naming FINSYNC_DB_MAX_CONNS", c.env, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: got %d, %v; want %d", c.env, got, err, c.want)
		}
	}
	if got := (Config{}).DBConns(DefaultWorkerConns); got != DefaultWorkerConns {
		t.Errorf("worker default: %d, want %d", got, DefaultWorkerConns)
	}
	if DefaultServeConns == DefaultWorkerConns {
		t.Errorf("serve and worker defaults are both %d: each is sized for its own work", DefaultServeConns)
	}
}

// TestPublicURLDefaultsToTheListenAddress: set, FINSYNC_PUBLIC_URL is
// used as given; unset, links name http://<listen address>, an
// unspecified host read as localhost, and the caller is told it defaulted.
func TestPublicURLDefaultsToTheListenAddress(t *testing.T) {
	cases := []struct {
		env, addr, want string
		defaulted       bool
	}{
		{"https://api.example.com/finsync", "127.0.0.1:8080", "https://api.example.com/finsync", false},
		{"http://10.0.0.5:8080", "127.0.0.1:8080", "http://10.0.0.5:8080", false},
		{"", "127.0.0.1:8080", "http://127.0.0.1:8080", true},
		{"", ":8080", "http://localhost:8080", true},
		{"", "0.0.0.0:9000", "http://localhost:9000", true},
		{"", "[::]:9000", "http://localhost:9000", true},
		{"", "[::1]:9000", "http://[::1]:9000", true},
	}
	for _, c := range cases {
		cfg, err := Load(env(map[string]string{"FINSYNC_PUBLIC_URL": c.env}))
		if err != nil {
			t.Fatal(err)
		}
		u, defaulted, err := cfg.PublicURLFor(c.addr)
		if err != nil || u.String() != c.want || defaulted != c.defaulted {
			t.Errorf("FINSYNC_PUBLIC_URL=%q, --addr %s: %v, %v, %v; want %s, %v", c.env, c.addr, u, defaulted, err, c.want, c.defaulted)
		}
	}
	if _, _, err := (Config{}).PublicURLFor("no-port"); err == nil {
		t.Error("a listen address without a port gave a URL")
	}
}

func TestTrustedProxiesFromEnv(t *testing.T) {
	tests := []struct {
		env, want string
		bad       bool
	}{
		{"", "[]", false},
		{"10.0.0.1", "[10.0.0.1/32]", false},
		{" 10.0.0.0/8 , 192.168.1.7/24,::1", "[10.0.0.0/8 192.168.1.0/24 ::1/128]", false},
		{"10.0.0.1,", "[10.0.0.1/32]", false},
		{"proxy.internal", "", true},
		{"10.0.0.0/33", "", true},
	}
	for _, tt := range tests {
		got, err := ParseTrustedProxies(tt.env)
		if tt.bad {
			if err == nil {
				t.Errorf("%q: accepted as %v", tt.env, got)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != tt.want {
			t.Errorf("%q: got %v, %v; want %s", tt.env, got, err, tt.want)
		}
	}
}

// TestEnvironmentOverrides: a flag's value wins over its variable.
func TestEnvironmentOverrides(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://a@127.0.0.1/x")
	t.Setenv("FINSYNC_SIM_URL", "http://127.0.0.1:1")
	getenv := Environment(map[string]string{"DATABASE_URL": "postgres://b@127.0.0.1/y"})
	if getenv("DATABASE_URL") != "postgres://b@127.0.0.1/y" || getenv("FINSYNC_SIM_URL") != "http://127.0.0.1:1" {
		t.Fatal("overrides not applied")
	}
}
