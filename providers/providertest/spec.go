package providertest

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/finsync/finsync/providers/sim"
)

// Spec is a provider's published OpenAPI description, loaded to check the
// simulator's answers against it. It is safe for concurrent use once
// loaded.
type Spec struct {
	doc *openapi3.T
}

// LoadSpec reads an OpenAPI 3.0 document (JSON or YAML, gzipped when the
// file name ends in .gz). The document itself is not validated: published
// descriptions carry examples that break their own formats, and validating
// Stripe's takes seconds; only the schemas of the operations checked
// matter, and those are resolved here.
func LoadSpec(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load spec: %w", err)
	}
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("load spec %s: %w", path, err)
		}
		if data, err = io.ReadAll(zr); err != nil {
			return nil, fmt.Errorf("load spec %s: %w", path, err)
		}
	}
	doc, err := openapi3.NewLoader().LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("load spec %s: %w", path, err)
	}
	return &Spec{doc: doc}, nil
}

// operation is one "METHOD /path/{param}" of a Spec, with the pattern its
// request paths match.
type operation struct {
	name, method, path string
	re                 *regexp.Regexp
	params             []string
}

// paramRe finds the {name} parameters of a path template.
var paramRe = regexp.MustCompile(`\{([^}/]+)\}`)

// operations resolves names such as "GET /v1/balance_transactions/{id}"
// to operations of the document, in the order given.
func (s *Spec) operations(names []string) ([]operation, error) {
	ops := make([]operation, 0, len(names))
	for _, n := range names {
		method, path, ok := strings.Cut(n, " ")
		if !ok {
			return nil, fmt.Errorf("operation %q: want \"METHOD /path\"", n)
		}
		item := s.doc.Paths.Value(path)
		if item == nil || item.GetOperation(method) == nil {
			return nil, fmt.Errorf("operation %q is not in the document", n)
		}
		op := operation{name: n, method: method, path: path}
		pattern := regexp.QuoteMeta(path)
		for _, m := range paramRe.FindAllStringSubmatch(path, -1) {
			op.params = append(op.params, m[1])
			pattern = strings.Replace(pattern, regexp.QuoteMeta(m[0]), `([^/]+)`, 1)
		}
		op.re = regexp.MustCompile("^" + pattern + "$")
		ops = append(ops, op)
	}
	return ops, nil
}

// CheckAnswers fails t unless every answer was given to one of ops (named
// "METHOD /path" as in the document, parameters as {name}), follows that
// operation's description (a documented status, or the default response,
// and a body that matches its schema: every required field present, types,
// formats and enums as published), and unless every one of ops was
// answered at least once. It reports how many answers of each operation it
// checked.
func (s *Spec) CheckAnswers(t testing.TB, answers []Body, ops []string) {
	t.Helper()
	resolved, err := s.operations(ops)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, a := range answers {
		op, params := match(resolved, a.Request)
		if op == nil {
			t.Errorf("%s %s: the simulator answered an operation that is not listed", a.Request.Method, a.Request.URL.Path)
			continue
		}
		if s.undescribedOutage(op, a.Status) {
			t.Logf("%s -> %d: the published description says nothing of this outage status; body not checked", op.name, a.Status)
			continue
		}
		count[op.name]++
		if err := s.validate(a, op, params); err != nil {
			t.Errorf("%s (%s -> %d) does not follow the published description:\n%s\nbody: %s",
				op.name, a.Request.URL.Path, a.Status, summarize(err), clip(a.Data))
		}
	}
	for _, n := range ops {
		if count[n] == 0 {
			t.Errorf("%s: no answer recorded", n)
			continue
		}
		t.Logf("%s: %d answers checked", n, count[n])
	}
}

// match returns the operation req was sent to and its path parameters.
func match(ops []operation, req *http.Request) (*operation, map[string]string) {
	for i := range ops {
		op := &ops[i]
		if op.method != req.Method {
			continue
		}
		m := op.re.FindStringSubmatch(req.URL.Path)
		if m == nil {
			continue
		}
		params := map[string]string{}
		for j, name := range op.params {
			params[name] = m[j+1]
		}
		return op, params
	}
	return nil, nil
}

// undescribedOutage reports whether status is a 5xx that op documents
// neither by itself nor through a default response: a description that is
// silent on outages (GoCardless's) says nothing of their bodies, so such
// an answer cannot be held to it. Any other undocumented status fails.
func (s *Spec) undescribedOutage(op *operation, status int) bool {
	if status < 500 {
		return false
	}
	rs := s.doc.Paths.Value(op.path).GetOperation(op.method).Responses
	return rs.Status(status) == nil && rs.Default() == nil
}

// validate checks one answer against its operation.
func (s *Spec) validate(a Body, op *operation, params map[string]string) error {
	item := s.doc.Paths.Value(op.path)
	route := &routers.Route{Spec: s.doc, Path: op.path, PathItem: item, Method: op.method, Operation: item.GetOperation(op.method)}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: a.Request, PathParams: params, Route: route},
		Status:                 a.Status,
		Header:                 a.Header,
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			MultiError:            true,
			SchemaValidationOptions: []openapi3.SchemaValidationOption{
				openapi3.EnableFormatValidation(),
				openapi3.DisableSchemaErrorDetails(),
			},
		},
	}
	in.SetBodyBytes(a.Data)
	ctx := a.Request.Context()
	if ctx.Err() != nil {
		ctx = context.Background()
	}
	return openapi3filter.ValidateResponse(ctx, in)
}

// indexRe finds array indices in the paths of validation errors.
var indexRe = regexp.MustCompile(`/[0-9]+(/|")`)

// summarize lists the distinct failures of a validation error, array
// indices written as *, so that one field missing from every row of a page
// is said once.
func summarize(err error) string {
	seen := map[string]bool{}
	var out []string
	for _, part := range strings.Split(err.Error(), " | ") {
		part = indexRe.ReplaceAllString(part, "/*$1")
		if !seen[part] {
			seen[part] = true
			out = append(out, "  "+part)
		}
	}
	return strings.Join(out, "\n")
}

// clip shortens a body quoted in a failure message.
func clip(b []byte) string {
	const n = 1500
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// CheckSpec checks the simulator against a provider's published API
// description through s's adapter: it records every answer the adapter
// receives (Exercise on a history of n transactions, then more, when not
// nil, for calls Exercise does not make, then one Accounts call under each
// of the outage, rate_limit and login_required faults, whose error bodies
// are documented too) and checks them with spec.CheckAnswers against ops.
func CheckSpec(t *testing.T, s Suite, n int, spec *Spec, ops []string, more func(t *testing.T, r *Recording)) {
	t.Helper()
	r := NewRecording(t, s, n)
	r.Exercise(t)
	if more != nil {
		more(t, r)
	}
	for _, mode := range []string{sim.FaultOutage, sim.FaultRateLimit, sim.FaultLoginRequired} {
		if err := r.Sim.SetFault(sim.Fault{Provider: s.Provider, Mode: mode}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Provider.Accounts(t.Context(), r.Conn); err == nil {
			t.Errorf("Accounts under the %s fault: no error", mode)
		}
	}
	if err := r.Sim.SetFault(sim.Fault{Provider: s.Provider, Mode: sim.FaultNone}); err != nil {
		t.Fatal(err)
	}
	spec.CheckAnswers(t, r.Recorder.Answers(), ops)
}
