package openapi_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/finsync/finsync/api/middleware"
	"github.com/finsync/finsync/api/openapi"
	"github.com/finsync/finsync/api/openapi/openapitest"
	v1 "github.com/finsync/finsync/api/v1"
	v2 "github.com/finsync/finsync/api/v2"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers/all"
)

// doc is one rendered document with what its top must say.
type doc struct {
	name    string
	data    []byte
	version string
	server  string
}

// docs renders both documents for the registry's providers, as the API
// serves them.
func docs(t *testing.T) []doc {
	t.Helper()
	provs := all.NewRegistry().Profiles()
	return []doc{
		{"v1", openapitest.V1(t, provs), "1.0.0", "/v1"},
		{"v2", openapitest.V2(t, provs), "2.0.0", "/v2"},
	}
}

func load(t *testing.T, data []byte) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(data)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if err := doc.Validate(context.Background(), openapi3.EnableMultiError()); err != nil {
		t.Fatalf("validate: %v", err)
	}
	return doc
}

func TestDocumentsAreValidOpenAPI31(t *testing.T) {
	for _, d := range docs(t) {
		t.Run(d.name, func(t *testing.T) {
			doc := load(t, d.data)
			if doc.OpenAPI != "3.1.0" || !doc.IsOpenAPI31OrLater() {
				t.Errorf("openapi = %q, want 3.1.0", doc.OpenAPI)
			}
			if doc.Info.Version != d.version {
				t.Errorf("info.version = %q, want %q", doc.Info.Version, d.version)
			}
			if len(doc.Servers) != 1 || doc.Servers[0].URL != d.server {
				t.Errorf("servers = %v, want one with url %s", doc.Servers, d.server)
			}
		})
	}
}

// TestProviderEnumsListTheRegistry: the Provider enums list the
// registry's providers in its order, then manual, v1 with its capitalised
// names.
func TestProviderEnumsListTheRegistry(t *testing.T) {
	provs := all.NewRegistry().Profiles()
	names := v1.NewProviderNames(provs)
	var want1, want2 []string
	for _, p := range provs {
		want1 = append(want1, names.Of(p.Name))
		want2 = append(want2, p.Name)
	}
	want1 = append(want1, "Manual")
	want2 = append(want2, domain.ProviderManual)
	for _, d := range docs(t) {
		want := map[string][]string{"v1": want1, "v2": want2}[d.name]
		if got := providerEnum(t, load(t, d.data)); !slices.Equal(got, want) {
			t.Errorf("%s Provider enum = %q, want %q", d.name, got, want)
		}
	}
}

