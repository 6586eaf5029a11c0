package stripe

import (
	"sync"
	"testing"

	"github.com/finsync/finsync/providers/providertest"
)

// stripeSpec is Stripe's published OpenAPI description (see
// testdata/SOURCES.md), loaded once per test binary: it takes seconds.
var stripeSpec = sync.OnceValues(func() (*providertest.Spec, error) {
	return providertest.LoadSpec("testdata/stripe-spec3.json.gz")
})

// specOperations are all the Stripe operations the adapter calls.
var specOperations = []string{
	"GET /v1/balance",
	"GET /v1/balance_transactions",
	"GET /v1/balance_transactions/{id}",
}

// TestSimulatorFollowsPublishedSpec checks every answer the simulator gives
// the adapter, errors included, against Stripe's published description.
func TestSimulatorFollowsPublishedSpec(t *testing.T) {
	spec, err := stripeSpec()
	if err != nil {
		t.Fatal(err)
	}
	providertest.CheckSpec(t, recordingSuite(), 1500, spec, specOperations, nil)
}
