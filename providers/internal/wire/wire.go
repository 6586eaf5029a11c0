// Package wire holds the HTTP and JSON plumbing the provider adapters share:
// sending a request, classifying transport failures, decoding bodies without
// float64, and reading Retry-After.
package wire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
	"github.com/shopspring/decimal"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/resilience"
)

// maxBody bounds the size of a provider response body we read.
const maxBody = 64 << 20

// Response is a provider's HTTP answer with its whole body read (Do), or,
// for a 2xx answer DoJSON decoded, its status and headers only.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// OK reports a 2xx status.
func (r *Response) OK() bool { return r.Status >= 200 && r.Status < 300 }

// NewJSONRequest builds a request with a JSON body (nil body: none).
func NewJSONRequest(ctx context.Context, method, url string, body any) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encode request body: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	return req, nil
}

// Do sends req and reads the whole body. Transport failures (connection
// errors, timeouts, the context's deadline, a body cut short) come back as
// an Unavailable *resilience.Error; HTTP statuses are left to the caller.
func Do(client *http.Client, provider string, req *http.Request) (*Response, error) {
	resp, err := client.Do(req)
	if err != nil {
		return nil, Transport(provider, req.Context(), err)
	}
	defer resp.Body.Close()
	return readResponse(provider, req.Context(), resp)
}

// DoJSON sends req and, for a 2xx answer, decodes its body into out while
// it arrives, instead of reading it whole first, so that decoding overlaps
// the provider writing and the network carrying the rest. It reads and
// fails like Do followed by Decode: the body is bounded by the same limit
// (past it the body is cut, so it does not parse), only whitespace may
// follow the JSON value, a body that does not parse is an Unavailable
// MALFORMED_RESPONSE returned with the Response, and a failure to read the
// body (or a context that ends while decoding) is a transport error, with
// no Response, as Do gives it. The Response of a 2xx answer has no Body.
// Any other answer is read whole, as Do reads it, and returned without an
// error for the caller to classify; out is then left untouched.
func DoJSON(client *http.Client, provider string, req *http.Request, out any) (*Response, error) {
	resp, err := client.Do(req)
	if err != nil {
		return nil, Transport(provider, req.Context(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return readResponse(provider, req.Context(), resp)
	}
	readErr, decodeErr := decodeBody(req.Context(), provider, resp, maxBody, out)
	if readErr != nil {
		return nil, readErr
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header}, decodeErr
}

// readResponse reads resp's whole body into a Response.
func readResponse(provider string, ctx context.Context, resp *http.Response) (*Response, error) {
	body, err := readBody(resp)
	if err != nil {
		return nil, Transport(provider, ctx, fmt.Errorf("read body: %w", err))
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: body}, nil
}

// readBody reads the whole body, sized by Content-Length when it is known.
func readBody(resp *http.Response) ([]byte, error) {
	if n := resp.ContentLength; n >= 0 && n <= maxBody {
		buf := make([]byte, n)
		_, err := io.ReadFull(resp.Body, buf)
		return buf, err
	}
	return io.ReadAll(io.LimitReader(resp.Body, maxBody))
}

// drainLimit bounds what is read of a body after its JSON value was
// decoded, so that the connection can be reused without reading an
// unbounded tail.
const drainLimit = 64 << 10

// decodeBody decodes the first limit bytes of resp's body into v as they
// arrive. It returns a transport error when the body could not be read or
// the context ended, else, when the body does not parse, the Unavailable
// MALFORMED_RESPONSE error Decode would give. After a decode failure the
// rest of the first limit bytes is still read, so that a body that is both
// malformed and cut short is a transport error, as with Do then Decode.
func decodeBody(ctx context.Context, provider string, resp *http.Response, limit int64, v any) (readErr, decodeErr error) {
	br := &bodyReader{r: bufio.NewReaderSize(io.LimitReader(resp.Body, limit), readBufferSize(resp.ContentLength))}
	err := jsonv2.UnmarshalRead(br, v, decodeOptions())
	switch {
	case err == nil && br.err == nil:
		// UnmarshalRead read to the limit's EOF; read what a body over the
		// limit has left, within reason, so the connection can be reused.
		_, _ = io.CopyN(io.Discard, resp.Body, drainLimit)
		return nil, nil
	case br.err == nil:
		_, _ = io.Copy(io.Discard, br)
	}
	switch {
	case br.err != nil:
		return Transport(provider, ctx, fmt.Errorf("read body: %w", br.err)), nil
	case ctx.Err() != nil:
		return Transport(provider, ctx, fmt.Errorf("decode body: %w", ctx.Err())), nil
	}
	return nil, malformed(provider, resp.StatusCode, err)
}

// maxReadBuffer is the largest buffer a body is decoded through. The JSON
// decoder reads at most 4 KiB at a time; unbuffered, a large page was one
// system call per 4 KiB (about a tenth of a whole-window re-sync's CPU).
const maxReadBuffer = 64 << 10

// readBufferSize sizes the read buffer for a body of contentLength bytes
// (-1 when unknown): the body and a byte to see its end, up to
// maxReadBuffer.
func readBufferSize(contentLength int64) int {
	if contentLength >= 0 && contentLength < maxReadBuffer {
		return int(contentLength) + 1
	}
	return maxReadBuffer
}

// bodyReader passes reads on and keeps the first error other than io.EOF,
// which tells a body that could not be read from one that does not parse.
type bodyReader struct {
	r   io.Reader
	err error
}

// Read reads from the underlying reader and keeps its first failure.
func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF && b.err == nil {
		b.err = err
	}
	return n, err
}

// Transport classifies an error from sending a request or reading its body.
func Transport(provider string, ctx context.Context, err error) error {
	code := resilience.CodeNetwork
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled):
		code = "CANCELED"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		code = resilience.CodeTimeout
	case ctx.Err() != nil:
		code = resilience.CodeTimeout
		err = fmt.Errorf("%w: %w", err, ctx.Err())
	}
	return &resilience.Error{
		Provider: provider, Class: resilience.Unavailable, Code: code,
		Message: err.Error(), Err: err,
	}
}

