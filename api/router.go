// Package api assembles finsync's HTTP API: the Gin engine with the
// middleware every request passes through, versions 1 and 2 of the API, and
// the HTTP server with its timeouts and graceful shutdown.
package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/finsync/finsync/api/cursor"
	"github.com/finsync/finsync/api/idempotency"
	"github.com/finsync/finsync/api/middleware"
	"github.com/finsync/finsync/api/notices"
	"github.com/finsync/finsync/api/openapi"
	"github.com/finsync/finsync/api/ops"
	"github.com/finsync/finsync/api/pagecache"
	v1 "github.com/finsync/finsync/api/v1"
	v2 "github.com/finsync/finsync/api/v2"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/internal/netguard"
	"github.com/finsync/finsync/internal/requestid"
	"github.com/finsync/finsync/storage"
)

// MaxBodyBytes is the largest request body accepted.
const MaxBodyBytes = 1 << 20

// Config wires the API.
type Config struct {
	Store *storage.Store
	Log   *slog.Logger
	// CursorKey seals pagination cursors.
	CursorKey []byte
	// PreviousCursorKeys are keys of earlier rotations, newest first:
	// cursors they sealed still open, new ones are sealed with CursorKey.
	PreviousCursorKeys [][]byte
	// Metrics receives the HTTP metrics; nil skips them.
	Metrics prometheus.Registerer
	// Auth tunes credential caching and throttling; zero uses the defaults.
	Auth middleware.AuthConfig
	// Plans overrides the version 2 per-minute budgets by plan.
	Plans v2.PlanLimits
	// Jobs enqueues River jobs in the transaction of the change causing
	// them (an insert-only River client); nil skips rule application.
	Jobs v2.JobInserter
	// TrustedProxies are the peers whose X-Forwarded-For header names the
	// client address (the auth-failure throttle keys on it). Empty, the
	// default, trusts no
	// one: the address is the connection's peer, and forwarding headers,
	// which any client can forge, are dropped.
	TrustedProxies []netip.Prefix
	// RequestDeadline bounds each request's work; zero uses
	// middleware.DefaultRequestDeadline.
	RequestDeadline time.Duration
	// RateLimits tunes the per-user limits shared by every API process
	// through PostgreSQL (docs/rate-limits.md); zero uses the defaults.
	RateLimits middleware.SharedConfig
	// Expensive tunes the per-credential cap on concurrent expensive
	// requests (ExpensiveRoutes), shared by every API process through
	// PostgreSQL (docs/rate-limits.md); zero uses the defaults.
	Expensive middleware.ConcurrencyConfig
	// Providers are what the adapters declare (providers.Registry's
	// Profiles): v1 needs their capitalised names and paging, and the
	// OpenAPI documents' Provider enums list them, in their order. The API
	// itself never imports the adapters.
	Providers []domain.ProviderProfile
	// Ops is the operators' console mounted at /ops; nil mounts none (the
	// /ops routes then answer 404 like any unknown path).
	Ops *ops.Console
	// Box seals consumer webhooks' secrets (a *secrets.Box); nil refuses
	// to create them.
	Box v2.Sealer
	// WebhookPolicy decides which webhook URLs v2 accepts (the zero value:
	// public https only; FINSYNC_WEBHOOK_ALLOW_PRIVATE=1 allows all).
	WebhookPolicy netguard.Policy
	// PublicURL is the absolute http(s) URL clients reach the API at
	// (FINSYNC_PUBLIC_URL), the base of v1's nextPage links, which never
	// take the request's Host; nil uses v1.DefaultPublicURL.
	PublicURL *url.URL
	// Notices receives the providers' notifications at
	// POST /providers/{provider}/webhooks (the worker's NoticeReceiver);
	// nil mounts no such route.
	Notices notices.Receiver
	// PageCacheBytes is the memory given to pages of GET /v2/transactions
	// kept for asking again (FINSYNC_PAGE_CACHE_MB, docs/read-cache.md);
	// zero keeps none.
	PageCacheBytes int64
}

// API is the assembled HTTP handler and the background work it needs.
type API struct {
	Handler http.Handler
	auth    *middleware.Authenticator
	limits  *middleware.SharedLimits
	costly  *middleware.Concurrency
	idem    *idempotency.Guard
	store   *storage.Store
}

// MustNew is New, panicking where New fails: for tests and benchmarks that
// hand it the registry's profiles, whose documents the openapi package's
// tests render. Processes that serve use New.
func MustNew(cfg Config) *API {
	a, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return a
}

