package all_test

import (
	"testing"

	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/all"
)

func TestRegistryHoldsEveryProvider(t *testing.T) {
	r := all.NewRegistry()
	want := []string{"gocardless", "mercury", "plaid", "simplefin", "stripe"}
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
		if d.V1Name == "" || d.DefaultBaseURL == "" || len(d.Credentials) == 0 || d.Limits.Provider.Rate == 0 {
			t.Errorf("%s declares too little: %+v", name, d)
		}
	}
	if _, err := r.New("nope", providers.Deps{}); err == nil {
		t.Error("unknown provider built")
	}
}
