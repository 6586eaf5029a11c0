// Package config reads finsync's configuration from the environment once,
// at start, into one typed Config: Load parses and checks every variable
// and reports every invalid one together, so that no command starts with a
// default the operator did not ask for. Nothing else in the binary reads
// the environment. The shared keys are the exception to "every error at
// once": they are parsed here too, but a missing or invalid key is
// reported only by the commands that need it (RequireKeys, Box, Cursor).
package config

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

	"github.com/finsync/finsync/api/ops"
	"github.com/finsync/finsync/internal/netguard"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/storage"
)

// Config is every setting finsync reads from the environment, parsed. The
// zero value is a valid configuration with every default (and no keys).
type Config struct {
	// DatabaseURL is DATABASE_URL (or --database-url): the PostgreSQL
	// database, as a URL or key=value string storage accepts. Empty: the
	// commands use DefaultDatabaseURL (URL), `finsync dev` looks for one.
	DatabaseURL string
	// CursorKeys is FINSYNC_CURSOR_KEY: the keys that seal pagination
	// cursors (16+ bytes each, hex or text, comma-separated), newest
	// first: the first signs, every one opens. Nil when unset or invalid
	// (see Cursor).
	CursorKeys [][]byte
	// EncryptionBox is FINSYNC_ENCRYPTION_KEY: the AES-256-GCM keys (64 hex
	// characters each, comma-separated, newest first) that seal provider
	// credentials and destination secrets at rest. Nil when unset or
	// invalid (see Box).
	EncryptionBox *secrets.Box
	// SimURL is FINSYNC_SIM_URL: the provider simulator's root URL (an
	// absolute http(s) URL), for `connections add --sim`. Nil: unset.
	SimURL *url.URL
	// ReconnectURL is FINSYNC_RECONNECT_URL: the template of the
	// reconnectUrl a connection shows when its provider wants the user to
	// re-link it, an absolute http(s) URL in which {connection_id} is
	// replaced by the connection's id. Empty, the default, records no URL
	// (null), since finsync itself serves no re-link page.
	ReconnectURL string
	// LogLevel is FINSYNC_LOG_LEVEL: the least level logged (slog.Level's
	// names, any case, optionally with an offset such as warn+2). Default:
	// info.
	LogLevel slog.Level
	// GCPercent is GOGC: the Go collector's target in percent, -1 for off.
	// Meaningful only when GCPercentSet; unset, each process applies its
	// own default (GCPercentOr).
	GCPercent    int
	GCPercentSet bool
	// PGBinDir is FINSYNC_PG_BINDIR: an existing directory holding
	// PostgreSQL's server programs, for `finsync dev`'s private cluster.
	// Empty: looked up (pgcluster.FindToolsIn).
	PGBinDir string
	// TrustedProxies is FINSYNC_TRUSTED_PROXIES: the proxies (IP addresses
	// or CIDR blocks, comma-separated) whose X-Forwarded-For header names
	// the client. Default: none.
	TrustedProxies []netip.Prefix
	// ReadDatabaseURL is FINSYNC_READ_DATABASE_URL: a PostgreSQL streaming
	// replica of DatabaseURL that serve sends API reads to. Empty, the
	// default: every read on the primary. See docs/replicas.md.
	ReadDatabaseURL string
	// ReadMaxLag is FINSYNC_READ_MAX_LAG: the replica's lag bound, a
	// positive Go duration. 0 (unset): storage.DefaultReplicaMaxLag.
	ReadMaxLag time.Duration
	// SyncWriteRate is FINSYNC_SYNC_WRITE_RATE: the transaction rows a
	// second that the syncs of all workers together store, a whole number,
	// 0 for no bound. Default: DefaultSyncWriteRate. See docs/recovery.md.
	SyncWriteRate float64
	// ConsentWarning is FINSYNC_CONSENT_WARNING: how long before a
	// connection's consent ends its connection.consent_expiring webhook
	// event is sent, a positive Go duration. 0 (unset): the worker's
	// default, worker.DefaultConsentWarning (7 days). See docs/ops.md.
	ConsentWarning time.Duration
	// OpsToken is FINSYNC_OPS_TOKEN: the operator credential of the ops
	// console at /ops, checked by ops.ValidateToken. Empty, the default: no
	// console. See docs/ops.md.
	OpsToken string
	// WebhookPolicy is FINSYNC_WEBHOOK_ALLOW_PRIVATE: "1" lets webhooks
	// (consumer webhooks and webhook destinations) reach private, loopback
	// and link-local addresses and use plain http; "0" or empty, the
	// default, refuses them. WebhookPolicySet says the variable was given
	// (`finsync dev` allows them unless told otherwise). See
	// docs/webhooks.md.
	WebhookPolicy    netguard.Policy
	WebhookPolicySet bool
	// PublicURL is FINSYNC_PUBLIC_URL: the absolute http(s) URL clients
	// reach the API at (a path prefix allowed; no user, query or
	// fragment), the base of v1's nextPage links. Nil: http://<the --addr
	// listen address>, with a warning (PublicURLFor); `finsync dev` sets
	// its own.
	PublicURL *url.URL
	// DBMaxConns is FINSYNC_DB_MAX_CONNS: the size of each database pool
	// the process opens (the primary's and a read replica's), 1 to
	// MaxDBConns. 0 (unset): the command's own default (DBConns).
	DBMaxConns int32
	// PageCacheMB is FINSYNC_PAGE_CACHE_MB: the memory, in MiB, that each
	// API process gives to pages of GET /v2/transactions kept for asking
	// again (docs/read-cache.md), a whole number from 0 (none kept) to
	// MaxPageCacheMB. Unset: DefaultPageCacheMB. Read it with
	// PageCacheBytes.
	PageCacheMB    int
	PageCacheMBSet bool

	// cursorErr and encryptionErr are why a key that is set did not parse.
	cursorErr, encryptionErr error
}

