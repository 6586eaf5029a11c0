package providers_test

import (
	"slices"
	"testing"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
)

func describe(name, v1 string) providers.Description {
	return providers.Description{ProviderProfile: domain.ProviderProfile{Name: name, V1Name: v1}}
}

func TestRegistryKeepsDescriptionsInRegistrationOrder(t *testing.T) {
	r := providers.NewRegistry()
	build := func(providers.Deps) providers.Provider { return &fake{} }
	r.Register(describe("zeta", "Zeta"), build)
	r.Register(describe("alpha", "ALPHA"), build)

	var order []string
	for _, d := range r.Descriptions() {
		order = append(order, d.Name)
	}
	if !slices.Equal(order, []string{"zeta", "alpha"}) {
		t.Fatalf("Descriptions order = %v, want registration order", order)
	}
	if got := r.Names(); !slices.Equal(got, []string{"alpha", "zeta"}) {
		t.Fatalf("Names = %v, want sorted", got)
	}
	profiles := r.Profiles()
	if len(profiles) != 2 || profiles[1].V1Name != "ALPHA" {
		t.Fatalf("Profiles = %+v", profiles)
	}
	if d, ok := r.Describe("alpha"); !ok || d.V1Name != "ALPHA" {
		t.Fatalf("Describe(alpha) = %+v, %v", d, ok)
	}
	if _, ok := r.Describe("nope"); ok {
		t.Fatal("Describe found an unregistered provider")
	}
	ds := r.Descriptions()
	ds[0].Name = "changed"
	if d, _ := r.Describe("zeta"); d.Name != "zeta" {
		t.Fatal("Descriptions exposed the registry's own slice")
	}
}

func TestRegisterRefusesDuplicatesAndEmptyNames(t *testing.T) {
	for _, tt := range []struct {
		name string
		reg  func(r *providers.Registry)
	}{
		{"duplicate", func(r *providers.Registry) {
			r.Register(describe("a", ""), nil)
			r.Register(describe("a", ""), nil)
		}},
		{"empty name", func(r *providers.Registry) { r.Register(describe("", ""), nil) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("Register did not panic")
				}
			}()
			tt.reg(providers.NewRegistry())
		})
	}
}

func TestMissingCredentials(t *testing.T) {
	d := providers.Description{Credentials: []providers.CredentialField{
		{Key: "api_key", Required: true},
		{Key: "secret", Required: true},
		{Key: "account"},
	}}
	got := d.MissingCredentials(map[string]any{"api_key": "k", "secret": 42})
	if !slices.Equal(got, []string{"secret"}) {
		t.Fatalf("missing = %v, want [secret] (a number is not a credential)", got)
	}
	if got := d.MissingCredentials(map[string]any{"api_key": "k", "secret": "s"}); len(got) != 0 {
		t.Fatalf("missing = %v with every required key, want none", got)
	}
	if got := d.MissingCredentials(map[string]any{"api_key": ""}); !slices.Equal(got, []string{"api_key", "secret"}) {
		t.Fatalf("missing = %v, want [api_key secret]", got)
	}
}