// decodeOptions are the options of every provider answer's decode. With
// them the JSON v2 implementation reads a body the way encoding/json did:
// invalid UTF-8 in a string becomes U+FFFD, of an object's duplicate names
// the last wins (merging into what the first one set), and a time.Time
// accepts what time.Time.UnmarshalJSON accepts. One difference remains:
// member names must match the struct tags exactly, where encoding/json
// also took any other case (the providers send the names they document).
func decodeOptions() jsonv2.Options {
	return jsonv2.JoinOptions(
		jsontext.AllowInvalidUTF8(true),
		jsontext.AllowDuplicateNames(true),
		jsonv1.MergeWithLegacySemantics(true),
		jsonv1.ParseTimeWithLooseRFC3339(true),
	)
}

// Decode parses a JSON body into v with the JSON v2 implementation, which
// decodes provider pages over twice as fast as encoding/json. Amount fields
// of v must be domain.Money, decimal.Decimal or integers, which read the
// number's text, so amounts never pass through float64; encoding/json's
// json.Number is not supported (a raw number fits a jsontext.Value). A body
// that does not parse is an Unavailable MALFORMED_RESPONSE; v may then be
// partly set.
func Decode(provider string, r *Response, v any) error {
	if err := jsonv2.Unmarshal(r.Body, v, decodeOptions()); err != nil {
		return malformed(provider, r.Status, err)
	}
	return nil
}

// malformed is the Unavailable MALFORMED_RESPONSE error of a body with the
// given status that does not decode.
func malformed(provider string, status int, err error) error {
	return &resilience.Error{
		Provider: provider, Class: resilience.Unavailable, Code: resilience.CodeMalformed,
		HTTPStatus: status, Message: fmt.Sprintf("decode response: %v", err), Err: err,
	}
}