// DefaultDatabaseURL is the database when DATABASE_URL is unset.
const DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/finsync?sslmode=disable"

// Database pool sizes when FINSYNC_DB_MAX_CONNS is not set (pgx's own
// default, max(4, CPUs), is 4 on a small machine: a few slow statements
// then queue every other request behind them).
const (
	// DefaultServeConns: an API request holds a connection for one short
	// statement at a time, and an expensive one (a rule preview, a large
	// listing) for up to its 8 s budget, at most one per credential at
	// once (middleware.DefaultExpensivePerCredential). 16 leaves a dozen
	// connections for short reads while a few tenants preview.
	DefaultServeConns = 16
	// DefaultWorkerConns: River's own connections (its notifier's LISTEN,
	// the producers' fetches and completions: about 3) plus one per job
	// holding a connection: sync sessions (4 workers) and rule jobs (2),
	// and the default queue (2). Webhook deliveries wait on HTTP, not on
	// the pool, and share what is left. A sync also borrows a second
	// connection for a large batch's digest look-ups when one is idle or
	// the pool has room (never waiting on a full pool), so spare
	// connections speed re-syncs up without being needed.
	DefaultWorkerConns = 12
	// MaxDBConns bounds FINSYNC_DB_MAX_CONNS: PostgreSQL's default
	// max_connections is 100 for the whole fleet.
	MaxDBConns = 1000
)

// DefaultSyncWriteRate is the shared sync write budget when
// FINSYNC_SYNC_WRITE_RATE is not set, in rows a second: about a quarter of
// what one first sync stores unpaced on two cores, measured to keep the
// API's reads within 2x of idle during it (BENCHMARKS.md, "Fleet").
const DefaultSyncWriteRate = 5000

// Environment returns the process environment's lookup (os.Getenv) with
// overrides in front of it: a flag given on the command line wins over
// its variable. It is what Load reads in the binary.
func Environment(overrides map[string]string) func(string) string {
	return func(name string) string {
		if v, ok := overrides[name]; ok {
			return v
		}
		return os.Getenv(name)
	}
}

