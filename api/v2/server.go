package v2

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/finsync/finsync/api/apierr"
	"github.com/finsync/finsync/api/cursor"
	"github.com/finsync/finsync/api/idempotency"
	"github.com/finsync/finsync/api/middleware"
	"github.com/finsync/finsync/api/pagecache"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/internal/netguard"
	"github.com/finsync/finsync/rules"
	"github.com/finsync/finsync/storage"
)

// PlanLimits are the general request budgets per minute by plan.
type PlanLimits map[string]int

// DefaultPlanLimits returns version 2's figures (docs/api-v2.md, "Limits"):
// standard 200 per minute, pro 1,000.
func DefaultPlanLimits() PlanLimits {
	return PlanLimits{domain.PlanStandard: 200, domain.PlanPro: 1000}
}

// CreateRulePerMinute is the standard plan's create-rule budget.
const CreateRulePerMinute = 10

// Config wires the version 2 handlers.
type Config struct {
	Store   *storage.Store
	Cursors *cursor.Codec
	Auth    *middleware.Authenticator
	Limits  middleware.RateLimiter
	Log     *slog.Logger
	Plans   PlanLimits
	// OpenAPI is the document served at /v2/openapi.json.
	OpenAPI []byte
	// Jobs enqueues, in the transaction of each change, the job that applies
	// rules to stored transactions after a rule change and the drains that
	// deliver manual-account changes to destinations. With nil, changes are
	// stored (and destination events written to the outbox, swept later by
	// the worker's scheduler) but no job is enqueued at once.
	Jobs JobInserter
	// Idempotency applies Idempotency-Key to every POST and PATCH; nil
	// ignores the header.
	Idempotency *idempotency.Guard
	// Box seals the secrets of consumer webhooks (a *secrets.Box); nil
	// refuses to create them (500).
	Box Sealer
	// WebhookPolicy decides which webhook URLs are accepted (a literal
	// private address or plain http is refused unless it allows them).
	WebhookPolicy netguard.Policy
	// Expensive caps each credential's concurrent expensive requests
	// (middleware.Concurrency's Handler); nil caps none.
	Expensive gin.HandlerFunc
	// Pages keeps pages of GET /v2/transactions, served again while the
	// user's listing version stays the same (docs/read-cache.md); nil
	// keeps none.
	Pages *pagecache.Cache
}

// Sealer encrypts a secret for storage at rest and opens it again
// (secrets.Box does).
type Sealer interface {
	Seal(plaintext []byte) ([]byte, error)
	Open(sealed []byte) ([]byte, error)
}

// Server holds the version 2 handlers.
type Server struct {
	cfg Config
	// ruleCache holds the stored rules previews compile, each version
	// once; it lives as long as the server.
	ruleCache *rules.Cache
}

