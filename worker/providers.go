package worker

import (
	"fmt"
	"net/http"
	"time"

	"github.com/finsync/finsync/providers"
)

// ProviderOptions tune the adapters the worker builds.
type ProviderOptions struct {
	// HTTPClient carries provider calls; nil uses a client with a 30 s timeout.
	HTTPClient *http.Client
	// Unlimited turns the local rate limiters off, for the simulator in
	// demos and benchmarks; real providers keep their documented limits.
	Unlimited bool
}

// NewProviders builds every registered adapter behind the shared resilience
// layer. One value per provider is shared by all sync jobs of the process,
// so its breakers and limiters see all of the provider's traffic.
func NewProviders(reg *providers.Registry, opts ProviderOptions) (map[string]providers.Provider, error) {
	client := opts.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	out := make(map[string]providers.Provider)
	for _, name := range reg.Names() {
		p, err := reg.New(name, providers.Deps{HTTPClient: client})
		if err != nil {
			return nil, fmt.Errorf("build %s adapter: %w", name, err)
		}
		var cfg providers.Config
		if opts.Unlimited {
			cfg.Limits = &providers.Limits{}
		}
		out[name] = providers.NewResilient(p, cfg)
	}
	return out, nil
}