// Load reads every variable through getenv, parses and checks it, and
// returns the configuration, or an error that names each invalid variable,
// what it holds and what it should hold. The keys are parsed but their
// errors wait for RequireKeys, Box and Cursor.
func Load(getenv func(string) string) (Config, error) {
	var c Config
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	var err error
	c.LogLevel, err = parseLogLevel(getenv("FINSYNC_LOG_LEVEL"))
	add(err)
	c.DatabaseURL = getenv("DATABASE_URL")
	if c.DatabaseURL != "" {
		add(checkDatabaseURL("DATABASE_URL", c.DatabaseURL))
	}
	c.ReadDatabaseURL = getenv("FINSYNC_READ_DATABASE_URL")
	if c.ReadDatabaseURL != "" {
		add(checkDatabaseURL("FINSYNC_READ_DATABASE_URL", c.ReadDatabaseURL))
	}
	if s := getenv("FINSYNC_SIM_URL"); s != "" {
		c.SimURL, err = parseHTTPURL("FINSYNC_SIM_URL", s)
		add(err)
	}
	c.ReconnectURL = getenv("FINSYNC_RECONNECT_URL")
	if c.ReconnectURL != "" {
		_, err := parseHTTPURL("FINSYNC_RECONNECT_URL",
			strings.ReplaceAll(c.ReconnectURL, "{connection_id}", "00000000-0000-0000-0000-000000000000"))
		add(err)
	}
	c.ReadMaxLag, err = positiveDuration("FINSYNC_READ_MAX_LAG", getenv("FINSYNC_READ_MAX_LAG"), "5s")
	add(err)
	c.SyncWriteRate, err = parseSyncWriteRate(getenv("FINSYNC_SYNC_WRITE_RATE"))
	add(err)
	c.ConsentWarning, err = positiveDuration("FINSYNC_CONSENT_WARNING", getenv("FINSYNC_CONSENT_WARNING"), "168h")
	add(err)
	c.TrustedProxies, err = ParseTrustedProxies(getenv("FINSYNC_TRUSTED_PROXIES"))
	add(err)
	c.OpsToken, err = parseOpsToken(getenv("FINSYNC_OPS_TOKEN"))
	add(err)
	allow := getenv(netguard.EnvAllowPrivate)
	c.WebhookPolicySet = allow != ""
	c.WebhookPolicy.AllowPrivate, err = netguard.ParseAllowPrivate(allow)
	add(err)
	if s := getenv("FINSYNC_PUBLIC_URL"); s != "" {
		c.PublicURL, err = ParsePublicURL(s)
		add(err)
	}
	c.DBMaxConns, err = ParseDBMaxConns(getenv("FINSYNC_DB_MAX_CONNS"))
	add(err)
	c.GCPercent, c.GCPercentSet, err = parseGOGC(getenv("GOGC"))
	add(err)
	c.PageCacheMB, c.PageCacheMBSet, err = parsePageCacheMB(getenv("FINSYNC_PAGE_CACHE_MB"))
	add(err)
	c.PGBinDir = getenv("FINSYNC_PG_BINDIR")
	if c.PGBinDir != "" {
		if st, err := os.Stat(c.PGBinDir); err != nil || !st.IsDir() {
			add(fmt.Errorf("FINSYNC_PG_BINDIR: %q is not a directory", c.PGBinDir))
		}
	}
	c.setEncryptionKey(getenv("FINSYNC_ENCRYPTION_KEY"))
	c.setCursorKey(getenv("FINSYNC_CURSOR_KEY"))
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("invalid configuration (see README, Configuration):\n%w", err)
	}
	return c, nil
}

// DefaultPageCacheMB is the page cache's memory when FINSYNC_PAGE_CACHE_MB
// is unset: a first page of 50 rows takes about 32 KiB, so 256 MiB keeps
// about 8,000 of them (or 1,600 pages of 250).
const DefaultPageCacheMB = 256

// MaxPageCacheMB is the largest FINSYNC_PAGE_CACHE_MB accepted (64 GiB).
const MaxPageCacheMB = 64 << 10

// PageCacheBytes is the page cache's budget in bytes: PageCacheMB MiB
// when set, else DefaultPageCacheMB; 0 keeps no page.
func (c Config) PageCacheBytes() int64 {
	if !c.PageCacheMBSet {
		return DefaultPageCacheMB << 20
	}
	return int64(c.PageCacheMB) << 20
}

