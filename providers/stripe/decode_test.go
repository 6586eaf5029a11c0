package stripe

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
	}
}

// TestDecodeAgreesWithEncodingJSON decodes every answer the simulator
// gives the adapter into the adapter's own types, with wire.Decode and with
// encoding/json, and requires the same values.
func TestDecodeAgreesWithEncodingJSON(t *testing.T) {
	providertest.CheckDecoding(t, recordingSuite(), 1500, []string{"/v1/balance", "/v1/balance_transactions", "/v1/balance_transactions/{id}"}, answerKind, answerType)
}

// answerKind names the kind of answer at path.
func answerKind(path string) string {
	if strings.HasPrefix(path, "/v1/balance_transactions/") {
		return "/v1/balance_transactions/{id}"
	}
	return path
}

// answerType is a fresh value of the type the adapter decodes an answer
// of kind into (nil: unknown).
func answerType(kind string) any {
	switch kind {
	case "/v1/balance":
		return new(balance)
	case "/v1/balance_transactions":
		return new(list)
	case "/v1/balance_transactions/{id}":
		return new(balanceTransaction)
	}
	return nil
}
