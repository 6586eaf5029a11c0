package providers

import (
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/resilience"
)

// Description is everything an adapter declares about its provider, so that
// nothing outside the adapter's package asks "which provider?". The
// registry keeps one per provider; Provider.Describe returns the same value.
type Description struct {
	// ProviderProfile is what the core (worker, storage, API) acts on; its
	// Name is the registry key.
	domain.ProviderProfile
	// DefaultBaseURL is the provider's production API root, used when a
	// connection is added without a base URL.
	DefaultBaseURL string
	// Credentials is the schema of the JSON object a connection's
	// credentials are, in the order to document them.
	Credentials []CredentialField
	// Limits are the rate limits the provider documents, applied by
	// NewResilient unless its Config sets others.
	Limits Limits
}

// CredentialField is one key of a provider's credentials object.
type CredentialField struct {
	// Key is the JSON key.
	Key string
	// Required says that a connection cannot sync without it (a non-empty
	// string).
	Required bool
	// Doc says what the value is, in a few words.
	Doc string
}

// MissingCredentials lists the required keys of d.Credentials that creds
// (a JSON object already decoded) lacks or holds as an empty or non-string
// value. It checks presence only; the adapter still validates the values.
func (d Description) MissingCredentials(creds map[string]any) []string {
	var out []string
	for _, f := range d.Credentials {
		if !f.Required {
			continue
		}
		if s, ok := creds[f.Key].(string); !ok || s == "" {
			out = append(out, f.Key)
		}
	}
	return out
}

// Limits are a provider's rate limits (an alias of resilience.Limits, so
// that an adapter declares them without importing the guard).
type Limits = resilience.Limits

// PerMinute is a limit of n calls a minute with bursts of burst.
func PerMinute(n, burst int) resilience.Limit { return resilience.PerMinute(n, burst) }

// PerSecond is a limit of n calls a second with bursts of burst.
func PerSecond(n, burst int) resilience.Limit { return resilience.PerSecond(n, burst) }
