// Package all registers every provider adapter finsync ships. Adding a
// provider is one line in NewRegistry.
package all

import (
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/plaid"
)

// NewRegistry returns a registry holding every adapter.
func NewRegistry() *providers.Registry {
	r := providers.NewRegistry()
	r.Register(domain.ProviderPlaid, func(d providers.Deps) providers.Provider { return plaid.New(d.HTTPClient) })
	return r
}
