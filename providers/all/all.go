// Package all registers every provider adapter finsync ships. Adding a
// provider is one line in NewRegistry; with allsim (its simulator's line)
// this is the only place outside the providers' own folders that names them.
// The registration order is the order documents list the providers in.
package all

import (
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/enablebanking"
	"github.com/finsync/finsync/providers/gocardless"
	"github.com/finsync/finsync/providers/mercury"
	"github.com/finsync/finsync/providers/plaid"
	"github.com/finsync/finsync/providers/simplefin"
	"github.com/finsync/finsync/providers/stripe"
)

// NewRegistry returns a registry holding every adapter.
func NewRegistry() *providers.Registry {
	r := providers.NewRegistry()
	r.Register(plaid.Describe(), func(d providers.Deps) providers.Provider { return plaid.New(d.HTTPClient) })
	r.Register(gocardless.Describe(), func(d providers.Deps) providers.Provider {
		return gocardless.New(d.HTTPClient, gocardless.WithClock(d.Now), gocardless.WithQuotas(d.Quotas))
	})
	r.Register(stripe.Describe(), func(d providers.Deps) providers.Provider {
		return stripe.New(d.HTTPClient, stripe.WithClock(d.Now))
	})
	r.Register(mercury.Describe(), func(d providers.Deps) providers.Provider {
		return mercury.New(d.HTTPClient, mercury.WithClock(d.Now))
	})
	r.Register(simplefin.Describe(), func(d providers.Deps) providers.Provider {
		return simplefin.New(d.HTTPClient, simplefin.WithClock(d.Now))
	})
	r.Register(enablebanking.Describe(), enablebanking.New)
	return r
}
