package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/finsync/finsync/api/cursor"
	"github.com/finsync/finsync/api/ops"
	"github.com/finsync/finsync/internal/netguard"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/storage"
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
	// ReconnectURLTemplate builds the reconnectUrl a connection shows when
	// its provider wants the user to re-link it (FINSYNC_RECONNECT_URL: an
	// absolute http(s) URL, in which {connection_id} is replaced by the
	// connection's id). Empty, the default, records no URL (null), since
	// finsync itself serves no re-link page.
	ReconnectURLTemplate string
	// LogLevelText is FINSYNC_LOG_LEVEL as given, LogLevel its value once
	// check has parsed it (slog.Level's names: debug, info, warn, error,
	// optionally with an offset such as warn+2; empty: info).
	LogLevelText string
	LogLevel     slog.Level
	// GOGC is the Go collector's target as given (checked here only so
	// that a typo does not pass silently: the runtime ignores it).
	GOGC string
	// PGBinDir names where `finsync dev` finds PostgreSQL's server
	// binaries (FINSYNC_PG_BINDIR).
	PGBinDir string
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
	// ConsentWarning is how long before a connection's consent ends its
	// connection.consent_expiring webhook event is sent
	// (FINSYNC_CONSENT_WARNING, a Go duration such as 168h; empty:
	// worker.DefaultConsentWarning, 7 days). See docs/ops.md.
	ConsentWarning string
	// OpsToken is the operator credential of the ops console at /ops
	// (FINSYNC_OPS_TOKEN; empty: no console). See docs/ops.md.
	OpsToken string
	// WebhookAllowPrivate is FINSYNC_WEBHOOK_ALLOW_PRIVATE: "1" lets
	// webhooks (consumer webhooks and webhook destinations) reach private,
	// loopback and link-local addresses and use plain http; "" or "0"
	// refuses them. `finsync dev` sets it. See docs/webhooks.md.
	WebhookAllowPrivate string
	// PublicURL is FINSYNC_PUBLIC_URL: the absolute http(s) URL clients
	// reach the API at (a path prefix allowed), the base of v1's nextPage
	// links. Empty: http://<the --addr listen address>, with a warning
	// (publicURL); `finsync dev` sets its own.
	PublicURL string
	// DBMaxConns is FINSYNC_DB_MAX_CONNS as given: the size of each
	// database pool the process opens (the primary's and a read
	// replica's); empty: the command's own default (defaultServeConns,
	// defaultWorkerConns, both summed for dev).
	DBMaxConns string
}

// Database pool sizes when FINSYNC_DB_MAX_CONNS is not set (pgx's own
// default, max(4, CPUs), is 4 on a small machine: a few slow statements
// then queue every other request behind them).
const (
	// defaultServeConns: an API request holds a connection for one short
	// statement at a time, and an expensive one (a rule preview, a large
	// listing) for up to its 8 s budget, at most one per credential at
	// once (middleware.DefaultExpensivePerCredential). 16 leaves a dozen
	// connections for short reads while a few tenants preview.
	defaultServeConns = 16
	// defaultWorkerConns: River's own connections (its notifier's LISTEN,
	// the producers' fetches and completions: about 3) plus one per job
	// holding a connection: sync sessions (4 workers) and rule jobs (2),
	// and the default queue (2). Webhook deliveries wait on HTTP, not on
	// the pool, and share what is left.
	defaultWorkerConns = 12
	// maxDBConns bounds FINSYNC_DB_MAX_CONNS: PostgreSQL's default
	// max_connections is 100 for the whole fleet.
	maxDBConns = 1000
)

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
		ConsentWarning:       os.Getenv("FINSYNC_CONSENT_WARNING"),
		LogLevelText:         os.Getenv("FINSYNC_LOG_LEVEL"),
		GOGC:                 os.Getenv("GOGC"),
		PGBinDir:             os.Getenv("FINSYNC_PG_BINDIR"),
		OpsToken:             os.Getenv("FINSYNC_OPS_TOKEN"),
		WebhookAllowPrivate:  os.Getenv(netguard.EnvAllowPrivate),
		PublicURL:            os.Getenv("FINSYNC_PUBLIC_URL"),
		DBMaxConns:           os.Getenv("FINSYNC_DB_MAX_CONNS"),
	}
	return c
}

