// Package openapitest checks HTTP responses against an OpenAPI 3.1
// document in tests.
//
//	v := openapitest.New(t, openapitest.V2(t, all.NewRegistry().Profiles()))
//	rec := httptest.NewRecorder()
//	router.ServeHTTP(rec, req)
//	v.CheckRecorder(t, req, rec)
//
// A response fails the check when its operation (found by method and path,
// the document's server path such as /v2 included) does not document its
// status, when its Content-Type is not the documented one, when its body
// does not match the schema, or when a required header is missing or
// malformed. A known path asked with an undocumented method must answer
// with the document's 405 response for requests that match no operation,
// an unknown path with its 404 one (both under openapi.UnroutedExtension).
package openapitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/finsync/finsync/api/openapi"
	"github.com/finsync/finsync/domain"
)

// Names the responses of openapi.UnroutedExtension take among the
// components of the parsed document (Doc), where their references are
// resolved.
const (
	MethodNotAllowedResponse = "MethodNotAllowed"
	RouteNotFoundResponse    = "RouteNotFound"
)

// maxBodyInError bounds how much of a failing body an error message quotes.
const maxBodyInError = 2000

// Validator checks responses against one OpenAPI document. It is safe for
// concurrent use by parallel tests.
type Validator struct {
	doc    *openapi3.T
	router routers.Router
}

// V1 renders the document of API v1 for provs, as the API serves it
// (openapi.V1), failing tb when it cannot be rendered. Tests pass the
// registry's profiles, all.NewRegistry().Profiles(), which their _test
// files may import and this package, under api, may not.
func V1(tb testing.TB, provs []domain.ProviderProfile) []byte {
	tb.Helper()
	return mustRender(tb, openapi.V1, provs)
}

// V2 renders the document of API v2 for provs, as V1 does for v1.
func V2(tb testing.TB, provs []domain.ProviderProfile) []byte {
	tb.Helper()
	return mustRender(tb, openapi.V2, provs)
}

func mustRender(tb testing.TB, render func([]domain.ProviderProfile) ([]byte, error), provs []domain.ProviderProfile) []byte {
	tb.Helper()
	doc, err := render(provs)
	if err != nil {
		tb.Fatalf("openapitest: %v", err)
	}
	return doc
}