// parsePageCacheMB parses FINSYNC_PAGE_CACHE_MB; empty is unset.
func parsePageCacheMB(s string) (mb int, set bool, err error) {
	if s == "" {
		return 0, false, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 || n > MaxPageCacheMB {
		return 0, false, fmt.Errorf("FINSYNC_PAGE_CACHE_MB: %q is not a whole number of MiB from 0 (no cache) to %d", s, MaxPageCacheMB)
	}
	return n, true, nil
}

// DatabaseURLOrDefault is DatabaseURL, or DefaultDatabaseURL when unset.
func (c Config) DatabaseURLOrDefault() string {
	if c.DatabaseURL != "" {
		return c.DatabaseURL
	}
	return DefaultDatabaseURL
}

// DBConns is the pool size: DBMaxConns, or def (the command's default)
// when unset.
func (c Config) DBConns(def int32) int32 {
	if c.DBMaxConns == 0 {
		return def
	}
	return c.DBMaxConns
}

// GCPercentOr is the collector's target: GOGC when set, else def (the
// process's own default).
func (c Config) GCPercentOr(def int) int {
	if c.GCPercentSet {
		return c.GCPercent
	}
	return def
}

// PublicURLFor is the base of v1's links: PublicURL, else http://addr
// (addr the API's listen address, an unspecified host read as localhost),
// reported by defaulted so that serve can warn that links name the listen
// address.
func (c Config) PublicURLFor(addr string) (u *url.URL, defaulted bool, err error) {
	if c.PublicURL != nil {
		return c.PublicURL, false, nil
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

func parseLogLevel(s string) (slog.Level, error) {
	var l slog.Level
	if s == "" {
		return l, nil
	}
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("FINSYNC_LOG_LEVEL: %q is not a level: use debug, info, warn or error", s)
	}
	return l, nil
}

// ParsePublicURL parses FINSYNC_PUBLIC_URL: an absolute http or https URL
// with a host, optionally a path prefix, and no user information, query or
// fragment (a link built on it would repeat them).
func ParsePublicURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return nil, fmt.Errorf("FINSYNC_PUBLIC_URL: %q is not an absolute http(s) URL such as https://api.example.com", s)
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, fmt.Errorf("FINSYNC_PUBLIC_URL: %q: give scheme, host and an optional path only (no user, query or fragment)", s)
	}
	return u, nil
}

// checkDatabaseURL reports whether s is a PostgreSQL connection string
// (URL or key=value) that storage accepts.
func checkDatabaseURL(name, s string) error {
	if err := storage.ValidateURL(s); err != nil {
		return fmt.Errorf("%s: not a PostgreSQL URL such as postgres://user@host:5432/db: %w", name, err)
	}
	return nil
}

// parseHTTPURL parses s as an absolute http or https URL.
func parseHTTPURL(name, s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s: %q is not an absolute http(s) URL", name, s)
	}
	return u, nil
}

// positiveDuration parses a positive Go duration; empty yields 0 (the
// default of whoever reads it).
func positiveDuration(name, s, example string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s: %q is not a positive duration such as %s", name, s, example)
	}
	return d, nil
}

// ParseDBMaxConns parses FINSYNC_DB_MAX_CONNS: a whole number of
// connections per pool, 1 to MaxDBConns; empty yields 0 (the command's
// default).
func ParseDBMaxConns(s string) (int32, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 1 || n > MaxDBConns {
		return 0, fmt.Errorf("FINSYNC_DB_MAX_CONNS: %q is not a whole number of connections from 1 to %d", s, MaxDBConns)
	}
	return int32(n), nil
}

// parseSyncWriteRate parses FINSYNC_SYNC_WRITE_RATE: a whole number of
// rows a second, 0 for no bound; empty yields DefaultSyncWriteRate.
func parseSyncWriteRate(s string) (float64, error) {
	if s == "" {
		return DefaultSyncWriteRate, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("FINSYNC_SYNC_WRITE_RATE: %q is not a whole number of rows a second (0: no bound)", s)
	}
	return float64(n), nil
}

// parseOpsToken checks FINSYNC_OPS_TOKEN; empty (no console) is valid.
func parseOpsToken(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	if err := ops.ValidateToken(s); err != nil {
		return "", fmt.Errorf("FINSYNC_OPS_TOKEN %w", err)
	}
	return s, nil
}

// parseGOGC parses GOGC: a percentage or off (-1); empty is unset.
func parseGOGC(s string) (percent int, set bool, err error) {
	switch s {
	case "":
		return 0, false, nil
	case "off":
		return -1, true, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, false, fmt.Errorf("GOGC: %q is not a percentage or off", s)
	}
	return n, true, nil
}

// ParseTrustedProxies parses FINSYNC_TRUSTED_PROXIES: comma-separated IP
// addresses (one host each) or CIDR blocks; empty yields none.
func ParseTrustedProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, item := range strings.Split(s, ",") {
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
