// Package v1 serves version 1 of the finsync API: a read-only view of the
// same stored data as version 2 (accounts, bank connections, transactions
// with their categories, holdings and investment transactions with their
// securities) in version 1's shapes, envelopes, errors and limits.
//
// Choices version 1's first description left open, as docs/api-v1.md
// states them: transactions hidden by a rule are not listed (as in version
// 2 by default); deleted transactions never are; /accounts lists the
// active accounts, manual ones included (provider "Manual",
// bankConnectionId null); /bank-connections lists the connections that are
// not disabled; unknown ids in accountIds match nothing.
package v1

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/finsync/finsync/api/apierr"
	"github.com/finsync/finsync/api/middleware"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
)

// PlanLimits are the general request budgets per minute by plan.
type PlanLimits map[string]int

// DefaultPlanLimits returns the general budgets: pro 1,000 per minute,
// trial the standard figure of 200.
func DefaultPlanLimits() PlanLimits {
	return PlanLimits{domain.PlanPro: 1000, domain.PlanTrial: 200}
}

// DataRequestsPerHour is the budget of each of /transactions, /holdings and
// /investment-transactions, per user and endpoint.
const DataRequestsPerHour = 50

// HealthTimeout bounds the health check's database queries.
const HealthTimeout = 2 * time.Second

// Config wires the version 1 handlers.
type Config struct {
	Store  *storage.Store
	Auth   *middleware.Authenticator
	Limits middleware.RateLimiter
	Log    *slog.Logger
	// Plans overrides the general per-minute budgets by plan.
	Plans PlanLimits
	// OpenAPI is the document served at /v1/openapi.json.
	OpenAPI []byte
	// Providers are what the adapters declare (their v1 names, how v1
	// pages their transactions); a provider missing here is shown with its
	// name capitalised and paged by offset.
	Providers []domain.ProviderProfile
	// PublicURL is the absolute http(s) URL clients reach this API at
	// (FINSYNC_PUBLIC_URL): the base of the nextPage links. nil uses
	// DefaultPublicURL.
	PublicURL *url.URL
	// Expensive caps each credential's concurrent expensive requests
	// (middleware.Concurrency's Handler); nil caps none.
	Expensive gin.HandlerFunc
}

// Server holds the version 1 handlers.
type Server struct {
	cfg      Config
	names    ProviderNames
	profiles map[string]domain.ProviderProfile
}

// hourlyLimit names the budget of an endpoint with its own hourly limit.
func hourlyLimit(route string) (string, bool) {
	switch route {
	case "/v1/transactions":
		return "v1-transactions", true
	case "/v1/holdings":
		return "v1-holdings", true
	case "/v1/investment-transactions":
		return "v1-investment-transactions", true
	}
	return "", false
}

// Register mounts version 1 under /v1 on the engine. It panics when the
// routes and QueryParams disagree (a route without a declaration, or a
// declaration without a route): a mistake in this package, caught by any
// test that assembles the API.
func Register(e *gin.Engine, cfg Config) *Server {
	if cfg.Plans == nil {
		cfg.Plans = DefaultPlanLimits()
	}
	s := &Server{cfg: cfg, names: NewProviderNames(cfg.Providers), profiles: map[string]domain.ProviderProfile{}}
	for _, p := range cfg.Providers {
		s.profiles[p.Name] = p
	}
	var resp Responder
	strict := middleware.StrictQuery(prefix, QueryParams())
	g := e.Group(prefix, middleware.Recover(cfg.Log, endpointResponder{resp}))
	g.GET("/health", s.health)
	g.GET("/openapi.json", strict, func(c *gin.Context) { c.Data(http.StatusOK, "application/json", cfg.OpenAPI) })

	// A query parameter the operation does not accept is refused once the
	// caller is known and has budget left, before any expensive work.
	authed := g.Group("",
		cfg.Auth.Authenticate(resp),
		middleware.RequirePlan(resp, domain.PlanPro, domain.PlanTrial),
		middleware.RateLimit(cfg.Limits, resp, s.limit),
		strict,
	)
	if cfg.Expensive != nil {
		authed.Use(cfg.Expensive)
	}
	if cfg.Store.Replica() != nil {
		authed.Use(middleware.ReadRouting(cfg.Store, cfg.Log))
	}
	authed.GET("/accounts", s.listAccounts)
	authed.GET("/bank-connections", s.listConnections)
	authed.GET("/transactions", s.listTransactions)
	authed.GET("/holdings", s.listHoldings)
	authed.GET("/investment-transactions", s.listInvestmentTransactions)
	if err := middleware.CheckAccepted(e.Routes(), prefix, QueryParams(), "/health"); err != nil {
		panic("v1: " + err.Error())
	}
	return s
}

// prefix is the path prefix of version 1.
const prefix = "/v1"

// limit is the rate-limit policy: an hourly budget per data endpoint, the
// plan's general per-minute budget elsewhere.
func (s *Server) limit(c *gin.Context) (middleware.LimitInfo, bool) {
	p := middleware.GetPrincipal(c)
	if name, ok := hourlyLimit(c.FullPath()); ok {
		return middleware.LimitInfo{Name: name, Count: DataRequestsPerHour, Period: time.Hour}, true
	}
	n, ok := s.cfg.Plans[p.Plan]
	if !ok {
		return middleware.LimitInfo{}, false
	}
	return middleware.LimitInfo{Name: "general", Count: n, Period: time.Minute, Plan: p.Plan}, true
}

// handle turns a handler's error into the endpoint envelope.
func (s *Server) handle(c *gin.Context, err error) {
	var br *badRequest
	switch {
	case errors.As(err, &br):
		Fail(c, http.StatusBadRequest, CodeBadRequest, br.Msg)
	case errors.Is(err, errConnectionNotFound):
		Fail(c, http.StatusNotFound, CodeNotFound, MsgConnectionNotFound)
	case errors.Is(err, errProviderUnavailable):
		Fail(c, http.StatusBadGateway, CodeProviderServiceUnavailable, "The provider is unavailable and this data has not been synced yet")
	case errors.Is(err, context.Canceled):
		c.Abort()
	default:
		middleware.ServerError(c, endpointResponder{}, s.cfg.Log, err)
	}
}

// health answers ok, degraded when no worker is running (River has no
// unexpired leader), or 503 when the database is unreachable.
func (s *Server) health(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), HealthTimeout)
	defer cancel()
	if err := s.cfg.Store.Ping(ctx); err != nil {
		s.cfg.Log.WarnContext(c.Request.Context(), "health: database unreachable", "error", err)
		apierr.Unavailable(c)
		return
	}
	status := "ok"
	if up, err := s.cfg.Store.IsWorkerActive(ctx); err != nil || !up {
		status = "degraded"
	}
	c.JSON(http.StatusOK, gin.H{"data": gin.H{"status": status, "timestamp": time.Now().UTC().Format(time.RFC3339)}})
}

func scope(c *gin.Context) storage.Scope {
	return middleware.GetPrincipal(c).Scope()
}
