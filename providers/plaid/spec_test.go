package plaid

import (
	"sync"
	"testing"

	"github.com/finsync/finsync/providers/providertest"
)

// plaidSpec is Plaid's published OpenAPI description (see
// testdata/SOURCES.md), loaded once per test binary: it takes over a second.
var plaidSpec = sync.OnceValues(func() (*providertest.Spec, error) {
	return providertest.LoadSpec("testdata/plaid-2020-09-14.yml.gz")
})

// specOperations are all the Plaid operations the adapter calls.
var specOperations = []string{
	"POST /accounts/get",
	"POST /liabilities/get",
	"POST /transactions/sync",
	"POST /investments/holdings/get",
	"POST /investments/transactions/get",
}

// TestSimulatorFollowsPublishedSpec checks every answer the simulator gives
// the adapter, errors included, against Plaid's published description.
func TestSimulatorFollowsPublishedSpec(t *testing.T) {
	spec, err := plaidSpec()
	if err != nil {
		t.Fatal(err)
	}
	providertest.CheckSpec(t, recordingSuite(), 1500, spec, specOperations, nil)
}
