package netguard

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
)

// The messages a failed delivery shows its owner (a consumer webhook's
// lastError). They say what failed in general terms and nothing the
// service's own network would tell: no address, no resolver, and the same
// words for a host name that does not resolve and one that resolves to a
// refused address, so a webhook pointed inward learns nothing of which
// internal names exist.
const (
	// MsgRefusedAddress is a literal IP address the policy refuses.
	MsgRefusedAddress = "refused address: not a public address"
	// MsgUnresolved is a host name that did not resolve, or resolved to
	// an address the policy refuses (deliberately the same words).
	MsgUnresolved = "DNS lookup failed or refused address: the host name does not resolve to a public address"
	// MsgTimeout is an attempt that ran out of time.
	MsgTimeout = "timeout"
	// MsgTLS is a failed TLS handshake or certificate check.
	MsgTLS = "TLS error"
	// MsgConnectionRefused is a receiver that refused the connection.
	MsgConnectionRefused = "connection refused"
	// MsgConnectionReset is a connection closed before an answer.
	MsgConnectionReset = "connection closed before an answer"
	// MsgNetwork is any other failure to reach the receiver.
	MsgNetwork = "network error"
)

// Describe returns the message a failed call to rawURL shows the webhook's
// owner: one of the Msg constants. err is the HTTP client's error (not an
// HTTP status: StatusMessage says those). The full error, for operators,
// goes to the log alongside RedactURL(rawURL).
func Describe(rawURL string, err error) string {
	literal := isLiteral(rawURL)
	if _, ok := errors.AsType[*net.DNSError](err); ok {
		return MsgUnresolved
	}
	if errors.Is(err, ErrRefused) {
		if literal {
			return MsgRefusedAddress
		}
		return MsgUnresolved
	}
	if ne, ok := errors.AsType[net.Error](err); errors.Is(err, context.DeadlineExceeded) || (ok && ne.Timeout()) {
		return MsgTimeout
	}
	if isTLSError(err) {
		return MsgTLS
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return MsgConnectionRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return MsgConnectionReset
	}
	return MsgNetwork
}

// StatusMessage is the message of an answer with a status other than 2xx,
// say "HTTP status 500"; a redirect says it was not followed.
func StatusMessage(status int) string {
	if status >= 300 && status <= 399 {
		return fmt.Sprintf("HTTP status %d: redirects are not followed", status)
	}
	return fmt.Sprintf("HTTP status %d", status)
}

// isLiteral reports whether rawURL's host is an IP address rather than a
// name.
func isLiteral(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	_, err = netip.ParseAddr(u.Hostname())
	return err == nil
}

// PermanentRefusal reports whether err is a refusal that no later attempt
// can change: a literal address the policy refuses. A host name's refusal
// is not one (the name may resolve elsewhere later), and must not be told
// apart from a name that does not resolve.
func PermanentRefusal(rawURL string, err error) bool {
	return errors.Is(err, ErrRefused) && isLiteral(rawURL)
}

// isTLSError reports whether err comes from the TLS handshake or the
// certificate check.
func isTLSError(err error) bool {
	if _, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
		return true
	}
	if _, ok := errors.AsType[tls.RecordHeaderError](err); ok {
		return true
	}
	if _, ok := errors.AsType[tls.AlertError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.UnknownAuthorityError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.HostnameError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.CertificateInvalidError](err); ok {
		return true
	}
	return strings.HasPrefix(err.Error(), "tls: ") || strings.Contains(err.Error(), ": tls: ")
}

// RedactURL returns rawURL as logs may show it: scheme, host (with port)
// and path only, without user information, query or fragment, which
// often carry a receiver's secret token. A secret in the path itself is
// kept (the path is what tells an operator which endpoint failed); one
// that cannot be parsed is replaced whole.
func RedactURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparseable URL)"
	}
	r := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	return r.String()
}

// RedactError rewrites err as http.Client.Do returns it, a *url.Error
// that repeats the whole URL, to name RedactURL of it instead; other
// errors are returned as they are.
func RedactError(err error) error {
	ue, ok := err.(*url.Error) //nolint:errorlint // the client's own error, not a chain
	if !ok {
		return err
	}
	return &redactedURLError{op: ue.Op, url: RedactURL(ue.URL), err: ue.Err}
}

// redactedURLError is a *url.Error whose URL is redacted; it unwraps to
// the same cause.
type redactedURLError struct {
	op, url string
	err     error
}

func (e *redactedURLError) Error() string { return fmt.Sprintf("%s %q: %v", e.op, e.url, e.err) }
func (e *redactedURLError) Unwrap() error { return e.err }