// check parses every setting read from the environment (the keys apart:
// requireKeys checks them where they are needed) and sets LogLevel. The
// error names each invalid variable, what it holds and what it should
// hold; every command runs it before anything else.
func (c *config) check() error {
	var errs []error
	if c.LogLevelText != "" {
		if err := c.LogLevel.UnmarshalText([]byte(c.LogLevelText)); err != nil {
			errs = append(errs, fmt.Errorf("FINSYNC_LOG_LEVEL: %q is not a level: use debug, info, warn or error", c.LogLevelText))
		}
	}
	if c.DatabaseURL != "" {
		errs = append(errs, checkDatabaseURL("DATABASE_URL", c.DatabaseURL))
	}
	if c.ReadDatabaseURL != "" {
		errs = append(errs, checkDatabaseURL("FINSYNC_READ_DATABASE_URL", c.ReadDatabaseURL))
	}
	if c.SimURL != "" {
		errs = append(errs, checkHTTPURL("FINSYNC_SIM_URL", c.SimURL))
	}
	if c.ReconnectURLTemplate != "" {
		errs = append(errs, checkHTTPURL("FINSYNC_RECONNECT_URL",
			strings.ReplaceAll(c.ReconnectURLTemplate, "{connection_id}", "00000000-0000-0000-0000-000000000000")))
	}
	_, err := c.readMaxLag()
	errs = append(errs, err)
	_, err = c.syncWriteRate()
	errs = append(errs, err)
	_, err = c.consentWarning()
	errs = append(errs, err)
	_, err = c.trustedProxies()
	errs = append(errs, err)
	_, err = c.opsToken()
	errs = append(errs, err)
	_, err = c.webhookPolicy()
	errs = append(errs, err)
	if c.PublicURL != "" {
		_, err = parsePublicURL(c.PublicURL)
		errs = append(errs, err)
	}
	_, err = c.dbMaxConns(defaultServeConns)
	errs = append(errs, err)
	if c.GOGC != "" && c.GOGC != "off" {
		if n, err := strconv.Atoi(c.GOGC); err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("GOGC: %q is not a percentage or off", c.GOGC))
		}
	}
	if c.PGBinDir != "" {
		if st, err := os.Stat(c.PGBinDir); err != nil || !st.IsDir() {
			errs = append(errs, fmt.Errorf("FINSYNC_PG_BINDIR: %q is not a directory", c.PGBinDir))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid configuration (see README, Configuration):\n%w", err)
	}
	return nil
}

// webhookPolicy parses FINSYNC_WEBHOOK_ALLOW_PRIVATE.
func (c config) webhookPolicy() (netguard.Policy, error) {
	allow, err := netguard.ParseAllowPrivate(c.WebhookAllowPrivate)
	return netguard.Policy{AllowPrivate: allow}, err
}

// parsePublicURL parses FINSYNC_PUBLIC_URL: an absolute http or https URL
// with a host, optionally a path prefix, and no user information, query or
// fragment (a link built on it would repeat them).
func parsePublicURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return nil, fmt.Errorf("FINSYNC_PUBLIC_URL: %q is not an absolute http(s) URL such as https://api.example.com", s)
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, fmt.Errorf("FINSYNC_PUBLIC_URL: %q: give scheme, host and an optional path only (no user, query or fragment)", s)
	}
	return u, nil
}

// publicURL is the base of v1's links: FINSYNC_PUBLIC_URL, else
// http://addr (addr the API's listen address, an unspecified host read as
// localhost), reported by defaulted so that serve can warn that links
// name the listen address.
func (c config) publicURL(addr string) (u *url.URL, defaulted bool, err error) {
	if c.PublicURL != "" {
		u, err = parsePublicURL(c.PublicURL)
		return u, false, err
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, true, fmt.Errorf("FINSYNC_PUBLIC_URL is unset and the listen address %q has no port: %w", addr, err)
	}
	if ip, perr := netip.ParseAddr(host); host == "" || (perr == nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return &url.URL{Scheme: "http", Host: net.JoinHostPort(host, port)}, true, nil
}

// checkDatabaseURL reports whether s is a PostgreSQL connection string
// (URL or key=value) that storage accepts.
func checkDatabaseURL(name, s string) error {
	if err := storage.ValidateURL(s); err != nil {
		return fmt.Errorf("%s: not a PostgreSQL URL such as postgres://user@host:5432/db: %w", name, err)
	}
	return nil
}

// checkHTTPURL reports whether s is an absolute http or https URL.
func checkHTTPURL(name, s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s: %q is not an absolute http(s) URL", name, s)
	}
	return nil
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

// consentWarning parses FINSYNC_CONSENT_WARNING; empty yields 0 (the
// worker's default).
func (c config) consentWarning() (time.Duration, error) {
	if c.ConsentWarning == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(c.ConsentWarning)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("FINSYNC_CONSENT_WARNING: %q is not a positive duration such as 168h", c.ConsentWarning)
	}
	return d, nil
}

// dbMaxConns parses FINSYNC_DB_MAX_CONNS: a whole number of connections
// per pool, 1 to maxDBConns; empty yields def, the command's default.
func (c config) dbMaxConns(def int32) (int32, error) {
	if c.DBMaxConns == "" {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(c.DBMaxConns))
	if err != nil || n < 1 || n > maxDBConns {
		return 0, fmt.Errorf("FINSYNC_DB_MAX_CONNS: %q is not a whole number of connections from 1 to %d", c.DBMaxConns, maxDBConns)
	}
	return int32(n), nil
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
