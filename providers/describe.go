package providers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

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

// CheckCredentials reports why raw is not a credentials object of d's
// schema: it must be one JSON object whose keys are all declared in
// d.Credentials (each once), whose values are non-blank strings, and that
// holds every required key. The error names the offending keys and the
// accepted ones, never a value. Caveat: it checks the shape only; whether
// the provider accepts the values is known only by calling it.
func (d Description) CheckCredentials(raw []byte) error {
	declared := make(map[string]bool, len(d.Credentials))
	for _, f := range d.Credentials {
		declared[f.Key] = true
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return fmt.Errorf("credentials for %s must be a JSON object with the keys %s", d.Name, d.credentialKeys())
	}
	seen := map[string]bool{}
	var problems []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("credentials for %s are not valid JSON: %w", d.Name, err)
		}
		key, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return fmt.Errorf("credentials for %s are not valid JSON: %w", d.Name, err)
		}
		switch {
		case !declared[key]:
			problems = append(problems, fmt.Sprintf("unknown key %q", key))
		case seen[key]:
			problems = append(problems, fmt.Sprintf("%s given twice", key))
		default:
			var str string
			if err := json.Unmarshal(value, &str); err != nil || value[0] != '"' {
				problems = append(problems, key+" must be a string")
			} else if strings.TrimSpace(str) == "" {
				problems = append(problems, key+" is empty")
			}
		}
		seen[key] = true
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("credentials for %s are not valid JSON: %w", d.Name, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("credentials for %s must be one JSON object, with nothing after it", d.Name)
	}
	for _, f := range d.Credentials {
		if f.Required && !seen[f.Key] {
			problems = append(problems, "lacks "+f.Key)
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("credentials for %s: %s (keys: %s)", d.Name, strings.Join(problems, "; "), d.credentialKeys())
	}
	return nil
}

// credentialKeys lists the declared keys, optional ones marked with "?".
func (d Description) credentialKeys() string {
	keys := make([]string, 0, len(d.Credentials))
	for _, f := range d.Credentials {
		k := f.Key
		if !f.Required {
			k += "?"
		}
		keys = append(keys, k)
	}
	return strings.Join(keys, ", ")
}

// Limits are a provider's rate limits (an alias of resilience.Limits, so
// that an adapter declares them without importing the guard).
type Limits = resilience.Limits

// PerMinute is a limit of n calls a minute with bursts of burst.
func PerMinute(n, burst int) resilience.Limit { return resilience.PerMinute(n, burst) }

// PerSecond is a limit of n calls a second with bursts of burst.
func PerSecond(n, burst int) resilience.Limit { return resilience.PerSecond(n, burst) }
