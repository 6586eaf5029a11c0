package worker

import (
	"context"
	"fmt"

	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/resilience"
)

// CodeSettingsUnreadable is recorded on a connection whose provider's
// stored settings the configured encryption key cannot open, or that are
// not a JSON object.
const CodeSettingsUnreadable = "PROVIDER_SETTINGS_UNREADABLE"

// withSettings returns a connection's opened credentials with its
// provider's settings (set once by an operator, sealed) merged under them,
// the connection's own keys winning; creds as they are when the provider
// has none set. A settings failure is a *resilience.Error of class
// Permanent (no retry can open them), whose message shows no value.
func (s *Syncer) withSettings(ctx context.Context, provider string, creds []byte) ([]byte, error) {
	sealed, err := s.Store.GetProviderSettings(ctx, provider)
	if err != nil || sealed == nil {
		return creds, err
	}
	settings, err := s.Box.Open(sealed)
	if err == nil {
		var merged []byte
		if merged, err = providers.MergeSettings(settings, creds); err == nil {
			return merged, nil
		}
	}
	return nil, &resilience.Error{Provider: provider, Class: resilience.Permanent, Code: CodeSettingsUnreadable,
		Message: fmt.Sprintf("the %s settings cannot be opened with the configured key or merged with the connection's credentials", provider), Err: err}
}