// TestDocumentsListTheGivenProviders: the enums follow the profiles they
// are rendered for, whatever the registry holds, and the documents stay
// valid.
func TestDocumentsListTheGivenProviders(t *testing.T) {
	provs := []domain.ProviderProfile{{Name: "zeta"}, {Name: "acme", V1Name: "ACME Bank"}}
	for _, c := range []struct {
		name string
		data []byte
		want []string
	}{
		{"v1", openapitest.V1(t, provs), []string{"Zeta", "ACME Bank", "Manual"}},
		{"v2", openapitest.V2(t, provs), []string{"zeta", "acme", "manual"}},
	} {
		if got := providerEnum(t, load(t, c.data)); !slices.Equal(got, c.want) {
			t.Errorf("%s Provider enum = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestRenderRefusesAnInvalidProviderEnum: a profile list that would put an
// empty or repeated value in a Provider enum is an error, not a document.
func TestRenderRefusesAnInvalidProviderEnum(t *testing.T) {
	for _, c := range []struct {
		name       string
		provs      []domain.ProviderProfile
		v1OK, v2OK bool
	}{
		{"empty name", []domain.ProviderProfile{{Name: ""}}, false, false},
		{"same name twice", []domain.ProviderProfile{{Name: "acme"}, {Name: "acme"}}, false, false},
		{"named manual", []domain.ProviderProfile{{Name: domain.ProviderManual}}, false, false},
		{"same v1 name", []domain.ProviderProfile{{Name: "acme", V1Name: "Bank"}, {Name: "bank"}}, false, true},
		{"v1 name Manual", []domain.ProviderProfile{{Name: "hand", V1Name: "Manual"}}, false, true},
		{"distinct", []domain.ProviderProfile{{Name: "acme"}, {Name: "bank"}}, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := openapi.V1(c.provs); (err == nil) != c.v1OK {
				t.Errorf("V1: err = %v, want ok %v", err, c.v1OK)
			}
			if _, err := openapi.V2(c.provs); (err == nil) != c.v2OK {
				t.Errorf("V2: err = %v, want ok %v", err, c.v2OK)
			}
		})
	}
}

// providerEnum returns the values of the document's Provider schema.
func providerEnum(t *testing.T, doc *openapi3.T) []string {
	t.Helper()
	schema := doc.Components.Schemas["Provider"]
	if schema == nil || schema.Value == nil {
		t.Fatal("no Provider schema")
	}
	var out []string
	for _, v := range schema.Value.Enum {
		s, ok := v.(string)
		if !ok {
			t.Fatalf("Provider enum value %v is not a string", v)
		}
		out = append(out, s)
	}
	return out
}

// TestOperationsDocumentCommonErrors checks the lead's rules: every
// authenticated operation documents 401, 403, 429 and 500, every
// operation with parameters or a body documents 400, every operation with
// an id in its path documents 404, and every response carries x-request-id.
func TestOperationsDocumentCommonErrors(t *testing.T) {
	for _, d := range docs(t) {
		t.Run(d.name, func(t *testing.T) {
			doc := load(t, d.data)
			for path, item := range doc.Paths.Map() {
				for method, op := range item.Operations() {
					checkOperation(t, method+" "+path, op)
				}
			}
		})
	}
}

func checkOperation(t *testing.T, name string, op *openapi3.Operation) {
	t.Helper()
	public := op.Security != nil && len(*op.Security) == 0
	var want []int
	if !public {
		want = append(want, 401, 403, 429, 500)
	}
	if len(op.Parameters) > 0 || op.RequestBody != nil {
		want = append(want, 400)
	}
	if strings.Contains(name, "{") {
		want = append(want, 404)
	}
	for _, status := range want {
		if op.Responses.Status(status) == nil {
			t.Errorf("%s: no %d response", name, status)
		}
	}
	for code, resp := range op.Responses.Map() {
		if resp.Value.Headers["x-request-id"] == nil {
			t.Errorf("%s %s: no x-request-id header", name, code)
		}
		limit := resp.Value.Headers["X-RateLimit-Limit"]
		if !public && code < "300" && (limit == nil || !limit.Value.Required) {
			t.Errorf("%s %s: X-RateLimit-Limit not required", name, code)
		}
	}
}

// TestDocumentedQueryParametersAreTheAcceptedOnes: each operation of both
// documents lists exactly the query parameters its route accepts (the
// declaration the router refuses others by), and every declared operation
// is documented; GET /health, where probes may add what they like, is
// exempt from both.
func TestDocumentedQueryParametersAreTheAcceptedOnes(t *testing.T) {
	accepted := map[string]middleware.Accepted{"v1": v1.QueryParams(), "v2": v2.QueryParams()}
	for _, d := range docs(t) {
		t.Run(d.name, func(t *testing.T) {
			declared := accepted[d.name]
			seen := map[string]bool{}
			for path, item := range load(t, d.data).Paths.Map() {
				for method, op := range item.Operations() {
					key := method + " " + path
					if key == "GET /health" {
						continue
					}
					seen[key] = true
					var documented []string
					for _, p := range op.Parameters {
						if p.Value.In == "query" {
							documented = append(documented, p.Value.Name)
						}
					}
					want, ok := declared[key]
					if !ok {
						t.Errorf("%s is documented but declares no query parameters", key)
						continue
					}
					slices.Sort(documented)
					want = slices.Sorted(slices.Values(want))
					if !slices.Equal(documented, want) {
						t.Errorf("%s documents query parameters %q, the route accepts %q", key, documented, want)
					}
				}
			}
			for key := range declared {
				if !seen[key] {
					t.Errorf("%s accepts query parameters but is not documented", key)
				}
			}
		})
	}
}

// TestErrorResponsesShareOneSchema: every response of both documents
// whose body is the error envelope refers to the one Error schema, as is,
// and names its codes (openapi.ErrorCodesExtension) among the version's
// ErrorCode enum; and every 400 response says unknown parameters are
// refused.
func TestErrorResponsesShareOneSchema(t *testing.T) {
	for _, d := range docs(t) {
		t.Run(d.name, func(t *testing.T) {
			doc := load(t, d.data)
			all := doc.Components.Schemas["ErrorCode"].Value.Enum
			enveloped := 0
			for name, resp := range doc.Components.Responses {
				codes, hasCodes := resp.Value.Extensions[openapi.ErrorCodesExtension].([]any)
				schema := resp.Value.Content.Get("application/json").Schema
				if !hasCodes {
					if schema.Ref == "#/components/schemas/Error" {
						t.Errorf("%s refers to Error without naming its codes", name)
					}
					continue
				}
				enveloped++
				refersToError := schema.Ref == "#/components/schemas/Error"
				for _, alt := range schema.Value.OneOf {
					refersToError = refersToError || alt.Ref == "#/components/schemas/Error"
				}
				if !refersToError {
					t.Errorf("%s names codes but its schema is not the Error envelope", name)
				}
				for _, c := range codes {
					if !slices.Contains(all, c) {
						t.Errorf("%s names code %v, not in the ErrorCode enum", name, c)
					}
					if !strings.Contains(*resp.Value.Description, c.(string)) {
						t.Errorf("%s: the description does not name code %v", name, c)
					}
				}
				if strings.Contains(*resp.Value.Description, "BAD_REQUEST") &&
					!strings.Contains(*resp.Value.Description, "unknown parameters are refused") {
					t.Errorf("%s: the 400 description does not say unknown parameters are refused", name)
				}
			}
			if enveloped < 5 {
				t.Errorf("only %d responses carry the envelope", enveloped)
			}
			if _, ok := doc.Components.Schemas["RateLimitError"]; ok && d.name == "v2" {
				t.Errorf("v2 has a second envelope schema, RateLimitError")
			}
		})
	}
}
