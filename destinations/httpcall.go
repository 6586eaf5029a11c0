package destinations

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/finsync/finsync/internal/netguard"
	"github.com/finsync/finsync/resilience"
)

// maxBody bounds how much of a response is read.
const maxBody = 1 << 20

// request is one outbound call.
type request struct {
	service string
	method  string
	url     string
	header  http.Header
	body    []byte
	// form sends the body as application/x-www-form-urlencoded.
	form bool
}

// do sends the request and decodes a 2xx JSON answer into out (when not
// nil). Any other outcome is a classified *resilience.Error; errorCode
// extracts the service's error code and message from an error body.
func do(ctx context.Context, client *http.Client, r request, out any, errorCode func([]byte) (string, string)) error {
	req, err := http.NewRequestWithContext(ctx, r.method, r.url, bytes.NewReader(r.body))
	if err != nil {
		return permanent(r.service, "BAD_REQUEST", fmt.Sprintf("build request: %v", err))
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	switch {
	case r.form:
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	case r.body != nil:
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return transportError(r.service, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return transportError(r.service, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		code, msg := "", ""
		if errorCode != nil {
			code, msg = errorCode(body)
		}
		return statusError(r.service, resp, code, msg)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return &resilience.Error{Provider: r.service, Class: resilience.Unavailable, Code: resilience.CodeMalformed,
			Message: "response is not the documented JSON", HTTPStatus: resp.StatusCode, Err: err}
	}
	return nil
}

// transportError classifies a failure without a response. The client's
// error names the URL, redacted (netguard.RedactURL): a webhook
// destination's query often carries its receiver's token, and the message
// is logged, stored in the outbox and kept in River's job errors.
func transportError(service string, err error) error {
	err = netguard.RedactError(err)
	code := resilience.CodeNetwork
	if errors.Is(err, context.DeadlineExceeded) {
		code = resilience.CodeTimeout
	}
	return &resilience.Error{Provider: service, Class: resilience.Unavailable, Code: code,
		Message: "request failed: " + err.Error(), Err: err}
}

// statusError classifies a non-2xx answer: 429 is RateLimited (honouring
// Retry-After, else defaultRetry), 408 and 5xx are Unavailable, 401 and
// 403 ReauthRequired, other 4xx Permanent.
func statusError(service string, resp *http.Response, code, msg string) error {
	if code == "" {
		code = http.StatusText(resp.StatusCode)
	}
	if msg == "" {
		msg = fmt.Sprintf("HTTP %d", resp.StatusCode)
	}
	e := &resilience.Error{Provider: service, Code: code, Message: msg, HTTPStatus: resp.StatusCode}
	switch s := resp.StatusCode; {
	case s == http.StatusTooManyRequests:
		e.Class, e.RetryAfter = resilience.RateLimited, retryAfter(resp.Header, service)
	case s == http.StatusRequestTimeout || s >= 500:
		e.Class = resilience.Unavailable
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		e.Class = resilience.ReauthRequired
	default:
		e.Class = resilience.Permanent
	}
	return e
}

// retryAfter reads a Retry-After header in seconds; without one, Airtable
// asks for 30 seconds and the others get 5.
func retryAfter(h http.Header, service string) time.Duration {
	if n, err := strconv.Atoi(h.Get("Retry-After")); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if service == KindAirtable {
		return 30 * time.Second
	}
	return 5 * time.Second
}

// permanent is a Permanent failure raised before any call.
func permanent(service, code, msg string) error {
	return &resilience.Error{Provider: service, Class: resilience.Permanent, Code: code, Message: msg}
}
