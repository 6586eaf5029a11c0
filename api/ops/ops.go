// Package ops is the operators' console of `finsync serve`: a server-
// rendered page at /ops listing every connection with its health and the
// actions sync now, disable and enable (filtered by provider and status,
// 500 a page), a page per connection with its sync history, a chart of it
// and a re-auth form, and River's own UI at /ops/jobs.
// Every route needs the operator token (FINSYNC_OPS_TOKEN), as a bearer
// token or through a sign-in that sets a session cookie; without a token
// configured the routes do not exist. Failed token checks are throttled per
// client address and globally, sessions live in PostgreSQL (sign-out and a
// new token end them), and every response forbids framing (docs/ops.md).
package ops

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"github.com/riverqueue/river/rivertype"
	"riverqueue.com/riverui"

	"github.com/finsync/finsync/api/middleware"
	"github.com/finsync/finsync/jobargs"
	"github.com/finsync/finsync/storage"
)

// Prefix is where the console is mounted; JobsPrefix is River's UI.
const (
	Prefix     = "/ops"
	JobsPrefix = "/ops/jobs"
)

// maxConnections caps the connections one page of the list shows; a
// "next" link pages on.
const maxConnections = 500

//go:embed templates/*.html
var templateFS embed.FS

// Config wires the console.
type Config struct {
	// Token is the operator credential; it must pass ValidateToken.
	Token string
	Store *storage.Store
	// Jobs is a River client (insert-only is enough) over the store's
	// database: sync now enqueues with it, and River's UI reads through it.
	Jobs *storage.JobClient
	Log  *slog.Logger
	// Now is the clock of sessions; nil means time.Now.
	Now func() time.Time
	// Throttle bounds failed token checks; zero means DefaultThrottle.
	Throttle Throttle
	// PurgeEvery is how often expired sessions and idle failure budgets
	// are deleted; zero means 10 minutes.
	PurgeEvery time.Duration
	// Providers names the providers the list's provider filter offers and
	// accepts (cmd/finsync gives the registry's). Caveat: empty, the filter
	// accepts any well-formed name (lower-case letters, digits, _ and -).
	Providers []string
	// Reauth puts new credentials on a connection, for the re-auth form
	// of its page; nil shows no form (and the form's route answers 503).
	Reauth ReauthFunc
}

// Console serves the ops routes. Build it with New; it is safe for
// concurrent use.
type Console struct {
	cfg   Config
	auth  *authenticator
	guard *guard
	jobs  http.Handler
	pages *template.Template
}

// New builds the console and starts its background work, which ends with
// ctx: River's UI's, and the purge of expired sessions and idle failure
// budgets.
func New(ctx context.Context, cfg Config) (*Console, error) {
	if err := ValidateToken(cfg.Token); err != nil {
		return nil, fmt.Errorf("FINSYNC_OPS_TOKEN %w", err)
	}
	if cfg.Store == nil || cfg.Jobs == nil || cfg.Log == nil {
		return nil, errors.New("ops console: Store, Jobs and Log are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Throttle == (Throttle{}) {
		cfg.Throttle = DefaultThrottle()
	}
	if cfg.PurgeEvery <= 0 {
		cfg.PurgeEvery = 10 * time.Minute
	}
	ui, err := riverui.NewHandler(&riverui.HandlerOpts{
		Endpoints: riverui.NewEndpoints(cfg.Jobs, nil),
		Logger:    cfg.Log,
		Prefix:    JobsPrefix,
	})
	if err != nil {
		return nil, fmt.Errorf("river UI: %w", err)
	}
	if err := ui.Start(ctx); err != nil {
		return nil, fmt.Errorf("start river UI: %w", err)
	}
	pages, err := template.New("ops").Funcs(template.FuncMap{"when": when, "duration": duration, "rows": rowsOf}).ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("ops templates: %w", err)
	}
	c := &Console{cfg: cfg, auth: newAuthenticator(cfg.Token, cfg.Store, cfg.Now), guard: newGuard(cfg.Store, cfg.Throttle),
		jobs: ui, pages: pages}
	go c.purge(ctx)
	return c, nil
}

// purge deletes expired sessions and failure budgets idle long enough to
// be full again, every PurgeEvery until ctx ends. Every process purges;
// the deletes are idempotent.
func (c *Console) purge(ctx context.Context) {
	t := time.NewTicker(c.cfg.PurgeEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := c.cfg.Now()
		if _, err := c.cfg.Store.PurgeOpsSessions(ctx, now); err != nil && ctx.Err() == nil {
			c.cfg.Log.WarnContext(ctx, "purge ops sessions", "error", err)
		}
		if _, err := c.cfg.Store.PurgeOpsFailureBudgets(ctx, time.Now().Add(-c.guard.fullAfter())); err != nil && ctx.Err() == nil {
			c.cfg.Log.WarnContext(ctx, "purge ops failure budgets", "error", err)
		}
	}
}