// New builds the API. It renders the OpenAPI documents served at
// /v1/openapi.json and /v2/openapi.json once, from cfg.Providers, so their
// Provider enums list exactly those providers; it fails, before anything
// is served, when they cannot be rendered (see openapi.V1 and V2).
func New(cfg Config) (*API, error) {
	v1Doc, err := openapi.V1(cfg.Providers)
	if err != nil {
		return nil, err
	}
	v2Doc, err := openapi.V2(cfg.Providers)
	if err != nil {
		return nil, err
	}
	gin.SetMode(gin.ReleaseMode)
	cfg.Log = requestid.Logger(cfg.Log)
	e := gin.New()
	e.HandleMethodNotAllowed = true
	e.ContextWithFallback = true
	// Route on the path as sent, so that an escaped slash (%2F) stays
	// inside its parameter (an unknown id, 404) instead of splitting it.
	e.UseRawPath = true
	// A path that names no route (a trailing slash, an empty id) answers
	// 404 NOT_FOUND in the envelope, not an undocumented redirect.
	e.RedirectTrailingSlash = false
	trustProxies(e, cfg.TrustedProxies, cfg.Log)
	authCfg := cfg.Auth
	if authCfg.CacheSize == 0 {
		authCfg = middleware.DefaultAuthConfig()
	}
	auth := middleware.NewAuthenticator(cfg.Store, authCfg, cfg.Log)
	e.Use(dropForgedForwarding(cfg.TrustedProxies))
	e.Use(middleware.RequestID(isV1))
	if cfg.Metrics != nil {
		e.Use(middleware.NewMetrics(cfg.Metrics).Handler())
	}
	deadline := cfg.RequestDeadline
	if deadline == 0 {
		deadline = middleware.DefaultRequestDeadline
	}
	e.Use(middleware.Logger(cfg.Log), limitBody, middleware.Deadline(deadline))
	limits := middleware.NewSharedLimits(cfg.Store, cfg.RateLimits, cfg.Log)
	idem := idempotency.New(cfg.Store, deadline, cfg.Log)
	costly := middleware.NewConcurrency(cfg.Store, cfg.Expensive, cfg.Log)
	pages := pagecache.New(cfg.PageCacheBytes)
	if cfg.Metrics != nil && pages != nil {
		registerPageCacheMetrics(cfg.Metrics, pages)
	}
	v2.Register(e, v2.Config{
		Store:   cfg.Store,
		Cursors: cursor.NewCodec(cfg.CursorKey, cfg.PreviousCursorKeys...),
		Auth:    auth,
		Limits:  limits,
		Log:     cfg.Log,
		Plans:   cfg.Plans,
		OpenAPI: v2Doc,
		Jobs:    cfg.Jobs,

		Idempotency:   idem,
		Box:           cfg.Box,
		WebhookPolicy: cfg.WebhookPolicy,
		Expensive:     costly.Handler(v2.Responder{}, expensiveRoutes()),
		Pages:         pages,
	})
	v1.Register(e, v1.Config{
		Store:     cfg.Store,
		Auth:      auth,
		Limits:    limits,
		Log:       cfg.Log,
		OpenAPI:   v1Doc,
		Providers: cfg.Providers,
		PublicURL: cfg.PublicURL,
		Expensive: costly.Handler(v1.Responder{}, expensiveRoutes()),
	})
	if cfg.Ops != nil {
		cfg.Ops.Register(e)
	}
	notices.Register(e, cfg.Notices, cfg.Log)
	e.NoRoute(func(c *gin.Context) {
		if cfg.Ops != nil && ops.Owns(c.Request.URL.Path) {
			cfg.Ops.Unrouted(c, http.StatusNotFound)
			return
		}
		if isV1(c) {
			v1.Fail(c, http.StatusNotFound, v1.CodeNotFound, "No such endpoint")
			return
		}
		v2.Fail(c, http.StatusNotFound, v2.CodeNotFound, "No such endpoint")
	})
	e.NoMethod(func(c *gin.Context) {
		if cfg.Ops != nil && ops.Owns(c.Request.URL.Path) {
			cfg.Ops.Unrouted(c, http.StatusMethodNotAllowed)
			return
		}
		msg := "Method " + c.Request.Method + " is not allowed on " + strings.TrimSuffix(c.Request.URL.Path, "/")
		if isV1(c) {
			v1.Fail(c, http.StatusMethodNotAllowed, v1.CodeMethodNotAllowed, msg)
			return
		}
		v2.Fail(c, http.StatusMethodNotAllowed, v2.CodeMethodNotAllowed, msg)
	})
	return &API{Handler: e, auth: auth, limits: limits, costly: costly, idem: idem, store: cfg.Store}, nil
}

