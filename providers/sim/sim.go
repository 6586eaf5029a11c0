package sim

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/finsync/finsync/providers/sim/simkit"
)

// Fault modes accepted by SetFault and POST /_sim/faults. Every provider
// supports none to malformed; institution_down (one institution, or all,
// is down) and mutation (data changes under a paging loop, once) only
// where its ExtraFaults lists them.
const (
	FaultNone            = "none"
	FaultOutage          = "outage"
	FaultRateLimit       = "rate_limit"
	FaultLatency         = "latency"
	FaultLoginRequired   = "login_required"
	FaultMalformed       = "malformed"
	FaultInstitutionDown = "institution_down"
	FaultMutation        = "mutation"
)

// Options configures a Simulator. Zero values select the defaults.
type Options struct {
	// Seed makes all generated data reproducible.
	Seed int64
	// Start is the simulator's "today" before any advance (default: today UTC).
	Start time.Time
	// HistoryTransactions is the default number of transactions of a
	// connection's history, across its transaction accounts (default 300).
	HistoryTransactions int
	// HistoryDays is the default span of a connection's history (default 90).
	HistoryDays int
	// DailyQuota is, for a provider that meters calls per account and day
	// (GoCardless), the number of successful calls allowed separately for
	// each kind of call (0: the provider's own default, 4 for GoCardless;
	// negative disables the quota).
	DailyQuota int
	// AccessTokenTTL is the lifetime of the access tokens a provider issues
	// (0: the provider's default, 24h for GoCardless).
	AccessTokenTTL time.Duration
	// RefreshTokenTTL is the lifetime of the refresh tokens a provider
	// issues (0: the provider's default, 30 days for GoCardless).
	RefreshTokenTTL time.Duration
	// Now returns the wall-clock time used for token expiry and for the time
	// of day (default time.Now).
	Now func() time.Time
	// MemoBytes lets a provider's simulator keep the transaction pages it
	// renders, up to about this many bytes in all, and serve a page asked
	// again with the same query as the bytes kept, for as long as the clock
	// and the faults stay as they were (any change forgets every page).
	// Zero or negative keeps none: every page is rendered afresh and a
	// history of any size holds no memory. Benchmarks set it, so that a
	// page read again costs the simulator, a stand-in for a remote
	// provider whose CPU is not the client's, a write of bytes. Caveat:
	// kept pages are live heap (about 1 KB per transaction). Providers
	// whose package says so honour it (Mercury); the others ignore it.
	MemoBytes int64
	// Services are other simulated HTTP services served on the same root
	// (for example the destinations finsync delivers to), at the paths
	// each lists. Provider faults do not apply to them.
	Services []Service
}

// Service is a simulated HTTP service a Simulator serves beside the
// providers.
type Service interface {
	http.Handler
	// Paths lists the paths the service answers: a path ending in "/"
	// stands for every path below it, any other for itself. They must not
	// overlap the providers' paths or /_sim/ (but may lie below
	// /_sim/<service>/).
	Paths() []string
}

