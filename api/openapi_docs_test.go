package api_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/api/openapi/openapitest"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// registryDocs renders the v1 and v2 documents for the registry's
// providers: what serve answers at /v1/openapi.json and /v2/openapi.json.
func registryDocs(tb testing.TB) (v1, v2 []byte) {
	tb.Helper()
	provs := all.NewRegistry().Profiles()
	return openapitest.V1(tb, provs), openapitest.V2(tb, provs)
}

// registryValidators check responses against registryDocs.
func registryValidators(tb testing.TB) (v1, v2 *openapitest.Validator) {
	tb.Helper()
	d1, d2 := registryDocs(tb)
	return openapitest.New(tb, d1), openapitest.New(tb, d2)
}

// writeRegistryDocs writes registryDocs as v1.json and v2.json into dir,
// for the tools that read files, and returns their paths.
func writeRegistryDocs(tb testing.TB, dir string) (v1, v2 string) {
	tb.Helper()
	d1, d2 := registryDocs(tb)
	v1, v2 = filepath.Join(dir, "v1.json"), filepath.Join(dir, "v2.json")
	for path, data := range map[string][]byte{v1: d1, v2: d2} {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return v1, v2
}

// TestRouterServesTheGivenProviders: a router given a profile list serves
// documents whose Provider enums list exactly those providers (then
// manual), so a provider added to the registry needs no regenerated file.
func TestRouterServesTheGivenProviders(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	provs := []domain.ProviderProfile{{Name: "zeta"}, {Name: "acme", V1Name: "ACME Bank"}}
	a := api.MustNew(api.Config{
		Providers: provs,
		Store:     storage.New(pool),
		Log:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		CursorKey: []byte("test cursor key, 32 bytes long!!"),
	})
	for _, c := range []struct {
		path string
		doc  []byte
		want []string
	}{
		{"/v1/openapi.json", openapitest.V1(t, provs), []string{"Zeta", "ACME Bank", "Manual"}},
		{"/v2/openapi.json", openapitest.V2(t, provs), []string{"zeta", "acme", "manual"}},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, c.path, nil)
		a.Handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", c.path, rec.Code, rec.Body)
		}
		openapitest.New(t, c.doc).CheckRecorder(t, req, rec)
		if got := openapitest.ProviderEnum(t, rec.Body.Bytes()); !slices.Equal(got, c.want) {
			t.Errorf("GET %s: Provider enum = %q, want %q", c.path, got, c.want)
		}
	}
}

// TestBuildRefusesProvidersNoDocumentCanList: Build fails, before serving
// anything, when the profiles cannot make the documents' Provider enums.
func TestBuildRefusesProvidersNoDocumentCanList(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	_, err := api.New(api.Config{
		Providers: []domain.ProviderProfile{{Name: "acme"}, {Name: "acme"}},
		Store:     storage.New(pool),
		Log:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		CursorKey: []byte("test cursor key, 32 bytes long!!"),
	})
	if err == nil {
		t.Fatal("Build accepted a provider listed twice")
	}
}
