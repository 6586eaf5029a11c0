// Package middleware holds what every finsync API version runs before its
// handlers: request ids, panic recovery, request logs and metrics,
// authentication with a cached credential lookup, plan and storage-mode
// gates, and per-user rate limits. The error bodies differ between API
// versions, so each version supplies its own Responder.
package middleware

import (
	"log/slog"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/finsync/finsync/api/apierr"
	"github.com/finsync/finsync/storage"
)

// Responder writes the error bodies of one API version for failures raised
// before a handler runs.
type Responder interface {
	// Unauthorized answers 401; reason says why (see the Reason constants).
	Unauthorized(c *gin.Context, reason Reason)
	// Forbidden answers 403 for a plan or storage-mode gate.
	Forbidden(c *gin.Context, gate Gate)
	// RateLimited answers 429 for the named limit, retry after the given wait.
	RateLimited(c *gin.Context, limit LimitInfo, retryAfter time.Duration)
	// Internal answers 500.
	Internal(c *gin.Context)
}

// Reason is why a request failed authentication.
type Reason int

// Reasons for a 401.
const (
	ReasonMissing Reason = iota
	ReasonInvalid
	ReasonDisabled
	ReasonExpired
)

// Gate is a 403 check.
type Gate int

// The 403 gates.
const (
	GateSubscription Gate = iota
	GateStorageMode
)

// LimitInfo describes a rate limit, for messages and headers.
type LimitInfo struct {
	// Name identifies the limiter ("general", "create-rule", ...).
	Name string
	// Count requests per Period.
	Count  int
	Period time.Duration
	// Plan is the user's plan, for the message.
	Plan string
}

// ServerError answers a request whose work failed with err, and logs it:
// 503 SERVICE_UNAVAILABLE with Retry-After (apierr.Unavailable, the same
// envelope in both versions) when err means the database is unreachable or
// restarting (storage.Unavailable), else the version's 500 through r. It
// is the one place where an error of a handler or middleware becomes a 500
// or 503 (a panic becomes a 500 in Recover).
func ServerError(c *gin.Context, r Responder, log *slog.Logger, err error) {
	if storage.Unavailable(err) {
		log.WarnContext(c.Request.Context(), "database unavailable", "route", c.FullPath(), "error", err)
		apierr.Unavailable(c)
		return
	}
	log.ErrorContext(c.Request.Context(), "request failed", "route", c.FullPath(), "error", err)
	r.Internal(c)
	c.Abort()
}
