// Package allsim registers every provider simulator finsync ships, as
// package all registers the adapters: adding a provider is one line in
// Providers. Whoever builds a whole simulator (finsync sim and dev, the
// tests, the benchmarks) takes the list from here, since the simulator
// host (package sim) names no provider.
package allsim

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/finsync/finsync/providers/enablebanking/enablebankingsim"
	"github.com/finsync/finsync/providers/gocardless/gocardlesssim"
	"github.com/finsync/finsync/providers/mercury/mercurysim"
	"github.com/finsync/finsync/providers/plaid/plaidsim"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/simplefin/simplefinsim"
	"github.com/finsync/finsync/providers/stripe/stripesim"
)

// Providers returns every simulated provider, in the order the adapters
// are registered.
func Providers() sim.Providers {
	return sim.Providers{
		plaidsim.Sim{},
		gocardlesssim.Sim{},
		stripesim.Sim{},
		mercurysim.Sim{},
		simplefinsim.Sim{},
		enablebankingsim.Sim{},
	}
}

// New returns a simulator configured by opts that serves every provider.
func New(opts sim.Options) *sim.Simulator {
	return sim.New(opts, Providers()...)
}

// Credentials returns credentials for provider that the simulator accepts,
// deterministic from name (see sim.Providers.Credentials); nil for an
// unknown provider.
func Credentials(provider, name string) json.RawMessage {
	return Providers().Credentials(provider, name)
}

// CredentialKey returns the distinguishing credential of a credentials
// object, the key ConnectionSettings.Credential expects (see
// sim.Providers.CredentialKey).
func CredentialKey(provider string, creds json.RawMessage) (string, error) {
	return Providers().CredentialKey(provider, creds)
}

// BaseURL returns the base URL an adapter for provider uses to reach a
// simulator served at root (see sim.Providers.BaseURL).
func BaseURL(provider, root string) string {
	return Providers().BaseURL(provider, root)
}

// Settings returns provider-level settings the simulator accepts for
// provider, nil when it has none (see sim.Providers.Settings).
func Settings(provider string) json.RawMessage {
	return Providers().Settings(provider)
}

// OwnCredentials returns Credentials without the keys of the provider's
// settings (see sim.Providers.OwnCredentials).
func OwnCredentials(provider, name string) json.RawMessage {
	return Providers().OwnCredentials(provider, name)
}

// Link returns a new connection's credentials from the simulator at root,
// by the provider's link flow where it has one (see sim.Providers.Link).
func Link(ctx context.Context, client *http.Client, provider, root, name string, settings json.RawMessage) (json.RawMessage, error) {
	return Providers().Link(ctx, client, provider, root, name, settings)
}