// ProviderEnum returns the values of the Provider schema's enum in a
// rendered document, failing tb when the document is not JSON.
func ProviderEnum(tb testing.TB, doc []byte) []string {
	tb.Helper()
	var d struct {
		Components struct {
			Schemas struct {
				Provider struct {
					Enum []string `json:"enum"`
				} `json:"Provider"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		tb.Fatalf("openapitest: decode the document: %v", err)
	}
	return d.Components.Schemas.Provider.Enum
}

// New loads and validates an OpenAPI document, failing t at once when the
// document is invalid.
func New(t testing.TB, doc []byte) *Validator {
	t.Helper()
	v, err := Load(context.Background(), doc)
	if err != nil {
		t.Fatalf("openapitest: %v", err)
	}
	return v
}

// Load parses doc, validates it as an OpenAPI document and prepares its
// router.
func Load(ctx context.Context, doc []byte) (*Validator, error) {
	loader := openapi3.NewLoader()
	loader.Context = ctx
	lifted, err := liftUnrouted(doc)
	if err != nil {
		return nil, err
	}
	parsed, err := loader.LoadFromData(lifted)
	if err != nil {
		return nil, fmt.Errorf("load document: %w", err)
	}
	if err := parsed.Validate(ctx, openapi3.EnableMultiError()); err != nil {
		return nil, fmt.Errorf("validate document: %w", err)
	}
	router, err := legacy.NewRouter(parsed)
	if err != nil {
		return nil, fmt.Errorf("build router: %w", err)
	}
	return &Validator{doc: parsed, router: router}, nil
}

// liftUnrouted copies the responses of openapi.UnroutedExtension into
// components.responses, as RouteNotFoundResponse (404) and
// MethodNotAllowedResponse (405), so that the loader resolves their
// references like any component's.
func liftUnrouted(doc []byte) ([]byte, error) {
	var raw map[string]any
	if err := json.Unmarshal(doc, &raw); err != nil {
		return nil, fmt.Errorf("decode document: %w", err)
	}
	unrouted, ok := raw[openapi.UnroutedExtension].(map[string]any)
	if !ok {
		return doc, nil
	}
	components, _ := raw["components"].(map[string]any)
	if components == nil {
		components = map[string]any{}
		raw["components"] = components
	}
	responses, _ := components["responses"].(map[string]any)
	if responses == nil {
		responses = map[string]any{}
		components["responses"] = responses
	}
	names := map[string]string{"404": RouteNotFoundResponse, "405": MethodNotAllowedResponse}
	for status, resp := range unrouted {
		name, known := names[status]
		if !known {
			return nil, fmt.Errorf("%s: unexpected status %q", openapi.UnroutedExtension, status)
		}
		responses[name] = resp
	}
	out, err := json.Marshal(raw)
	if err != nil {
		return nil, fmt.Errorf("encode document: %w", err)
	}
	return out, nil
}

// Doc returns the parsed document.
func (v *Validator) Doc() *openapi3.T { return v.doc }

// Validate reports how a response to req departs from the document; it
// returns nil when the response conforms.
func (v *Validator) Validate(req *http.Request, status int, header http.Header, body []byte) error {
	ctx := req.Context()
	route, err := v.findRoute(req, status)
	if err != nil {
		return err
	}
	if err := checkContentType(route, status, header, body); err != nil {
		return err
	}
	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, Route: route},
		Status:                 status,
		Header:                 header,
		Options:                options(),
	}
	input.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(ctx, input); err != nil {
		return fmt.Errorf("%s %s -> %d: %w", req.Method, req.URL.Path, status, err)
	}
	if err := checkErrorExtensions(route.Operation.Responses.Status(status).Value, body); err != nil {
		return fmt.Errorf("%s %s -> %d: %w", req.Method, req.URL.Path, status, err)
	}
	return nil
}

// checkErrorExtensions checks an error envelope against what its response
// says beyond the shared schema: the codes error.code takes there
// (openapi.ErrorCodesExtension) and the fields it always carries
// (openapi.ErrorFieldsExtension). A body whose error is not an object (a
// 401's string, v1's {error, requestId}) has no code to check.
func checkErrorExtensions(resp *openapi3.Response, body []byte) error {
	codes, fields := extensionList(resp, openapi.ErrorCodesExtension), extensionList(resp, openapi.ErrorFieldsExtension)
	messages := extensionList(resp, openapi.ErrorMessagesExtension)
	if codes == nil && fields == nil && messages == nil {
		return nil
	}
	var envelope map[string]any
	if err := json.Unmarshal(body, &envelope); err != nil {
		return fmt.Errorf("decode error body: %w", err)
	}
	for _, f := range fields {
		if _, ok := envelope[f]; !ok {
			return fmt.Errorf("error body lacks %s, which this response always carries (%s)", f, openapi.ErrorFieldsExtension)
		}
	}
	if msg, isText := envelope["error"].(string); isText && messages != nil && !slices.Contains(messages, msg) {
		return fmt.Errorf("error %q is not among this response's messages %q (%s)", msg, messages, openapi.ErrorMessagesExtension)
	}
	detail, ok := envelope["error"].(map[string]any)
	if !ok || codes == nil {
		return nil
	}
	code, _ := detail["code"].(string)
	for _, c := range codes {
		if c == code {
			return nil
		}
	}
	return fmt.Errorf("error.code %q is not among this response's codes %q (%s)", code, codes, openapi.ErrorCodesExtension)
}

// extensionList is a list of strings under key among resp's extensions,
// or nil.
func extensionList(resp *openapi3.Response, key string) []string {
	raw, ok := resp.Extensions[key].([]any)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(raw))
	for _, v := range raw {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// Check fails t (without stopping it) when the response does not conform;
// the message quotes the body.
func (v *Validator) Check(t testing.TB, req *http.Request, status int, header http.Header, body []byte) {
	t.Helper()
	if err := v.Validate(req, status, header, body); err != nil {
		t.Errorf("response does not follow the OpenAPI document: %v\nbody: %s", err, quote(body))
	}
}

// CheckRecorder checks a response recorded by an httptest.ResponseRecorder
// for req.
func (v *Validator) CheckRecorder(t testing.TB, req *http.Request, rec *httptest.ResponseRecorder) {
	t.Helper()
	v.Check(t, req, rec.Code, rec.Result().Header, rec.Body.Bytes())
}

// CheckResponse checks a client-side response (its Request must be set).
// It reads the body, puts an unread copy back on resp and returns the
// bytes read.
func (v *Validator) CheckResponse(t testing.TB, resp *http.Response) []byte {
	t.Helper()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("openapitest: read response body: %v", err)
	}
	if err := resp.Body.Close(); err != nil {
		t.Fatalf("openapitest: close response body: %v", err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if resp.Request == nil {
		t.Fatalf("openapitest: response has no Request")
	}
	v.Check(t, resp.Request, resp.StatusCode, resp.Header, body)
	return body
}

// findRoute finds the operation of req. A known path with another method
// maps to the MethodNotAllowed component response, an unknown path to the
// RouteNotFound one; status must then be 405 or 404.
func (v *Validator) findRoute(req *http.Request, status int) (*routers.Route, error) {
	// Match on the path alone: the document's servers are relative (/v2),
	// while a client-side request carries scheme and host.
	lookup := req.Clone(req.Context())
	lookup.URL = &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath}
	reason, known := routers.ErrPathNotFound.Error(), false
	// The router forgives a trailing slash and matches an empty path
	// parameter; the API does neither (/accounts/ is no operation).
	if !strings.HasSuffix(req.URL.Path, "/") {
		route, pathParams, err := v.router.FindRoute(lookup)
		if err == nil && !hasEmpty(pathParams) {
			return route, nil
		}
		var routeErr *routers.RouteError
		if err != nil && !errors.As(err, &routeErr) {
			return nil, fmt.Errorf("find route of %s %s: %w", req.Method, req.URL.Path, err)
		}
		if routeErr != nil {
			reason = routeErr.Reason
		}
		known = reason == routers.ErrMethodNotAllowed.Error() || v.pathKnown(lookup)
	}
	name, want := RouteNotFoundResponse, http.StatusNotFound
	if known {
		name, want = MethodNotAllowedResponse, http.StatusMethodNotAllowed
	}
	if status != want {
		return nil, fmt.Errorf("%s %s: %s, so the status must be %d, got %d",
			req.Method, req.URL.Path, reason, want, status)
	}
	return v.fallbackRoute(req, name, status)
}

// hasEmpty reports whether a path parameter matched the empty string.
func hasEmpty(pathParams map[string]string) bool {
	for _, v := range pathParams {
		if v == "" {
			return true
		}
	}
	return false
}

// pathKnown reports whether some operation of the document has req's path
// (the router reports an unknown method on a templated path, such as
// /accounts/{accountId}, as an unknown path).
func (v *Validator) pathKnown(req *http.Request) bool {
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := req.Clone(req.Context())
		probe.Method = m
		if _, params, err := v.router.FindRoute(probe); err == nil && !hasEmpty(params) {
			return true
		}
	}
	return false
}

// fallbackRoute is an operation whose only response is the named component
// response.
func (v *Validator) fallbackRoute(req *http.Request, name string, status int) (*routers.Route, error) {
	resp := v.doc.Components.Responses[name]
	if resp == nil || resp.Value == nil {
		return nil, fmt.Errorf("%s %s -> %d: the document has no %d response under %s",
			req.Method, req.URL.Path, status, status, openapi.UnroutedExtension)
	}
	op := &openapi3.Operation{Responses: openapi3.NewResponses(openapi3.WithStatus(status, resp))}
	return &routers.Route{Spec: v.doc, Path: req.URL.Path, Method: req.Method, Operation: op}, nil
}

// checkContentType insists on a body, and a Content-Type, where the
// document describes one, and on no body where it describes none.
func checkContentType(route *routers.Route, status int, header http.Header, body []byte) error {
	resp := route.Operation.Responses.Status(status)
	if resp == nil || resp.Value == nil {
		return fmt.Errorf("%s %s: status %d is not documented for operation %q",
			route.Method, route.Path, status, route.Operation.OperationID)
	}
	documented := len(resp.Value.Content) > 0
	switch {
	case documented && len(body) == 0:
		return fmt.Errorf("%s %s -> %d: empty body, the document describes one", route.Method, route.Path, status)
	case documented && header.Get("Content-Type") == "":
		return fmt.Errorf("%s %s -> %d: no Content-Type header", route.Method, route.Path, status)
	case !documented && len(body) > 0:
		return fmt.Errorf("%s %s -> %d: body of %d bytes, the document describes none",
			route.Method, route.Path, status, len(body))
	}
	return nil
}

// options are the validation options: every status must be documented,
// all errors are reported, and the formats used by finsync's documents are
// asserted.
func options() *openapi3filter.Options {
	return &openapi3filter.Options{
		IncludeResponseStatus: true,
		MultiError:            true,
		SchemaValidationOptions: []openapi3.SchemaValidationOption{
			openapi3.EnableFormatValidation(),
			openapi3.WithStringFormatValidators(formats()),
		},
	}
}

// uuidPattern is the canonical textual form of a UUID, any version.
const uuidPattern = `^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`

// formats returns the string formats kin-openapi does not assert by itself.
func formats() map[string]openapi3.StringFormatValidator {
	return map[string]openapi3.StringFormatValidator{
		"uuid":      openapi3.NewRegexpFormatValidator(uuidPattern),
		"email":     openapi3.NewRegexpFormatValidator(openapi3.FormatOfStringForEmail),
		"uri":       openapi3.NewCallbackValidator(validateAbsoluteURI),
		"date":      openapi3.NewCallbackValidator(validateDate),
		"date-time": openapi3.NewRegexpFormatValidator(openapi3.FormatOfStringDateTime),
	}
}

var datePattern = regexp.MustCompile(openapi3.FormatOfStringDate)

// validateDate accepts a real calendar date in YYYY-MM-DD form.
func validateDate(s string) error {
	if !datePattern.MatchString(s) {
		return fmt.Errorf("not a YYYY-MM-DD date: %q", s)
	}
	y, _ := strconv.Atoi(s[0:4])
	m, _ := strconv.Atoi(s[5:7])
	d, _ := strconv.Atoi(s[8:10])
	if d > daysIn(y, m) {
		return fmt.Errorf("no such date: %q", s)
	}
	return nil
}

func daysIn(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// validateAbsoluteURI accepts an absolute URI such as https://host/path.
func validateAbsoluteURI(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("not a URI: %w", err)
	}
	if !u.IsAbs() || u.Host == "" {
		return fmt.Errorf("not an absolute URI: %q", s)
	}
	return nil
}

// quote returns body, cut to a readable length.
func quote(body []byte) string {
	if len(body) > maxBodyInError {
		return string(body[:maxBodyInError]) + "…"
	}
	return string(body)
}

// Wrap returns a handler that serves through h and checks every response
// it writes, so a test's router can be validated without touching each
// call site.
func (v *Validator) Wrap(t testing.TB, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		v.CheckRecorder(t, r, rec)
		for k, vs := range rec.Result().Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(rec.Code)
		if _, err := w.Write(rec.Body.Bytes()); err != nil {
			t.Errorf("openapitest: write response: %v", err)
		}
	})
}

// Transport returns a client transport that sends through base (or
// http.DefaultTransport when nil) and checks every response it receives.
func (v *Validator) Transport(t testing.TB, base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := base.RoundTrip(req)
		if err != nil {
			return nil, fmt.Errorf("round trip: %w", err)
		}
		if resp.Request == nil {
			resp.Request = req
		}
		v.CheckResponse(t, resp)
		return resp, nil
	})
}

// roundTripper adapts a function to http.RoundTripper.
type roundTripper func(*http.Request) (*http.Response, error)

// RoundTrip calls f.
func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