// Register mounts every ops route on e, each behind the operator
// credential, and each turning a panic into a logged 500 (as /v1 and /v2
// do).
func (c *Console) Register(e *gin.Engine) {
	g := e.Group(Prefix, securityHeaders, middleware.Recover(c.cfg.Log, responder{}))
	g.POST("/sign-in", c.signIn)
	g.Use(c.require)
	g.GET("", c.page)
	g.POST("/sign-out", c.signOut)
	g.GET("/connections/:id", c.connectionPage)
	g.POST("/connections/:id/reauth", c.reauth)
	g.POST("/connections/:id/sync", c.syncNow)
	g.POST("/connections/:id/disable", c.setEnabled(false))
	g.POST("/connections/:id/enable", c.setEnabled(true))
	jobs := gin.WrapH(c.jobs)
	g.Any("/jobs", jobs)
	g.Any("/jobs/*path", jobs)
}

// Routes lists the ops routes (method and path, with ":id" or "*path" for
// parameters), for tests that must cover every one.
func Routes() []string {
	return []string{
		"GET /ops", "POST /ops/sign-in", "POST /ops/sign-out",
		"GET /ops/connections/:id", "POST /ops/connections/:id/reauth", "POST /ops/connections/:id/sync", "POST /ops/connections/:id/disable", "POST /ops/connections/:id/enable",
		"ANY /ops/jobs", "ANY /ops/jobs/*path",
	}
}

// Unrouted answers a request under /ops that no route serves (status is
// 404 for an unknown path, 405 for a method the path does not allow): 401
// without the credential (429 past a failure budget), like every ops
// route, else status; with the security headers of every ops answer.
func (c *Console) Unrouted(ctx *gin.Context, status int) {
	securityHeaders(ctx)
	if _, _, ok := c.authenticate(ctx); !ok {
		return
	}
	ctx.String(status, "%s", http.StatusText(status))
}

// Owns reports whether a request path is under /ops.
func Owns(path string) bool { return path == Prefix || strings.HasPrefix(path, Prefix+"/") }

// authKey keys how the request was authenticated in the gin context.
const (
	authKey    = "ops.how"
	sessionKey = "ops.session"
)

// require answers 401 unless the request carries the operator credential;
// GET /ops then shows the sign-in form. A request that may change
// something and is authenticated by the session cookie must come from the
// same origin (sameOrigin), else it gets 403.
func (c *Console) require(ctx *gin.Context) {
	h, session, ok := c.authenticate(ctx)
	if !ok {
		return
	}
	if h == bySession && !safeMethod(ctx.Request.Method) && !sameOrigin(ctx.Request) {
		ctx.Header("Cache-Control", "no-store")
		ctx.AbortWithStatusJSON(http.StatusForbidden, gin.H{"error": "cross-origin request refused: send it from the ops console's own pages, or with Authorization: Bearer"})
		return
	}
	ctx.Set(authKey, h)
	ctx.Set(sessionKey, session)
	ctx.Next()
}

// authenticate says how the request is authenticated — a bearer token
// first (checked under the failure budgets of the client address, as
// gin's ClientIP reads it with the trusted proxies), else the session
// cookie — and answers 401, 429 or 503 itself when it is not (ok false).
func (c *Console) authenticate(ctx *gin.Context) (h how, session string, ok bool) {
	rctx := ctx.Request.Context()
	if tok, present := bearerToken(ctx.Request); present {
		v, wait, err := c.guard.check(rctx, ctx.ClientIP(), func() bool { return c.auth.tokenMatches(tok) })
		switch {
		case err != nil:
			c.unavailable(ctx, err)
		case v == limited:
			c.tooMany(ctx, wait)
		case v == refused:
			c.unauthorized(ctx, "")
		default:
			return byBearer, "", true
		}
		return unauthenticated, "", false
	}
	if ck, err := ctx.Request.Cookie(sessionCookie); err == nil {
		valid, err := c.auth.validSession(rctx, ck.Value)
		if err != nil {
			c.unavailable(ctx, err)
			return unauthenticated, "", false
		}
		if valid {
			return bySession, ck.Value, true
		}
	}
	c.unauthorized(ctx, "")
	return unauthenticated, "", false
}

