package sim

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Credentials returns connection credentials for provider, in the shape the
// adapters store, that the simulator accepts. They are deterministic from
// name, so one name always designates the same simulated connection. It
// returns nil for an unknown provider.
func Credentials(provider, name string) json.RawMessage {
	h := hashString(0x5eed, provider, name)
	var v any
	switch provider {
	case Plaid:
		v = map[string]string{
			"client_id":    string(appendHex(nil, h, 24)),
			"secret":       string(appendHex(nil, mix(h), 30)),
			"access_token": "access-sandbox-" + uuidFrom(mix(h+1)),
		}
	case GoCardless:
		v = map[string]string{
			"secret_id":      uuidFrom(h),
			"secret_key":     string(appendHex(nil, mix(h), 128)),
			"requisition_id": uuidFrom(mix(h + 1)),
		}
	case Stripe:
		v = map[string]string{
			"api_key": "sk_test_" + string(appendAlnum(nil, h, 99)),
			"account": "acct_" + string(appendAlnum(nil, mix(h), 16)),
		}
	case Mercury:
		v = map[string]string{
			"token": "secret-token:mercury_sandbox_wma_" + string(appendAlnum(nil, h, 40)),
		}
	default:
		return nil
	}
	b, _ := json.Marshal(v)
	return b
}

// CredentialKey returns the distinguishing credential of a credentials
// object: the key under which the simulator generates the connection's data
// and that ConnectionSettings.Credential expects.
func CredentialKey(provider string, creds json.RawMessage) (string, error) {
	var c map[string]string
	if err := json.Unmarshal(creds, &c); err != nil {
		return "", fmt.Errorf("credential key: decode %s credentials: %w", provider, err)
	}
	var key string
	switch provider {
	case Plaid:
		key = c["access_token"]
	case GoCardless:
		key = c["requisition_id"]
	case Stripe:
		key = stripeKey(c["api_key"], c["account"])
	case Mercury:
		key = c["token"]
	default:
		return "", fmt.Errorf("credential key: unknown provider %q", provider)
	}
	if key == "" {
		return "", fmt.Errorf("credential key: %s credentials lack their distinguishing field", provider)
	}
	return key, nil
}

// stripeKey is the connection key of a Stripe API key and optional
// connected account.
func stripeKey(apiKey, account string) string {
	if account == "" {
		return apiKey
	}
	return apiKey + "/" + account
}

// isToken reports whether s is 1..maxLen characters of [A-Za-z0-9_-].
func isToken(s string, minLen, maxLen int) bool {
	if len(s) < minLen || len(s) > maxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// validPlaidAccessToken reports whether t has the form
// access-<environment>-<identifier>.
func validPlaidAccessToken(t string) bool {
	for _, env := range []string{"access-sandbox-", "access-development-", "access-production-"} {
		if rest, ok := strings.CutPrefix(t, env); ok {
			return isToken(rest, 8, 128)
		}
	}
	return false
}

// validStripeKey reports whether k looks like a Stripe secret or
// restricted key.
func validStripeKey(k string) bool {
	for _, p := range []string{"sk_test_", "sk_live_", "rk_test_", "rk_live_"} {
		if rest, ok := strings.CutPrefix(k, p); ok {
			return isToken(rest, 8, 255)
		}
	}
	return false
}

// validMercuryToken reports whether t looks like a Mercury API token.
func validMercuryToken(t string) bool {
	rest, ok := strings.CutPrefix(t, "secret-token:")
	return ok && isToken(rest, 8, 255)
}

// isUUID reports whether s is a canonical lowercase or uppercase UUID.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return false
			}
			continue
		}
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}