// withDefaults returns o with every zero field set to its default.
func (o Options) withDefaults() Options {
	if o.Start.IsZero() {
		o.Start = time.Now().UTC()
	}
	o.Start = time.Date(o.Start.Year(), o.Start.Month(), o.Start.Day(), 0, 0, 0, 0, time.UTC)
	if o.HistoryTransactions <= 0 {
		o.HistoryTransactions = 300
	}
	if o.HistoryDays <= 0 {
		o.HistoryDays = 90
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Fault is an injected failure mode for one provider.
type Fault struct {
	// Provider is the name of a mounted ProviderSim.
	Provider string `json:"provider"`
	// Mode is one of the Fault* constants.
	Mode string `json:"mode"`
	// LatencyMs delays every response in latency mode.
	LatencyMs int `json:"latencyMs,omitempty"`
	// InstitutionID limits institution_down to one institution, for a
	// provider whose simulator knows institutions.
	InstitutionID string `json:"institutionId,omitempty"`
	// Path, when set, limits outage, rate_limit, latency and malformed to
	// requests whose path contains it (for example "/balances/": only
	// GoCardless balance calls fail).
	Path string `json:"path,omitempty"`
}

// ConnectionSettings sizes the history of one connection.
type ConnectionSettings struct {
	// Provider is the name of a mounted ProviderSim.
	Provider string `json:"provider"`
	// Credential is the distinguishing credential, as the provider's
	// ProviderSim.CredentialKey derives it from a credentials object (for
	// example an access token, or a user name of an access URL).
	Credential string `json:"credential"`
	// Transactions is the total history size across transaction accounts.
	Transactions int `json:"transactions"`
	// HistoryDays is the span of the history in days.
	HistoryDays int `json:"historyDays"`
	// RecentDays, when positive, serves at first only the transactions of
	// the last RecentDays days up to the start date (day 0); the older
	// history appears once the clock reaches RevealDay (at least 1), as
	// Plaid's historical update does. Balances count it all along.
	RecentDays int `json:"recentDays,omitempty"`
	// RevealDay is the day the history RecentDays hid appears.
	RevealDay int64 `json:"revealDay,omitempty"`
}

// State is a snapshot of the simulator's clock and faults.
type State struct {
	// Today is the simulated current date.
	Today string `json:"today"`
	// Day is the number of days advanced since the start.
	Day int64 `json:"day"`
	// Faults lists the active faults by provider.
	Faults map[string]Fault `json:"faults"`
}

// Simulator serves the simulated providers' APIs it was built with. It is
// safe for concurrent use.
type Simulator struct {
	opts      Options
	providers Providers
	seed      uint64
	mux       *http.ServeMux

	mu     sync.Mutex
	clock  int64
	faults map[string]Fault
	conns  map[string]*conn
	// hooks are told of clock advances and faults (OnChange), set while
	// the providers' Route runs and read-only after.
	hooks []func(Change)
	// webhookURLs are where each provider's notifications go (SetWebhookURL).
	webhookURLs map[string]string
	// notifyClient sends the notifications (Notify).
	notifyClient *http.Client
}

// Change is what a Simulator's OnChange hooks are told of: the clock
// advanced (Days > 0), or a provider's fault was set (Fault, with the one
// it replaced in Previous).
type Change struct {
	Days     int
	Fault    *Fault
	Previous Fault
}

// conn is the mutable bookkeeping of one connection.
type conn struct {
	provider string
	key      string
	seed     uint64
	total    int64
	days     int64
	frozen   bool
	// recent and reveal hide older history (ConnectionSettings.RecentDays).
	recent, reveal int64
	// consentEnds is when the user's consent ends (SetConsent); zero: never.
	consentEnds time.Time
}

// timeline returns the connection's timeline with the given number of
// transaction accounts.
func (c *conn) timeline(accounts int) simkit.Timeline {
	tl := simkit.NewTimeline(c.seed, c.total, c.days, accounts)
	if c.recent > 0 {
		tl.HideHistory(1-c.recent, c.reveal)
	}
	return tl
}

// New returns a simulator configured by opts that serves the simulated
// providers ps (allsim.Providers() lists every one finsync ships). A
// provider listed twice is served once, under its first entry.
func New(opts Options, ps ...ProviderSim) *Simulator {
	opts = opts.withDefaults()
	var list Providers
	for _, p := range ps {
		if list.Lookup(p.Name()) == nil {
			list = append(list, p)
		}
	}
	s := &Simulator{
		opts:        opts,
		providers:   list,
		seed:        simkit.Mix(uint64(opts.Seed)),
		faults:      map[string]Fault{},
		conns:       map[string]*conn{},
		webhookURLs: map[string]string{},

		notifyClient: &http.Client{Timeout: notifyTimeout},
	}
	s.mux = http.NewServeMux()
	s.routeControl()
	for _, p := range s.providers {
		p.Route(s, s.mux)
	}
	return s
}

// service returns the mounted service that answers path, or nil.
func (s *Simulator) service(path string) Service {
	for _, sv := range s.opts.Services {
		for _, p := range sv.Paths() {
			if path == p || strings.HasSuffix(p, "/") && strings.HasPrefix(path, p) {
				return sv
			}
		}
	}
	return nil
}

// ServeHTTP serves the providers' APIs, the mounted services and the
// /_sim/ control API.
func (s *Simulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if sv := s.service(r.URL.Path); sv != nil {
		sv.ServeHTTP(w, r)
		return
	}
	sp := s.providerOf(r.URL.Path)
	if sp == nil {
		s.mux.ServeHTTP(w, r)
		return
	}
	f := s.ActiveFault(sp.Name())
	if f.Path != "" && !strings.Contains(r.URL.Path, f.Path) {
		f = Fault{}
	}
	if f.Mode == FaultLatency && f.LatencyMs > 0 {
		t := time.NewTimer(time.Duration(f.LatencyMs) * time.Millisecond)
		select {
		case <-r.Context().Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	if f.Mode == FaultMalformed {
		tw := &truncWriter{ResponseWriter: w}
		s.mux.ServeHTTP(tw, r)
		tw.finish()
		return
	}
	if f.Mode == FaultOutage || f.Mode == FaultRateLimit {
		sp.WriteFault(w, r, f.Mode)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// providerOf returns the simulated provider that serves a request path
// (nil for the control API).
func (s *Simulator) providerOf(path string) ProviderSim {
	if strings.HasPrefix(path, "/_sim/") {
		return nil
	}
	return s.providers.forPath(path)
}

// ActiveFault returns the active fault of provider p (the zero Fault when
// none is set).
func (s *Simulator) ActiveFault(p string) Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faults[p]
}

// TakeFault reports whether provider p's active fault has the given mode
// and, if so, clears it: a fault that answers once.
func (s *Simulator) TakeFault(p, mode string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faults[p].Mode != mode {
		return false
	}
	delete(s.faults, p)
	return true
}

// Options returns the simulator's options, defaults filled in.
func (s *Simulator) Options() Options { return s.opts }

// Seed returns the simulator's mixed seed, from which every connection's
// data derives.
func (s *Simulator) Seed() uint64 { return s.seed }

// Now returns the wall-clock time (Options.Now).
func (s *Simulator) Now() time.Time { return s.opts.Now() }

// WallNow returns the simulated current instant: the simulated date with
// the wall clock's time of day.
func (s *Simulator) WallNow() time.Time {
	n := s.Now().UTC()
	d := s.DateOf(s.Clock())
	return d.Add(time.Duration(n.Hour())*time.Hour + time.Duration(n.Minute())*time.Minute + time.Duration(n.Second())*time.Second)
}

// Clock returns the simulated current day: the number of days advanced
// since the start.
func (s *Simulator) Clock() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clock
}

// DateOf returns the calendar date of simulated day d.
func (s *Simulator) DateOf(d int64) time.Time { return s.opts.Start.AddDate(0, 0, int(d)) }

// DayOf returns the simulated day of a calendar date.
func (s *Simulator) DayOf(t time.Time) int64 {
	t = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	return int64(t.Sub(s.opts.Start).Hours()) / 24
}

// SecondsToReset returns the seconds left in the current simulated day,
// using the wall clock's time of day.
func (s *Simulator) SecondsToReset() int64 {
	n := s.Now().UTC()
	left := 86400 - int64(n.Hour()*3600+n.Minute()*60+n.Second())
	if left <= 0 {
		left = 1
	}
	return left
}

// Advance moves the simulated clock forward by days: new transactions
// appear, pending ones post or vanish.
func (s *Simulator) Advance(days int) error {
	if days < 0 {
		return fmt.Errorf("advance: days must be >= 0, got %d", days)
	}
	s.mu.Lock()
	s.clock += int64(days)
	s.mu.Unlock()
	if days > 0 {
		s.tell(Change{Days: days})
	}
	return nil
}

// OnChange registers fn to be told of every clock advance and fault set,
// after the change (a provider's simulator sends its notifications from
// it). Call it only from ProviderSim.Route, while New builds the
// simulator; fn runs on the caller's goroutine and must not block.
func (s *Simulator) OnChange(fn func(Change)) { s.hooks = append(s.hooks, fn) }

// tell runs the OnChange hooks.
func (s *Simulator) tell(c Change) {
	for _, fn := range s.hooks {
		fn(c)
	}
}

// SetWebhookURL sets where provider's simulator sends its notifications
// (POST /_sim/webhooks); empty sends none, the default.
func (s *Simulator) SetWebhookURL(provider, url string) error {
	if s.providers.Lookup(provider) == nil {
		return fmt.Errorf("set webhook URL: unknown provider %q", provider)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.webhookURLs[provider] = url
	return nil
}

// WebhookURL returns where provider's notifications go ("" for nowhere).
func (s *Simulator) WebhookURL(provider string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.webhookURLs[provider]
}

// SetFault sets (or with mode none clears) the fault of one provider.
func (s *Simulator) SetFault(f Fault) error {
	if s.providers.Lookup(f.Provider) == nil {
		return fmt.Errorf("set fault: unknown provider %q", f.Provider)
	}
	switch f.Mode {
	case FaultNone, "":
		f.Mode = FaultNone
	case FaultOutage, FaultRateLimit, FaultLatency, FaultLoginRequired, FaultMalformed:
	default:
		if !slices.Contains(s.providers.Lookup(f.Provider).ExtraFaults(), f.Mode) {
			return fmt.Errorf("set fault: mode %q is not supported for %s", f.Mode, f.Provider)
		}
	}
	s.mu.Lock()
	prev, ok := s.faults[f.Provider]
	if !ok {
		prev = Fault{Provider: f.Provider, Mode: FaultNone}
	}
	if f.Mode == FaultNone {
		delete(s.faults, f.Provider)
	} else {
		s.faults[f.Provider] = f
	}
	s.mu.Unlock()
	s.tell(Change{Fault: &f, Previous: prev})
	return nil
}

// SetConnection sizes one connection's history. It must be called before
// the connection's data is first fetched.
func (s *Simulator) SetConnection(cs ConnectionSettings) error {
	if s.providers.Lookup(cs.Provider) == nil {
		return fmt.Errorf("set connection: unknown provider %q", cs.Provider)
	}
	if cs.Credential == "" {
		return fmt.Errorf("set connection: credential is required")
	}
	if cs.Transactions < 0 || cs.HistoryDays < 0 || cs.RecentDays < 0 {
		return fmt.Errorf("set connection: transactions, historyDays and recentDays must be >= 0")
	}
	if cs.RecentDays > 0 && cs.RevealDay < 1 {
		return fmt.Errorf("set connection: revealDay must be >= 1 when recentDays is set, got %d", cs.RevealDay)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.connLocked(cs.Provider, cs.Credential)
	total, days := int64(cs.Transactions), int64(cs.HistoryDays)
	if total == 0 {
		total = c.total
	}
	if days == 0 {
		days = c.days
	}
	recent, reveal := int64(cs.RecentDays), cs.RevealDay
	if recent == 0 {
		recent, reveal = c.recent, c.reveal
	}
	if c.frozen && (total != c.total || days != c.days || recent != c.recent || reveal != c.reveal) {
		return fmt.Errorf("set connection: %s connection already fetched; history can no longer change", cs.Provider)
	}
	c.total, c.days, c.recent, c.reveal = total, days, recent, reveal
	return nil
}

// Consent is when one connection's consent ends (POST /_sim/consent).
type Consent struct {
	// Provider is the name of a mounted ProviderSim.
	Provider string `json:"provider"`
	// Credential is the distinguishing credential (ConnectionSettings).
	Credential string `json:"credential"`
	// ExpiresAt is the end, in simulated time (WallNow); zero or absent
	// removes it.
	ExpiresAt time.Time `json:"expiresAt"`
}

// SetConsent sets when a connection's consent ends. A provider simulator
// that models consent reports the end where its API does, and once the
// simulated time (WallNow) reaches it answers as its API does for an
// expired consent; the others ignore it.
func (s *Simulator) SetConsent(c Consent) error {
	if s.providers.Lookup(c.Provider) == nil {
		return fmt.Errorf("set consent: unknown provider %q", c.Provider)
	}
	if c.Credential == "" {
		return fmt.Errorf("set consent: credential is required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.connLocked(c.Provider, c.Credential).consentEnds = c.ExpiresAt
	return nil
}

// ConsentEnds returns when a connection's consent ends, and whether one
// was set, and whether it has ended by the simulated time.
func (s *Simulator) ConsentEnds(provider, key string) (ends time.Time, set, ended bool) {
	now := s.WallNow()
	s.mu.Lock()
	defer s.mu.Unlock()
	ends = s.connLocked(provider, key).consentEnds
	return ends, !ends.IsZero(), !ends.IsZero() && !now.Before(ends)
}

// State returns the simulator's clock and faults.
func (s *Simulator) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := State{Day: s.clock, Today: s.DateOf(s.clock).Format(time.DateOnly), Faults: map[string]Fault{}}
	for k, v := range s.faults {
		st.Faults[k] = v
	}
	return st
}

// connLocked returns (creating if needed) the bookkeeping of a connection;
// s.mu must be held.
func (s *Simulator) connLocked(provider, key string) *conn {
	id := provider + "\x00" + key
	c, ok := s.conns[id]
	if !ok {
		c = &conn{
			provider: provider,
			key:      key,
			seed:     simkit.HashString(s.seed, provider, key),
			total:    int64(s.opts.HistoryTransactions),
			days:     int64(s.Options().HistoryDays),
		}
		s.conns[id] = c
	}
	return c
}

// Snapshot is an immutable view of one connection at one clock.
type Snapshot struct {
	// Seed is the connection's seed.
	Seed uint64
	// Clock is the simulated day the view was taken on.
	Clock int64
	// TL is the connection's transaction timeline.
	TL simkit.Timeline
}

// Open freezes a connection's settings (SetConnection can no longer change
// them) and returns its timeline with the given number of transaction
// accounts, at the current clock.
func (s *Simulator) Open(provider, key string, accounts int) Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.connLocked(provider, key)
	c.frozen = true
	return Snapshot{Seed: c.seed, Clock: s.clock, TL: c.timeline(accounts)}
}

// View returns what Open does without freezing the connection's settings
// (for balances, which a provider shows before any history is fetched).
func (s *Simulator) View(provider, key string, accounts int) Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.connLocked(provider, key)
	return Snapshot{Seed: c.seed, Clock: s.clock, TL: c.timeline(accounts)}
}

// ConnSeed returns the seed of a connection without freezing it.
func (s *Simulator) ConnSeed(provider, key string) uint64 {
	return simkit.HashString(s.seed, provider, key)
}

// truncWriter keeps the start of a response and writes only part of it,
// producing a 200 with a truncated JSON body.
type truncWriter struct {
	http.ResponseWriter
	buf []byte
}

// WriteHeader drops the status: a malformed response is always a 200.
func (t *truncWriter) WriteHeader(int) {}

// Write buffers the body.
func (t *truncWriter) Write(b []byte) (int, error) {
	if room := 128 - len(t.buf); room > 0 {
		t.buf = append(t.buf, b[:min(room, len(b))]...)
	}
	return len(b), nil
}

// finish writes the truncated body.
func (t *truncWriter) finish() {
	n := len(t.buf) / 2
	if n > 64 {
		n = 64
	}
	if n == 0 && len(t.buf) > 0 {
		n = 1
	}
	t.ResponseWriter.Header().Del("Content-Length")
	t.ResponseWriter.WriteHeader(http.StatusOK)
	_, _ = t.ResponseWriter.Write(t.buf[:n])
}
