package providers

import (
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/resilience"
)

// Deps is what a Factory may use to build an adapter.
type Deps struct {
	// HTTPClient carries every call to the provider (its Timeout bounds
	// each call). Nil means http.DefaultClient.
	HTTPClient *http.Client
	// Now is the adapter's clock (quota resets, date windows); nil means
	// time.Now.
	Now func() time.Time
	// Quotas keeps the quotas an adapter tracks (daily per-account calls),
	// shared by every worker; nil keeps them in the adapter's memory.
	Quotas resilience.QuotaStore
}

// Factory builds one provider's adapter.
type Factory func(Deps) Provider

// Registry maps a provider name to what its adapter declares and to the
// factory of its adapter. Build one with NewRegistry and Register
// (providers/all registers every adapter). It is not safe for concurrent
// Register calls; register everything before use.
type Registry struct {
	factories map[string]Factory
	// descs keeps the descriptions in registration order.
	descs []Description
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{factories: map[string]Factory{}}
}

// Register adds a provider under d.Name. An empty name or a name
// registered twice is a programming error and panics.
func (r *Registry) Register(d Description, f Factory) {
	if d.Name == "" {
		panic("providers: Register with an empty provider name")
	}
	if _, dup := r.factories[d.Name]; dup {
		panic(fmt.Sprintf("providers: %q registered twice", d.Name))
	}
	r.factories[d.Name] = f
	r.descs = append(r.descs, d)
}

// Describe returns what the named provider declares; ok is false when it
// is not registered.
func (r *Registry) Describe(name string) (d Description, ok bool) {
	for _, d := range r.descs {
		if d.Name == name {
			return d, true
		}
	}
	return Description{}, false
}

// Descriptions returns every provider's description in registration order
// (a fresh slice; the order documents use, so that they stay stable).
func (r *Registry) Descriptions() []Description {
	return append([]Description(nil), r.descs...)
}

// Profiles returns every provider's profile in registration order: the
// plain data handed to the layers that must not import the adapters.
func (r *Registry) Profiles() []domain.ProviderProfile {
	out := make([]domain.ProviderProfile, len(r.descs))
	for i, d := range r.descs {
		out[i] = d.ProviderProfile
	}
	return out
}

// New builds the adapter registered under name.
func (r *Registry) New(name string, deps Deps) (Provider, error) {
	f, ok := r.factories[name]
	if !ok {
		return nil, fmt.Errorf("providers: unknown provider %q", name)
	}
	if deps.HTTPClient == nil {
		deps.HTTPClient = http.DefaultClient
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	return f(deps), nil
}

// Has reports whether name is registered.
func (r *Registry) Has(name string) bool {
	_, ok := r.factories[name]
	return ok
}

// Names lists the registered providers, sorted.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.factories))
	for n := range r.factories {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
