package all_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/all"
)

func TestRegistryHoldsEveryProvider(t *testing.T) {
	r := all.NewRegistry()
	want := adapterFolders(t)
	got := r.Names()
	if len(got) != len(want) {
		t.Fatalf("names = %v, want %v", got, want)
	}
	for i, name := range want {
		if got[i] != name {
			t.Fatalf("names = %v, want %v", got, want)
		}
		p, err := r.New(name, providers.Deps{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Name() != name {
			t.Errorf("adapter for %q calls itself %q", name, p.Name())
		}
		d, ok := r.Describe(name)
		if !ok || p.Describe().Name != name || d.Name != name {
			t.Errorf("adapter for %q describes itself as %q, registered as %q", name, p.Describe().Name, d.Name)
		}
		// Limits may be zero: a provider that publishes no rate limit
		// declares none rather than invent one (zero means unlimited).
		if d.V1Name == "" || d.DefaultBaseURL == "" || len(d.Credentials) == 0 {
			t.Errorf("%s declares too little: %+v", name, d)
		}
	}
	if _, err := r.New("nope", providers.Deps{}); err == nil {
		t.Error("unknown provider built")
	}
}

// frameworkFolders are the folders under providers/ that hold no adapter.
var frameworkFolders = map[string]bool{"all": true, "internal": true, "providertest": true, "sim": true}

// adapterFolders lists the adapters' folders under providers/, sorted:
// each is one provider, named as its folder, which the registry must hold
// (so a provider added without its registration line fails, and no test
// keeps a list of providers by hand).
func adapterFolders(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(moduleRoot(t), "providers"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && !frameworkFolders[e.Name()] {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	if len(out) == 0 {
		t.Fatal("no adapter folders under providers/")
	}
	return out
}
