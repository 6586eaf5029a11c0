package main

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/finsync/finsync/api/openapi"
	"github.com/finsync/finsync/api/openapi/openapitest"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers/all"
)

// TestOpenAPIPrintsTheServedDocuments: `finsync openapi v1|v2` prints the
// document serve answers for the registered providers, byte for byte, and
// refuses any other version.
func TestOpenAPIPrintsTheServedDocuments(t *testing.T) {
	provs := all.NewRegistry().Profiles()
	for _, c := range []struct {
		version string
		render  func([]domain.ProviderProfile) ([]byte, error)
		info    string
	}{
		{"v1", openapi.V1, "1.0.0"},
		{"v2", openapi.V2, "2.0.0"},
	} {
		t.Run(c.version, func(t *testing.T) {
			var out, errOut bytes.Buffer
			root := newRoot(&out, &errOut)
			root.SetArgs([]string{"openapi", c.version})
			if err := root.Execute(); err != nil {
				t.Fatalf("openapi %s: %v\n%s", c.version, err, errOut.String())
			}
			want, err := c.render(provs)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Fatalf("openapi %s printed %d bytes, not the %d of the served document", c.version, out.Len(), len(want))
			}
			var doc struct {
				Info struct {
					Version string `json:"version"`
				} `json:"info"`
			}
			if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
				t.Fatalf("openapi %s: %v", c.version, err)
			}
			if doc.Info.Version != c.info {
				t.Errorf("info.version = %q, want %q", doc.Info.Version, c.info)
			}
			// Every registered provider is listed, then manual.
			enum := openapitest.ProviderEnum(t, out.Bytes())
			if len(enum) != len(provs)+1 {
				t.Errorf("Provider enum %q, want the %d registered providers and manual", enum, len(provs))
			}
			if c.version == "v2" && !slices.Contains(enum, provs[0].Name) {
				t.Errorf("Provider enum %q lacks %q", enum, provs[0].Name)
			}
		})
	}
	for _, args := range [][]string{{"openapi"}, {"openapi", "v3"}, {"openapi", "v1", "v2"}} {
		var out, errOut bytes.Buffer
		root := newRoot(&out, &errOut)
		root.SetArgs(args)
		if err := root.Execute(); err == nil {
			t.Errorf("%q succeeded", args)
		}
		if out.Len() != 0 {
			t.Errorf("%q printed %q", args, out.String())
		}
	}
}
