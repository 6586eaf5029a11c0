package providers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/internal/strictjson"
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
	// Settings is the schema of the provider-level settings an operator
	// sets once for every connection (an application's id and key), stored
	// sealed; the worker merges them under each connection's credentials
	// (MergeSettings). A connection's credentials may carry a settings key
	// too (optional there), which then wins for that connection. Nil when
	// the provider has none.
	Settings []CredentialField
	// Limits are the rate limits the provider documents, applied by
	// NewResilient unless its Config sets others.
	Limits resilience.Limits
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
// d.Credentials or d.Settings (each once), whose values are non-blank
// strings, and that holds every key d.Credentials requires. The error
// names the offending keys and the accepted ones, never a value. Caveat:
// it checks the shape only (MissingSettings checks the merged object);
// whether the provider accepts the values is known only by calling it.
func (d Description) CheckCredentials(raw []byte) error {
	return checkObject("credentials for "+d.Name, d.ConnectionFields(), raw)
}

// ConnectionFields are the keys a connection's credentials may hold: those
// of d.Credentials, then those of d.Settings, optional there.
func (d Description) ConnectionFields() []CredentialField {
	out := append([]CredentialField(nil), d.Credentials...)
	for _, f := range d.Settings {
		f.Required = false
		out = append(out, f)
	}
	return out
}

// MissingSettings lists the keys d.Settings requires that merged (a
// connection's credentials with the provider's settings under them,
// MergeSettings) lacks or holds empty: set them once for the provider, or
// give them in the connection's credentials. It never shows a value.
func (d Description) MissingSettings(merged []byte) []string {
	var m map[string]any
	_ = json.Unmarshal(merged, &m)
	return Description{Credentials: d.Settings}.MissingCredentials(m)
}

// CheckSettings is CheckCredentials for d.Settings, the provider-level
// settings; a provider that declares none accepts none.
func (d Description) CheckSettings(raw []byte) error {
	if len(d.Settings) == 0 {
		return fmt.Errorf("%s has no provider settings", d.Name)
	}
	return checkObject("settings for "+d.Name, d.Settings, raw)
}

// checkObject checks raw against the fields (see CheckCredentials); what
// names the object in errors.
func checkObject(what string, fields []CredentialField, raw []byte) error {
	members, err := strictjson.Members(raw)
	if err != nil {
		return objectError(what, fields, err)
	}
	seen := map[string]bool{}
	var problems []string
	for _, m := range members {
		seen[m.Name] = true
		if p := memberProblem(fields, m.Name, m.Value); p != "" {
			problems = append(problems, p)
		}
	}
	for _, f := range fields {
		if f.Required && !seen[f.Key] {
			problems = append(problems, "lacks "+f.Key)
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s: %s (keys: %s)", what, strings.Join(problems, "; "), fieldKeys(fields))
	}
	return nil
}

// memberProblem says what is wrong with one member (an undeclared key, a
// value that is not a non-blank string), or "". It never shows the value.
func memberProblem(fields []CredentialField, key string, value []byte) string {
	if !slices.ContainsFunc(fields, func(f CredentialField) bool { return f.Key == key }) {
		return fmt.Sprintf("unknown key %q", key)
	}
	var str string
	if len(value) == 0 || value[0] != '"' || json.Unmarshal(value, &str) != nil {
		return key + " must be a string"
	}
	if strings.TrimSpace(str) == "" {
		return key + " is empty"
	}
	return ""
}

// objectError words strictjson's refusal of raw as operators read it: a
// duplicate key as "given twice", one inside a value as the problem with
// that value (it is no string), the library's own words for malformed
// JSON, which name no value.
func objectError(what string, fields []CredentialField, err error) error {
	var dup *strictjson.DuplicateError
	switch {
	case errors.Is(err, strictjson.ErrNotObject):
		return fmt.Errorf("%s must be a JSON object with the keys %s", what, fieldKeys(fields))
	case errors.Is(err, strictjson.ErrTrailingData):
		return fmt.Errorf("%s must be one JSON object, with nothing after it", what)
	case errors.As(err, &dup) && dup.Outer() == "":
		return fmt.Errorf("%s: %s given twice (keys: %s)", what, dup.Name, fieldKeys(fields))
	case errors.As(err, &dup):
		problem := memberProblem(fields, dup.Outer(), []byte("{}"))
		return fmt.Errorf("%s: %s (keys: %s)", what, problem, fieldKeys(fields))
	}
	return fmt.Errorf("%s are not valid JSON: %w", what, err)
}

// MergeSettings returns a connection's credentials with the provider's
// settings under them: one JSON object holding every key of both, the
// connection's value winning where both have one (so credentials that
// carry everything keep working). Empty settings return creds unchanged.
// Either being anything but a JSON object is an error that shows no value.
func MergeSettings(settings, creds json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(settings)) == 0 {
		return creds, nil
	}
	var merged, own map[string]json.RawMessage
	if err := json.Unmarshal(settings, &merged); err != nil || merged == nil {
		return nil, errors.New("provider settings are not a JSON object")
	}
	if err := json.Unmarshal(creds, &own); err != nil || own == nil {
		return nil, errors.New("connection credentials are not a JSON object")
	}
	maps.Copy(merged, own)
	out, err := json.Marshal(merged)
	if err != nil {
		return nil, errors.New("merge provider settings: cannot encode")
	}
	return out, nil
}

// fieldKeys lists the declared keys, optional ones marked with "?".
func fieldKeys(fields []CredentialField) string {
	keys := make([]string, 0, len(fields))
	for _, f := range fields {
		k := f.Key
		if !f.Required {
			k += "?"
		}
		keys = append(keys, k)
	}
	return strings.Join(keys, ", ")
}
