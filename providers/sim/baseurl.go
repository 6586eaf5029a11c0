package sim

import "strings"

// BaseURL returns the base URL an adapter for provider uses to reach a
// simulator served at root: the root itself for Plaid and Stripe, and the
// versioned API prefix for GoCardless (/api/v2) and Mercury (/api/v1), as
// the real providers' documented base URLs have.
func BaseURL(provider, root string) string {
	root = strings.TrimSuffix(root, "/")
	switch provider {
	case GoCardless:
		return root + "/api/v2"
	case Mercury:
		return root + "/api/v1"
	}
	return root
}