// Register mounts version 2 under /v2 on the engine. It panics when the
// routes and QueryParams disagree (a route without a declaration, or a
// declaration without a route): a mistake in this package, caught by any
// test that assembles the API.
func Register(e *gin.Engine, cfg Config) *Server {
	if cfg.Plans == nil {
		cfg.Plans = DefaultPlanLimits()
	}
	s := &Server{cfg: cfg, ruleCache: rules.NewCache(rules.DefaultCacheSize)}
	var resp Responder
	strict := middleware.StrictQuery(prefix, QueryParams())
	g := e.Group(prefix, middleware.Recover(cfg.Log, resp), emptySegmentNotFound)
	g.GET("/health", s.health)
	g.GET("/openapi.json", strict, func(c *gin.Context) { c.Data(http.StatusOK, "application/json", cfg.OpenAPI) })

	// A query parameter the operation does not accept is refused once the
	// caller is known and has budget left, before any expensive work.
	authed := g.Group("",
		cfg.Auth.Authenticate(resp),
		middleware.RequirePlan(resp, domain.PlanStandard, domain.PlanPro),
		middleware.RequireStorageMode(resp),
		middleware.RateLimit(cfg.Limits, resp, s.generalLimit),
		strict,
	)
	if cfg.Store.Replica() != nil {
		// A preview writes nothing: it reads like a GET, on the replica
		// when the user's writes have reached it.
		authed.Use(middleware.ReadRouting(cfg.Store, cfg.Log, "/v2/rules/preview"))
	}
	// A page kept in memory is served where the request's reads go,
	// before the cap on expensive requests: it is not one.
	authed.Use(s.servePageFromCache)
	if cfg.Expensive != nil {
		authed.Use(cfg.Expensive)
	}
	// idem runs last before the handler: after authentication (keys are
	// per credential) and rate limits (a replay spends budget like any
	// request).
	idem := func(c *gin.Context) { c.Next() }
	if cfg.Idempotency != nil {
		idem = cfg.Idempotency.Handler(resp)
	}
	authed.GET("/me", s.me)
	authed.GET("/accounts", s.listAccounts)
	authed.GET("/accounts/balance-history", s.balanceHistory)
	authed.GET("/accounts/:accountId", s.getAccount)
	authed.GET("/transactions", s.listTransactions)
	authed.GET("/bank-connections", s.listConnections)
	authed.GET("/categories", s.listCategories)
	authed.GET("/category-groups", s.listCategoryGroups)
	authed.GET("/holdings", s.listHoldings)
	authed.GET("/investment-transactions", s.listInvestmentTransactions)
	authed.POST("/accounts", idem, s.createAccount)
	authed.PATCH("/accounts/:accountId", idem, s.updateAccount)
	authed.DELETE("/accounts/:accountId", s.closeAccount)
	authed.POST("/accounts/:accountId/not-duplicate", idem, s.notDuplicate)
	authed.POST("/categories", idem, s.createCategory)
	authed.PATCH("/categories/:id", idem, s.updateCategory)
	authed.PATCH("/transactions/:id", idem, s.updateTransaction)
	authed.GET("/transfers", s.listTransfers)
	authed.POST("/transfers", idem, s.createTransfer)
	authed.DELETE("/transfers/:id", s.deleteTransfer)
	authed.GET("/rules", s.listRules)
	authed.POST("/rules", middleware.RateLimit(cfg.Limits, resp, s.createRuleLimit), idem, s.createRule)
	authed.POST("/rules/preview", idem, s.previewRule)
	authed.PATCH("/rules/:ruleId", idem, s.updateRule)
	authed.DELETE("/rules/:ruleId", s.archiveRule)
	s.registerWebhooks(authed, resp)
	if err := middleware.CheckAccepted(e.Routes(), prefix, QueryParams(), "/health"); err != nil {
		panic("v2: " + err.Error())
	}
	return s
}

// prefix is the path prefix of version 2.
const prefix = "/v2"

func (s *Server) generalLimit(c *gin.Context) (middleware.LimitInfo, bool) {
	p := middleware.GetPrincipal(c)
	n, ok := s.cfg.Plans[p.Plan]
	if !ok {
		return middleware.LimitInfo{}, false
	}
	return middleware.LimitInfo{Name: "general", Count: n, Period: time.Minute, Plan: p.Plan}, true
}

// handle turns a handler's error into the right envelope.
func (s *Server) handle(c *gin.Context, err error) {
	var br *badRequest
	switch {
	case errors.As(err, &br):
		Fail(c, http.StatusBadRequest, CodeBadRequest, br.Msg)
	case errors.Is(err, errTooLarge):
		Fail(c, http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "body: larger than 1 MiB")
	case errors.Is(err, errNotFound), errors.Is(err, storage.ErrNotFound):
		Fail(c, http.StatusNotFound, CodeNotFound, "Resource not found")
	case errors.Is(err, errProviderUnavailable):
		Fail(c, http.StatusBadGateway, CodeProviderUnavailable, "The provider is unavailable and this data has not been synced yet")
	case errors.Is(err, context.Canceled):
		c.Abort()
	default:
		middleware.ServerError(c, Responder{}, s.cfg.Log, err)
	}
}

func (s *Server) health(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
	defer cancel()
	status, code := "ok", http.StatusOK
	if err := s.cfg.Store.Ping(ctx); err != nil {
		status, code = "degraded", http.StatusServiceUnavailable
		c.Header("Retry-After", strconv.Itoa(int(apierr.UnavailableRetryAfter/time.Second)))
	}
	c.JSON(code, gin.H{"status": status, "timestamp": time.Now().UTC().Format(time.RFC3339)})
}

func (s *Server) me(c *gin.Context) {
	p := middleware.GetPrincipal(c)
	c.JSON(http.StatusOK, gin.H{"userId": p.UserID, "email": p.Email, "storageMode": p.StorageMode})
}

func scope(c *gin.Context) storage.Scope {
	return middleware.GetPrincipal(c).Scope()
}
