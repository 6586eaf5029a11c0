package gocardless

import (
	"net/http"
	"strings"
	"testing"

	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/providertest"
)

func recordingSuite() providertest.Suite {
	return providertest.Suite{
		Provider: Name,
		New:      func(c *http.Client) providers.Provider { return New(c) },
		BaseURL:  func(root string) string { return root + "/api/v2" },
	}
}

// TestDecodeAgreesWithEncodingJSON decodes every answer the simulator
// gives the adapter into the adapter's own types, with wire.Decode and with
// encoding/json, and requires the same values.
func TestDecodeAgreesWithEncodingJSON(t *testing.T) {
	providertest.CheckDecoding(t, recordingSuite(), 1500, []string{"/token/new/", "/requisitions/{id}/", "/agreements/enduser/{id}/", "/institutions/{id}/", "/accounts/{id}/details/", "/accounts/{id}/balances/", "/accounts/{id}/transactions/"}, answerKind, answerType)
}

// answerKind names the kind of answer at path: its path with the ids
// replaced by {id}.
func answerKind(path string) string {
	parts := strings.Split(strings.TrimPrefix(path, "/api/v2/"), "/")
	if len(parts) > 1 && (parts[0] == "requisitions" || parts[0] == "institutions" || parts[0] == "accounts") {
		parts[1] = "{id}"
	}
	if len(parts) > 2 && parts[0] == "agreements" {
		parts[2] = "{id}"
	}
	return "/" + strings.Join(parts, "/")
}

// answerType is a fresh value of the type the adapter decodes an answer
// of kind into (nil: unknown).
func answerType(kind string) any {
	switch kind {
	case "/token/new/", "/token/refresh/":
		return new(tokenResponse)
	case "/requisitions/{id}/":
		return new(requisition)
	case "/agreements/enduser/{id}/":
		return new(agreement)
	case "/institutions/{id}/":
		return new(institution)
	case "/accounts/{id}/details/":
		return new(accountDetails)
	case "/accounts/{id}/balances/":
		return new(balancesResponse)
	case "/accounts/{id}/transactions/":
		return new(transactionsResponse)
	}
	return nil
}
