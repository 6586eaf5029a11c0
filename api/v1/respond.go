package v1

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/finsync/finsync/api/apierr"
	"github.com/finsync/finsync/api/params"

	"github.com/gin-gonic/gin"

	"github.com/finsync/finsync/api/middleware"
)

// Endpoint error codes of version 1 ({error: {code, message}}).
const (
	CodeBadRequest                 = "BAD_REQUEST"
	CodeNotFound                   = "NOT_FOUND"
	CodeMethodNotAllowed           = "METHOD_NOT_ALLOWED"
	CodeInternal                   = "INTERNAL_ERROR"
	CodeServiceUnavailable         = apierr.CodeServiceUnavailable
	CodeProviderServiceUnavailable = "PROVIDER_SERVICE_UNAVAILABLE"
)

// Error strings of the failures raised before an endpoint runs
// ({error, requestId}), exactly as version 1's contract writes them
// (docs/api-v1.md, "Errors").
const (
	MsgMissingAuthorization = "Missing or invalid Authorization header"
	MsgInvalidKey           = "Invalid API key"
	MsgDisabledKey          = "API key has been disabled"
	MsgExpiredKey           = "API key has expired"
	MsgSubscriptionRequired = "API access requires active pro subscription or trial"
	MsgRateLimited          = "Rate limit exceeded"
	MsgInternal             = "Internal error"
)

// MsgConnectionNotFound is the 404 message of a bank connection that does
// not exist or is not the caller's.
const MsgConnectionNotFound = "Bank connection not found"

// Fail writes the version 1 endpoint error envelope and aborts the request.
func Fail(c *gin.Context, status int, code, message string) {
	apierr.Fail(c, status, code, message)
}

// badRequest is an invalid parameter, with the message the client sees.
type badRequest = params.Error

func badf(format string, args ...any) error { return params.Errorf(format, args...) }

// errConnectionNotFound answers 404 NOT_FOUND "Bank connection not found".
var errConnectionNotFound = errors.New("bank connection not found")

// errProviderUnavailable answers 502 PROVIDER_SERVICE_UNAVAILABLE.
var errProviderUnavailable = errors.New("provider unavailable")

// middlewareError is the body of failures raised before an endpoint runs.
type middlewareError struct {
	Error     string `json:"error"`
	RequestID string `json:"requestId"`
}

// Responder writes version 1's {error, requestId} bodies for failures
// raised before an endpoint runs (authentication, plan check, rate limits).
type Responder struct{}

// Unauthorized answers 401 with version 1's string for the reason
// (docs/api-v1.md).
func (Responder) Unauthorized(c *gin.Context, reason middleware.Reason) {
	c.AbortWithStatusJSON(http.StatusUnauthorized, middlewareError{reasonMessage(reason), middleware.GetRequestID(c)})
}

func reasonMessage(r middleware.Reason) string {
	switch r {
	case middleware.ReasonInvalid:
		return MsgInvalidKey
	case middleware.ReasonDisabled:
		return MsgDisabledKey
	case middleware.ReasonExpired:
		return MsgExpiredKey
	default:
		return MsgMissingAuthorization
	}
}

// Forbidden answers 403: version 1 needs an active pro plan or a trial.
func (Responder) Forbidden(c *gin.Context, _ middleware.Gate) {
	c.AbortWithStatusJSON(http.StatusForbidden, middlewareError{MsgSubscriptionRequired, middleware.GetRequestID(c)})
}

// RateLimited answers 429 with retryAfter as the epoch milliseconds after
// which to retry, and Retry-After in seconds. Limits spent before the rate
// limiter runs (failed authentications per address) get their
// X-RateLimit headers here.
func (Responder) RateLimited(c *gin.Context, limit middleware.LimitInfo, retryAfter time.Duration) {
	secs := middleware.RetryAfterSeconds(retryAfter)
	at := time.Now().Add(retryAfter)
	h := c.Writer.Header()
	if h.Get("X-RateLimit-Limit") == "" {
		h.Set("X-RateLimit-Limit", strconv.Itoa(limit.Count))
		h.Set("X-RateLimit-Remaining", "0")
		h.Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Duration(secs)*time.Second).Unix(), 10))
	}
	h.Set("Retry-After", strconv.Itoa(secs))
	c.AbortWithStatusJSON(http.StatusTooManyRequests, gin.H{
		"error":      MsgRateLimited,
		"requestId":  middleware.GetRequestID(c),
		"retryAfter": at.UnixMilli(),
	})
}

// Internal answers 500 {error: "Internal error", requestId}.
func (Responder) Internal(c *gin.Context) {
	c.AbortWithStatusJSON(http.StatusInternalServerError, middlewareError{MsgInternal, middleware.GetRequestID(c)})
}

// endpointResponder is Responder for failures inside an endpoint (a
// recovered panic), whose 500 uses the endpoint envelope.
type endpointResponder struct{ Responder }

// Internal answers 500 INTERNAL_ERROR.
func (endpointResponder) Internal(c *gin.Context) {
	Fail(c, http.StatusInternalServerError, CodeInternal, "Internal server error")
}