// registerPageCacheMetrics exports the page cache's outcomes and size.
func registerPageCacheMetrics(reg prometheus.Registerer, pages *pagecache.Cache) {
	for _, o := range pagecache.Outcomes() {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "finsync_page_cache_requests_total",
			Help:        "GET /v2/transactions requests by what the page cache could do: hit (served from memory), stale (a page kept but not served: read at an older version, or the version unreadable), miss (none kept), bypass (the page was found stale within the last second: the database is read, no version checked, no page kept).",
			ConstLabels: prometheus.Labels{"result": o.String()},
		}, func() float64 { return float64(pages.Counted(o)) }))
	}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "finsync_page_cache_bytes",
		Help: "Memory the kept pages of GET /v2/transactions and their keys take, marks of stale pages included (within FINSYNC_PAGE_CACHE_MB).",
	}, func() float64 { return float64(pages.Bytes()) }))
}

// expensiveRoutes are the requests capped per credential (Config.Expensive):
// rule previews, and the transaction listings of both versions asked for
// more than ConcurrencyConfig.LargeListing rows (100 by default) a page.
func expensiveRoutes() middleware.ExpensiveRoutes {
	return middleware.ExpensiveRoutes{
		"/v2/rules/preview":           middleware.Always,
		"/v2/transactions":            middleware.Listing,
		"/v2/investment-transactions": middleware.Listing,
		"/v1/transactions":            middleware.Listing,
		"/v1/investment-transactions": middleware.Listing,
	}
}

// Run keeps the API's background work going (credential change listener
// and version checks, last-used flushes, giving back idle rate-limit
// leases, purging expired idempotency keys and concurrency slots) until
// ctx ends.
func (a *API) Run(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.limits.Run(ctx)
	}()
	idemDone := make(chan struct{})
	go func() {
		defer close(idemDone)
		a.idem.Run(ctx)
	}()
	costlyDone := make(chan struct{})
	go func() {
		defer close(costlyDone)
		a.costly.Run(ctx)
	}()
	a.auth.Run(ctx)
	<-done
	<-idemDone
	<-costlyDone
}

// isV1 reports whether the request is for version 1 of the API.
func isV1(c *gin.Context) bool {
	p := c.Request.URL.Path
	return p == "/v1" || strings.HasPrefix(p, "/v1/")
}

// trustProxies makes the engine take the client address from
// X-Forwarded-For only when the peer is one of the trusted proxies (X-Real-IP
// and platform headers are never read).
func trustProxies(e *gin.Engine, trusted []netip.Prefix, log *slog.Logger) {
	e.ForwardedByClientIP = true
	e.RemoteIPHeaders = []string{"X-Forwarded-For"}
	cidrs := make([]string, len(trusted))
	for i, p := range trusted {
		cidrs[i] = p.Masked().String()
	}
	if err := e.SetTrustedProxies(cidrs); err != nil {
		// Unreachable with parsed prefixes; trust no one rather than everyone.
		log.Error("trusted proxies refused; trusting none", "error", err)
		_ = e.SetTrustedProxies(nil)
	}
}

// dropForgedForwarding removes the forwarding headers (Forwarded,
// X-Forwarded-*) of every request whose peer is not a trusted proxy, so
// that no handler reads what a client may have forged.
func dropForgedForwarding(trusted []netip.Prefix) gin.HandlerFunc {
	return func(c *gin.Context) {
		if !peerTrusted(c.Request.RemoteAddr, trusted) {
			h := c.Request.Header
			for name := range h {
				if name == "Forwarded" || strings.HasPrefix(name, "X-Forwarded-") {
					h.Del(name)
				}
			}
		}
		c.Next()
	}
}

// peerTrusted reports whether the connection's peer (host:port) is within
// one of the trusted prefixes.
func peerTrusted(remoteAddr string, trusted []netip.Prefix) bool {
	if len(trusted) == 0 {
		return false
	}
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return false
	}
	addr := ap.Addr().Unmap()
	for _, p := range trusted {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// limitBody caps request bodies at MaxBodyBytes.
func limitBody(c *gin.Context) {
	if c.Request.Body != nil {
		c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, MaxBodyBytes)
	}
	c.Next()
}

// Serve runs an HTTP server with timeouts on addr until ctx ends, then
// shuts it down gracefully, letting in-flight requests finish.
func Serve(ctx context.Context, addr string, h http.Handler, log *slog.Logger) error {
	srv := &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Info("listening", "addr", addr)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
