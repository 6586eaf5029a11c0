package worker

import (
	"fmt"
	"net/http"
	"time"

	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/resilience"
)

// ProviderOptions tune the adapters the worker builds.
type ProviderOptions struct {
	// HTTPClient carries provider calls; nil uses a client with a 30 s timeout.
	HTTPClient *http.Client
	// Unlimited turns the rate limiters off, for the simulator in demos and
	// benchmarks; real providers keep their documented limits.
	Unlimited bool
	// Rates keeps the providers' rate limits for every worker together
	// (storage.Store); nil limits each process on its own.
	Rates resilience.RateStore
	// Quotas keeps the providers' quotas (GoCardless daily calls per
	// account) for every worker together and across restarts
	// (storage.Store); nil keeps them in each adapter's memory.
	Quotas resilience.QuotaStore
	// Metrics records every call to a provider; nil records none.
	Metrics *Metrics
	// Now is the adapters' clock (date windows, quota days); give the
	// Syncer's Now too, so that "today" is one day for both (a simulator's
	// clock in tests and demos). Nil means time.Now.
	Now func() time.Time
}

// NewProviders builds every registered adapter behind the shared resilience
// layer. One value per provider is shared by all sync jobs of the process,
// so its breakers see all of the process's traffic to the provider; its
// rate limits and quotas, with Rates and Quotas set, hold for the fleet.
func NewProviders(reg *providers.Registry, opts ProviderOptions) (map[string]providers.Provider, error) {
	client := opts.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	out := make(map[string]providers.Provider)
	for _, name := range reg.Names() {
		p, err := reg.New(name, providers.Deps{HTTPClient: client, Quotas: opts.Quotas, Now: opts.Now})
		if err != nil {
			return nil, fmt.Errorf("build %s adapter: %w", name, err)
		}
		cfg := resilience.Config{Store: opts.Rates}
		if opts.Unlimited {
			cfg.Limits = &resilience.Limits{}
		}
		var ro []providers.ResilientOption
		if opts.Metrics != nil {
			ro = append(ro, providers.WithCallObserver(opts.Metrics.ObserveProviderCall))
		}
		out[name] = providers.NewResilient(p, cfg, ro...)
	}
	return out, nil
}