// unavailable answers 503 when the credential cannot be checked (the
// database unreachable): the console refuses rather than guess.
func (c *Console) unavailable(ctx *gin.Context, err error) {
	c.cfg.Log.ErrorContext(ctx.Request.Context(), "ops authentication", "error", err)
	ctx.Header("Cache-Control", "no-store")
	ctx.Header("Retry-After", "5")
	ctx.AbortWithStatusJSON(http.StatusServiceUnavailable, gin.H{"error": "the operator credential cannot be checked right now; try again shortly"})
}

// tooMany answers 429 with Retry-After (whole seconds, rounded up): too
// many failed token checks from this address, or from all of them.
func (c *Console) tooMany(ctx *gin.Context, wait time.Duration) {
	secs := max(int((wait+time.Second-1)/time.Second), 1)
	ctx.Header("Retry-After", strconv.Itoa(secs))
	ctx.Header("Cache-Control", "no-store")
	msg := fmt.Sprintf("Too many failed attempts with the operator token; try again in %d s.", secs)
	if ctx.Request.URL.Path == Prefix+"/sign-in" || ctx.Request.Method == http.MethodGet && ctx.Request.URL.Path == Prefix {
		c.render(ctx, http.StatusTooManyRequests, "signin.html", map[string]any{"Error": msg})
		ctx.Abort()
		return
	}
	ctx.AbortWithStatusJSON(http.StatusTooManyRequests, gin.H{"error": msg})
}

