package openapi_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/finsync/finsync/api/openapi"
	"github.com/finsync/finsync/api/openapi/internal/spec"
	"github.com/finsync/finsync/providers/all"
)

func docs() []struct {
	name    string
	data    []byte
	built   spec.Obj
	version string
	server  string
} {
	return []struct {
		name    string
		data    []byte
		built   spec.Obj
		version string
		server  string
	}{
		{"v1", openapi.V1(), spec.V1(all.NewRegistry().Profiles()), "1.0.0", "/v1"},
		{"v2", openapi.V2(), spec.V2(all.NewRegistry().Profiles()), "2.0.0", "/v2"},
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
	for _, d := range docs() {
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

func TestEmbeddedDocumentsMatchTheirBuilders(t *testing.T) {
	for _, d := range docs() {
		t.Run(d.name, func(t *testing.T) {
			want, err := spec.Marshal(d.built)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(d.data, want) {
				t.Errorf("%s.json is stale: run `go generate ./api/openapi`", d.name)
			}
		})
	}
}

func TestAccessorsReturnCopies(t *testing.T) {
	a := openapi.V2()
	a[0] = 'x'
	if openapi.V2()[0] != '{' {
		t.Error("V2 shares its bytes with callers")
	}
}

// TestOperationsDocumentCommonErrors checks the lead's rules: every
// authenticated operation documents 401, 403, 429 and 500, every
// operation with parameters or a body documents 400, every operation with
// an id in its path documents 404, and every response carries x-request-id.
func TestOperationsDocumentCommonErrors(t *testing.T) {
	for _, d := range docs() {
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
