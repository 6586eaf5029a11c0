package providers

import (
	"errors"

	"github.com/finsync/finsync/resilience"
)

// Class is the kind of a provider failure (an alias of resilience.Class, so
// that adapters, the guard and the worker speak of one type).
type Class = resilience.Class

// Error is a classified provider failure (an alias of resilience.Error).
// Adapters return it (possibly wrapped) for every failure; use errors.As or
// AsError to read it.
type Error = resilience.Error

// The four failure classes (see resilience.Class).
const (
	// ClassUnknown marks an error that is not a classified provider error.
	ClassUnknown = resilience.ClassUnknown
	// Unavailable: 5xx, timeout, connection error, malformed response,
	// institution down. Retried with backoff; counted by the breakers.
	Unavailable = resilience.Unavailable
	// RateLimited: 429 and quota errors. Carries RetryAfter; the caller
	// snoozes the job. Never counted as an outage.
	RateLimited = resilience.RateLimited
	// ReauthRequired: the user must act (consent expired, key expired). No
	// retries.
	ReauthRequired = resilience.ReauthRequired
	// Permanent: bad credentials or a bad request. No retries.
	Permanent = resilience.Permanent
)

// Codes set by the shared layers rather than by a provider (see the
// resilience package).
const (
	// CodeCircuitOpen: refused without calling while a breaker is open.
	CodeCircuitOpen = resilience.CodeCircuitOpen
	// CodeRateLimit: refused without calling when a local rate limiter
	// would wait too long.
	CodeRateLimit = resilience.CodeRateLimit
	// CodeMalformed: a response body that is not the JSON the provider
	// documents.
	CodeMalformed = resilience.CodeMalformed
	// CodeTimeout: a call that ran out of time.
	CodeTimeout = resilience.CodeTimeout
	// CodeNetwork: a connection-level failure.
	CodeNetwork = resilience.CodeNetwork
	// CodeQuotaExhausted: refused locally because the provider's quota
	// cannot afford the call.
	CodeQuotaExhausted = resilience.CodeQuotaExhausted
)

// ErrNotSupported is returned by Holdings and InvestmentTransactions on a
// provider without investments.
var ErrNotSupported = errors.New("not supported by this provider")

// AsError returns the *Error inside err, or nil.
func AsError(err error) *Error { return resilience.AsError(err) }

// ClassOf returns the class of err, or ClassUnknown when err is not a
// provider error.
func ClassOf(err error) Class { return resilience.ClassOf(err) }

// IsClass reports whether err is a provider error of class c.
func IsClass(err error, c Class) bool { return resilience.IsClass(err, c) }