// safeMethod reports a method that changes nothing (GET, HEAD, OPTIONS).
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// sameOrigin reports whether a browser sent r from a page of this origin:
// Sec-Fetch-Site: same-origin when the browser sends that header, else an
// Origin whose host is the request's Host. It guards the routes a session
// cookie reaches, River's UI above all (its JSON API has no CSRF token of
// its own and parses JSON whatever the Content-Type). Caveat: a request
// with neither header is refused, so a cookie-authenticated client that
// is no browser must send Origin (or use the bearer token).
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" {
		return site == "same-origin"
	}
	origin := r.Header.Get("Origin")
	if origin == "" || origin == "null" {
		return false
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

// unauthorized answers 401 with the sign-in form (HTML) to a browser
// asking for a page, and a short text otherwise.
func (c *Console) unauthorized(ctx *gin.Context, message string) {
	ctx.Header("WWW-Authenticate", `Bearer realm="finsync ops"`)
	ctx.Header("Cache-Control", "no-store")
	page := ctx.Request.Method == http.MethodGet && (ctx.Request.URL.Path == Prefix || strings.HasPrefix(ctx.Request.URL.Path, Prefix+"/connections/"))
	if page || ctx.Request.URL.Path == Prefix+"/sign-in" {
		c.render(ctx, http.StatusUnauthorized, "signin.html", map[string]any{"Error": message})
		ctx.Abort()
		return
	}
	ctx.AbortWithStatusJSON(http.StatusUnauthorized, gin.H{"error": "the operator token is required (Authorization: Bearer, or sign in at /ops)"})
}

// signIn checks the posted token under the failure budgets and starts a
// session.
func (c *Console) signIn(ctx *gin.Context) {
	given := ctx.PostForm(tokenField)
	v, wait, err := c.guard.check(ctx.Request.Context(), ctx.ClientIP(), func() bool { return c.auth.tokenMatches(given) })
	switch {
	case err != nil:
		c.unavailable(ctx, err)
		return
	case v == limited:
		c.tooMany(ctx, wait)
		return
	case v == refused:
		c.unauthorized(ctx, "That is not the operator token.")
		return
	}
	session, err := c.auth.newSession(ctx.Request.Context())
	if err != nil {
		c.unavailable(ctx, err)
		return
	}
	setSession(ctx.Writer, session, int(sessionTTL.Seconds()))
	ctx.Redirect(http.StatusSeeOther, Prefix)
}

// signOut ends the session for good (on every process) and clears the
// cookie.
func (c *Console) signOut(ctx *gin.Context) {
	if !c.csrfOK(ctx) {
		return
	}
	if session := ctx.GetString(sessionKey); session != "" {
		if err := c.auth.endSession(ctx.Request.Context(), session); err != nil {
			c.fail(ctx, err)
			return
		}
	}
	setSession(ctx.Writer, "", -1)
	ctx.Redirect(http.StatusSeeOther, Prefix)
}

// csrfOK answers 403 and reports false when a form posted with a session
// lacks its CSRF token.
func (c *Console) csrfOK(ctx *gin.Context) bool {
	h, _ := ctx.Get(authKey)
	session := ctx.GetString(sessionKey)
	hw, _ := h.(how)
	if c.auth.csrfOK(ctx.Request, hw, session) {
		return true
	}
	ctx.String(http.StatusForbidden, "The form is stale or was not sent from the ops page: reload /ops and try again.")
	ctx.Abort()
	return false
}

// connectionID parses the :id parameter, answering 400 when it is no
// connection id and 404 when it names no connection.
func (c *Console) connectionID(ctx *gin.Context) (uuid.UUID, bool) {
	id, ok := c.parseID(ctx)
	if !ok {
		return uuid.Nil, false
	}
	_, err := c.cfg.Store.GetConnectionAnyUser(ctx.Request.Context(), id)
	if errors.Is(err, storage.ErrNotFound) {
		ctx.String(http.StatusNotFound, "No such connection.")
		return uuid.Nil, false
	}
	if err != nil {
		c.fail(ctx, err)
		return uuid.Nil, false
	}
	return id, true
}

func (c *Console) fail(ctx *gin.Context, err error) {
	c.cfg.Log.ErrorContext(ctx.Request.Context(), "ops action", "path", ctx.Request.URL.Path, "error", err)
	ctx.String(http.StatusServiceUnavailable, "The action failed: %v", err)
}

// syncNow enqueues a sync of the connection; one already waiting to retry
// runs at once instead.
func (c *Console) syncNow(ctx *gin.Context) {
	if !c.csrfOK(ctx) {
		return
	}
	id, ok := c.connectionID(ctx)
	if !ok {
		return
	}
	rctx := ctx.Request.Context()
	res, err := c.cfg.Jobs.Insert(rctx, jobargs.SyncConnection{ConnectionID: id}, nil)
	if err == nil && res.UniqueSkippedAsDuplicate &&
		(res.Job.State == rivertype.JobStateRetryable || res.Job.State == rivertype.JobStateScheduled) {
		_, err = c.cfg.Jobs.JobRetry(rctx, res.Job.ID)
	}
	if err != nil {
		c.fail(ctx, fmt.Errorf("enqueue sync of %s: %w", id, err))
		return
	}
	ctx.Redirect(http.StatusSeeOther, Prefix+"?done=sync&job="+strconv.FormatInt(res.Job.ID, 10))
}

// setEnabled disables or enables the connection.
func (c *Console) setEnabled(enabled bool) gin.HandlerFunc {
	return func(ctx *gin.Context) {
		if !c.csrfOK(ctx) {
			return
		}
		id, ok := c.connectionID(ctx)
		if !ok {
			return
		}
		if _, err := c.cfg.Store.SetConnectionEnabled(ctx.Request.Context(), id, enabled); err != nil {
			c.fail(ctx, err)
			return
		}
		done := "disable"
		if enabled {
			done = "enable"
		}
		ctx.Redirect(http.StatusSeeOther, Prefix+"?done="+done)
	}
}

// render writes a template as an HTML page that no one may cache (nor
// frame: securityHeaders).
func (c *Console) render(ctx *gin.Context, status int, name string, data any) {
	h := ctx.Writer.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	ctx.Status(status)
	if err := c.pages.ExecuteTemplate(ctx.Writer, name, data); err != nil {
		c.cfg.Log.ErrorContext(ctx.Request.Context(), "render ops page", "template", name, "error", err)
	}
}

// when formats a time or *time.Time for the page (UTC, to the second);
// "—" when unset (or not a time).
func when(v any) string {
	var t time.Time
	switch x := v.(type) {
	case time.Time:
		t = x
	case *time.Time:
		if x != nil {
			t = *x
		}
	}
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// responder writes the ops console's short text answers for the shared
// middleware (only Recover's 500 is used today).
type responder struct{}

var _ middleware.Responder = responder{}

// Unauthorized implements middleware.Responder.
func (responder) Unauthorized(c *gin.Context, _ middleware.Reason) {
	c.String(http.StatusUnauthorized, "%s", http.StatusText(http.StatusUnauthorized))
}

// Forbidden implements middleware.Responder.
func (responder) Forbidden(c *gin.Context, _ middleware.Gate) {
	c.String(http.StatusForbidden, "%s", http.StatusText(http.StatusForbidden))
}

// RateLimited implements middleware.Responder.
func (responder) RateLimited(c *gin.Context, _ middleware.LimitInfo, retryAfter time.Duration) {
	c.Header("Retry-After", strconv.Itoa(int(retryAfter.Seconds()+0.999)))
	c.String(http.StatusTooManyRequests, "%s", http.StatusText(http.StatusTooManyRequests))
}

// Internal implements middleware.Responder.
func (responder) Internal(c *gin.Context) {
	c.Header("Cache-Control", "no-store")
	c.String(http.StatusInternalServerError, "The ops console failed on this request; the log has the details.")
}