// ClassOfStatus is the fallback class of an HTTP error status whose body
// says nothing more specific.
func ClassOfStatus(status int) resilience.Class {
	switch {
	case status == http.StatusTooManyRequests:
		return resilience.RateLimited
	case status >= 500, status == http.StatusRequestTimeout, status == http.StatusConflict:
		return resilience.Unavailable
	case status == http.StatusUnauthorized, status == http.StatusForbidden:
		return resilience.ReauthRequired
	default:
		return resilience.Permanent
	}
}

// RetryAfter reads a Retry-After header (seconds or an HTTP date) or
// Retry-After-Ms; it returns def when neither is present.
func RetryAfter(h http.Header, now time.Time, def time.Duration) time.Duration {
	if ms := h.Get("Retry-After-Ms"); ms != "" {
		if n, err := strconv.ParseFloat(ms, 64); err == nil && n >= 0 {
			return time.Duration(n * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return def
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
		return 0
	}
	return def
}

// Money converts a decimal into domain.Money.
func Money(d decimal.Decimal) domain.Money { return domain.MoneyFromDecimal(d) }

// MoneyPtr converts an optional decimal.
func MoneyPtr(d *decimal.Decimal) *domain.Money {
	if d == nil {
		return nil
	}
	m := domain.MoneyFromDecimal(*d)
	return &m
}

// Ptr returns a pointer to v.
func Ptr[T any](v T) *T { return &v }

// StrPtr returns a pointer to s, or nil when s is empty.
func StrPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// DatePtr returns the date of t, or nil for the zero time.
func DatePtr(t time.Time) *domain.Date {
	if t.IsZero() {
		return nil
	}
	d := domain.DateOf(t)
	return &d
}

// ParseDatePtr parses an optional YYYY-MM-DD (or an RFC 3339 time, whose UTC
// date is taken); empty or unparseable text gives nil.
func ParseDatePtr(s string) *domain.Date {
	if s == "" {
		return nil
	}
	if d, err := domain.ParseDate(s); err == nil {
		return &d
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return DatePtr(t)
	}
	return nil
}

// Last4 returns the last four characters of s (all of s when shorter).
func Last4(s string) string {
	s = strings.ReplaceAll(s, " ", "")
	if len(s) <= 4 {
		return s
	}
	return s[len(s)-4:]
}

// InvalidCredentials is the Permanent error for a credential object that
// does not parse or lacks a field.
func InvalidCredentials(provider string, err error) error {
	return &resilience.Error{
		Provider: provider, Class: resilience.Permanent, Code: "INVALID_CREDENTIALS",
		Message: fmt.Sprintf("connection credentials: %v", err), Err: err,
	}
}

// InvalidCursor is the Permanent error for a cursor the adapter did not write.
func InvalidCursor(provider string, err error) error {
	return &resilience.Error{
		Provider: provider, Class: resilience.Permanent, Code: "INVALID_CURSOR",
		Message: fmt.Sprintf("sync cursor: %v", err), Err: err,
	}
}

// EncodeCursor writes v as an opaque cursor (base64url of its JSON).
func EncodeCursor(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		// Cursor structs hold only strings, numbers and maps of them.
		panic(fmt.Sprintf("encode cursor: %v", err))
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeCursor reads a cursor written by EncodeCursor into v; "" leaves v
// untouched. Cursors stay on encoding/json, like EncodeCursor: they are
// small, read once a page, and stored between syncs.
func DecodeCursor(s string, v any) error {
	if s == "" {
		return nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return fmt.Errorf("decode cursor: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode cursor: %w", err)
	}
	return nil
}

// GetJSON sends GET baseURL+path?query with the given headers and decodes a
// 2xx answer into out as it arrives (see DoJSON); any other status is read
// whole and turned into an error by classify.
func GetJSON(ctx context.Context, client *http.Client, provider, baseURL, path string, query url.Values, header http.Header, classify func(*Response) error, out any) error {
	u := strings.TrimRight(baseURL, "/") + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := NewJSONRequest(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := DoJSON(client, provider, req, out)
	if err != nil {
		return err
	}
	if !resp.OK() {
		return classify(resp)
	}
	return nil
}
