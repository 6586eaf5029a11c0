// Package resilience is the guard every outbound integration of finsync
// calls through — provider adapters and destinations alike: token-bucket
// rate limits (shared by every process through a RateStore, else per
// process), a service-wide circuit breaker, one breaker per institution,
// bounded jittered retries, and the four failure classes that decide what a
// caller does next. It knows no provider: what is special about one (its
// limits, its quotas) is passed in as plain values.
package resilience

import (
	"errors"
	"fmt"
	"time"
)

// Class is the kind of a failure of an outbound call (to a provider or a
// destination); it decides what the caller does next.
type Class int

// The four failure classes. The zero value is ClassUnknown, which no adapter
// returns.
const (
	// ClassUnknown marks an error that is not a classified provider error.
	ClassUnknown Class = iota
	// Unavailable: 5xx, timeout, connection error, malformed response,
	// institution down. Retried with backoff; counted by the breakers.
	Unavailable
	// RateLimited: 429 and quota errors. Carries RetryAfter; the caller
	// snoozes the job. Never counted as an outage.
	RateLimited
	// ReauthRequired: the user must act (ITEM_LOGIN_REQUIRED, consent
	// expired, key expired). No retries.
	ReauthRequired
	// Permanent: bad credentials or a bad request. No retries.
	Permanent
)

// String names the class.
func (c Class) String() string {
	switch c {
	case Unavailable:
		return "unavailable"
	case RateLimited:
		return "rate_limited"
	case ReauthRequired:
		return "reauth_required"
	case Permanent:
		return "permanent"
	default:
		return "unknown"
	}
}

// Codes set by the shared layers rather than by the service called.
const (
	// CodeCircuitOpen is the Code of the error returned without calling the
	// provider while a circuit breaker is open.
	CodeCircuitOpen = "CIRCUIT_OPEN"
	// CodeRateLimit is the Code of the error returned without calling the
	// provider when a local rate limiter would wait too long.
	CodeRateLimit = "LOCAL_RATE_LIMIT"
	// CodeMalformed is the Code of a response body that is not the JSON the
	// provider documents.
	CodeMalformed = "MALFORMED_RESPONSE"
	// CodeTimeout is the Code of a call that ran out of time.
	CodeTimeout = "TIMEOUT"
	// CodeNetwork is the Code of a connection-level failure.
	CodeNetwork = "NETWORK_ERROR"
	// CodeQuotaExhausted is the Code of a call refused locally because the
	// provider's quota cannot afford it (an adapter's count of the quota, or
	// a Limit marked Quota).
	CodeQuotaExhausted = "QUOTA_EXHAUSTED"
)

// Error is a classified failure of an outbound call. Provider adapters and
// destinations return it (possibly wrapped) for every failure, and the Guard
// returns it for the calls it refuses; use errors.As (or AsError) to read it.
type Error struct {
	// Provider is the name of the service called: a provider name, or a
	// destination's guard name.
	Provider string
	// Class is the failure class.
	Class Class
	// Code is the provider's error code (e.g. ITEM_LOGIN_REQUIRED) or one
	// of the Code* constants.
	Code string
	// Message is a human-readable description; it never holds secrets.
	Message string
	// HTTPStatus is the provider's HTTP status, 0 when there was no response.
	HTTPStatus int
	// RetryAfter is how long to wait before trying again (RateLimited, and
	// Unavailable when known, e.g. an open breaker).
	RetryAfter time.Duration
	// InstitutionID is set when the failure is one institution's outage
	// (it then counts toward that institution's breaker only).
	InstitutionID string
	// Err is the underlying cause, if any (a transport error, a JSON
	// syntax error); it is reachable with errors.Is and errors.As.
	Err error
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Error implements error.
func (e *Error) Error() string {
	s := fmt.Sprintf("%s: %s", e.Provider, e.Class)
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.HTTPStatus != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.HTTPStatus)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.RetryAfter > 0 {
		s += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	return s
}

// AsError returns the *Error inside err, or nil.
func AsError(err error) *Error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}

// ClassOf returns the class of err, or ClassUnknown when err holds no
// *Error.
func ClassOf(err error) Class {
	if pe := AsError(err); pe != nil {
		return pe.Class
	}
	return ClassUnknown
}

// IsClass reports whether err holds an *Error of class c.
func IsClass(err error, c Class) bool { return ClassOf(err) == c }
