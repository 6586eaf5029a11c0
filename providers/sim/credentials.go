package sim

import (
	"strings"
)

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
