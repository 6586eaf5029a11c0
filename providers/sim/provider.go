package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"

	"github.com/finsync/finsync/providers/sim/simkit"
)

// ProviderSim is one provider's simulated API, mounted by a Simulator:
// the Simulator keeps the clock, the connections and the faults, and asks
// the ProviderSim for everything that is the provider's own (its paths,
// endpoints, error bodies and credentials). A ProviderSim value holds no
// state of its own: what a provider keeps for one Simulator lives in what
// Route builds, so one value may be mounted by many Simulators.
type ProviderSim interface {
	// Name is the provider's name, as faults, connection settings and
	// Credentials know it.
	Name() string
	// Prefix is the path prefix the provider's API lives under (for
	// example "/api/v2/"); "/" serves every path no other provider claims.
	Prefix() string
	// Route registers the provider's endpoints on mux, served by h.
	Route(h *Simulator, mux *http.ServeMux)
	// WriteFault answers a request with the provider's real error for an
	// injected outage (FaultOutage: its 5xx) or rate limit
	// (FaultRateLimit: its 429 and headers).
	WriteFault(w http.ResponseWriter, r *http.Request, mode string)
	// ExtraFaults lists the fault modes the provider supports beyond
	// outage, rate_limit, latency, login_required and malformed.
	ExtraFaults() []string
	// Credentials returns credentials, in the shape the provider's adapter
	// stores, that the simulator accepts, deterministic from name.
	Credentials(name string) json.RawMessage
	// CredentialKey returns the distinguishing credential of decoded
	// credentials ("" when it is missing).
	CredentialKey(c map[string]string) string
	// BaseURL returns the base URL an adapter uses to reach the
	// simulator's root.
	BaseURL(root string) string
}

// SettingsSim is implemented by a ProviderSim whose provider has
// provider-level settings (providers.Description.Settings: an
// application's id and key, set once for every connection).
type SettingsSim interface {
	// Settings returns settings the simulator accepts, whose keys
	// Credentials carries too.
	Settings() json.RawMessage
}

// LinkSim is implemented by a ProviderSim whose provider links a
// connection through a flow (an authorisation page the user approves, a
// redirect with a code, the code exchanged for a session) rather than
// credentials the user types.
type LinkSim interface {
	// Link runs the flow as a client would against the simulator served at
	// root (its authorisation page approves at once), for the application
	// in settings (nil: the simulator's own, Settings), and returns the
	// connection's credentials: without the settings' keys when settings
	// are given, with them otherwise. name may choose among the banks.
	Link(ctx context.Context, client *http.Client, root, name string, settings json.RawMessage) (json.RawMessage, error)
}

// Providers is a list of simulated providers, each named once. The
// registration package providers/all/allsim returns the one finsync ships.
type Providers []ProviderSim

// Lookup returns the simulated provider named name, or nil.
func (ps Providers) Lookup(name string) ProviderSim {
	for _, p := range ps {
		if p.Name() == name {
			return p
		}
	}
	return nil
}

// Names returns the providers' names in list order.
func (ps Providers) Names() []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.Name())
	}
	return out
}

// forPath returns the simulated provider whose prefix is the longest to
// match path, or nil.
func (ps Providers) forPath(path string) ProviderSim {
	var best ProviderSim
	for _, p := range ps {
		if strings.HasPrefix(path, p.Prefix()) && (best == nil || len(p.Prefix()) > len(best.Prefix())) {
			best = p
		}
	}
	return best
}

// Credentials returns connection credentials for provider, in the shape the
// adapters store, that the simulator accepts. They are deterministic from
// name, so one name always designates the same simulated connection. It
// returns nil for a provider not in the list.
func (ps Providers) Credentials(provider, name string) json.RawMessage {
	p := ps.Lookup(provider)
	if p == nil {
		return nil
	}
	return p.Credentials(name)
}

// Settings returns provider-level settings the simulator accepts for
// provider (see SettingsSim), nil when it has none.
func (ps Providers) Settings(provider string) json.RawMessage {
	if p, ok := ps.Lookup(provider).(SettingsSim); ok {
		return p.Settings()
	}
	return nil
}

// OwnCredentials returns Credentials without the keys of the provider's
// Settings: what a connection stores once the settings are set for the
// provider. It is Credentials for a provider without settings.
func (ps Providers) OwnCredentials(provider, name string) json.RawMessage {
	creds, settings := ps.Credentials(provider, name), ps.Settings(provider)
	var own, shared map[string]json.RawMessage
	if settings == nil || json.Unmarshal(creds, &own) != nil || json.Unmarshal(settings, &shared) != nil {
		return creds
	}
	maps.DeleteFunc(own, func(k string, _ json.RawMessage) bool { _, ok := shared[k]; return ok })
	out, _ := json.Marshal(own)
	return out
}

// Link returns a new connection's credentials for provider from the
// simulator served at root: by its link flow where it has one (LinkSim),
// else OwnCredentials(name) when settings are given and Credentials(name)
// when not. A name with a relink generation (simkit.SplitRelink) designates
// the same data linked again: its pre-made credentials, without the flow,
// whose sessions are always new data.
func (ps Providers) Link(ctx context.Context, client *http.Client, provider, root, name string, settings json.RawMessage) (json.RawMessage, error) {
	p := ps.Lookup(provider)
	if p == nil {
		return nil, fmt.Errorf("link: unknown provider %q", provider)
	}
	_, gen := simkit.SplitRelink(name)
	if l, ok := p.(LinkSim); ok && gen == 0 {
		return l.Link(ctx, client, strings.TrimSuffix(root, "/"), name, settings)
	}
	if settings != nil {
		return ps.OwnCredentials(provider, name), nil
	}
	return p.Credentials(name), nil
}

// CredentialKey returns the distinguishing credential of a credentials
// object: the key under which the simulator generates the connection's data
// and that ConnectionSettings.Credential expects.
func (ps Providers) CredentialKey(provider string, creds json.RawMessage) (string, error) {
	p := ps.Lookup(provider)
	if p == nil {
		return "", fmt.Errorf("credential key: unknown provider %q", provider)
	}
	var c map[string]string
	if err := json.Unmarshal(creds, &c); err != nil {
		return "", fmt.Errorf("credential key: decode %s credentials: %w", provider, err)
	}
	key := p.CredentialKey(c)
	if key == "" {
		return "", fmt.Errorf("credential key: %s credentials lack their distinguishing field", provider)
	}
	return key, nil
}

// BaseURL returns the base URL an adapter for provider uses to reach a
// simulator served at root, as the real provider's documented base URL
// has it (the root itself for a provider not in the list).
func (ps Providers) BaseURL(provider, root string) string {
	root = strings.TrimSuffix(root, "/")
	if p := ps.Lookup(provider); p != nil {
		return p.BaseURL(root)
	}
	return root
}
