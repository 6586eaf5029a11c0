// Package v2 serves version 2 of the finsync API: reads of stored accounts,
// transactions, balances, connections, categories and investments, and the
// few writes version 2 allows.
package v2

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/finsync/finsync/api/apierr"
	"github.com/finsync/finsync/api/idempotency"
	"github.com/finsync/finsync/api/middleware"
	"github.com/finsync/finsync/api/params"
)

// Error codes of version 2.
const (
	CodeBadRequest          = "BAD_REQUEST"
	CodeStorageModeRequired = "STORAGE_MODE_REQUIRED"
	CodeSubscriptionNeeded  = "SUBSCRIPTION_REQUIRED"
	CodeNotFound            = "NOT_FOUND"
	CodeMethodNotAllowed    = "METHOD_NOT_ALLOWED"
	CodeRateLimited         = "RATE_LIMITED"
	CodeProviderUnavailable = "PROVIDER_UNAVAILABLE"
	CodeInternal            = "INTERNAL_ERROR"
	// CodeServiceUnavailable (503, with Retry-After) is finsync's addition
	// to version 2's codes (docs/api-v2.md): the database is down or
	// restarting.
	CodeServiceUnavailable = apierr.CodeServiceUnavailable
)

// Codes of Idempotency-Key (package idempotency), our additions to version
// 2's codes: the key used with another request (422), or a request with
// the key still in flight (409).
const (
	CodeIdempotencyKeyReused = idempotency.CodeKeyReused
	CodeConflict             = idempotency.CodeConflict
)

// CodePayloadTooLarge is our addition to version 2's codes: a request body
// over the 1 MiB limit (413).
const CodePayloadTooLarge = "PAYLOAD_TOO_LARGE"

// UnauthorizedMessage is the whole 401 body's error string.
const UnauthorizedMessage = "Missing or invalid Authorization header"

// Fail writes the version 2 error envelope and aborts the request.
func Fail(c *gin.Context, status int, code, message string) {
	apierr.Fail(c, status, code, message)
}

// badRequest is an invalid parameter or body, with the message the client sees.
type badRequest = params.Error

func badf(format string, args ...any) error { return params.Errorf(format, args...) }

// errNotFound answers 404 NOT_FOUND.
var errNotFound = errors.New("not found")

// errProviderUnavailable answers 502 PROVIDER_UNAVAILABLE.
var errProviderUnavailable = errors.New("provider unavailable")

// Responder writes version 2's bodies for failures raised before a handler.
type Responder struct{}

// Unauthorized answers 401 with version 2's plain-string body
// (docs/api-v2.md, "Authentication and access").
func (Responder) Unauthorized(c *gin.Context, _ middleware.Reason) {
	c.AbortWithStatusJSON(http.StatusUnauthorized, gin.H{"error": UnauthorizedMessage})
}

// Forbidden answers 403 SUBSCRIPTION_REQUIRED or STORAGE_MODE_REQUIRED.
func (Responder) Forbidden(c *gin.Context, gate middleware.Gate) {
	if gate == middleware.GateStorageMode {
		Fail(c, http.StatusForbidden, CodeStorageModeRequired, "Storage Mode must be enabled to use the API; creating an API key enables it")
		return
	}
	Fail(c, http.StatusForbidden, CodeSubscriptionNeeded, "API access requires an active Standard or Pro subscription")
}

// RateLimited answers 429 with the exceeded limit named and retryAfter in
// seconds. Limits spent before the rate limiter runs (failed
// authentications per address) get their X-RateLimit headers here.
func (Responder) RateLimited(c *gin.Context, limit middleware.LimitInfo, retryAfter time.Duration) {
	secs := middleware.RetryAfterSeconds(retryAfter)
	h := c.Writer.Header()
	if h.Get("X-RateLimit-Limit") == "" {
		h.Set("X-RateLimit-Limit", strconv.Itoa(limit.Count))
		h.Set("X-RateLimit-Remaining", "0")
		h.Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Duration(secs)*time.Second).Unix(), 10))
	}
	c.Header("Retry-After", strconv.Itoa(secs))
	c.AbortWithStatusJSON(http.StatusTooManyRequests, gin.H{
		"error":      apierr.Detail{Code: CodeRateLimited, Message: limitMessage(limit)},
		"retryAfter": secs,
	})
}

// Internal answers 500 with no internals.
func (Responder) Internal(c *gin.Context) {
	Fail(c, http.StatusInternalServerError, CodeInternal, "Internal server error")
}

func limitMessage(l middleware.LimitInfo) string {
	switch l.Name {
	case middleware.ConcurrentLimitName:
		return fmt.Sprintf("Too many expensive requests at once: %d at a time per API key (rule previews and large listings); retry when one has finished", l.Count)
	case middleware.ConcurrentProcessLimitName:
		return fmt.Sprintf("Too many expensive requests at once on this server: %d at a time, all API keys together (rule previews and large listings); retry shortly", l.Count)
	}
	per := "minute"
	if l.Period == time.Hour {
		per = "hour"
	}
	msg := fmt.Sprintf("Rate limit exceeded: %d requests per %s", l.Count, per)
	switch {
	case l.Name == "auth-failures":
		return fmt.Sprintf("Too many failed authentication attempts: %d per %s from this address", l.Count, per)
	case l.Name != "general":
		msg += " on " + strings.ReplaceAll(l.Name, "-", " ")
	}
	if l.Plan != "" {
		msg += " on the " + l.Plan + " plan"
	}
	return msg
}

// writeJSON answers status with a JSON body whose length is declared, so
// that a listing's page goes out in one write rather than in chunks.
func writeJSON(c *gin.Context, status int, body []byte) {
	c.Header("Content-Length", strconv.Itoa(len(body)))
	c.Data(status, "application/json; charset=utf-8", body)
}
