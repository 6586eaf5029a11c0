package gocardless

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/providertest"
)

// gocardlessSpec is the published description of the GoCardless Bank
// Account Data operations the adapter calls (see testdata/SOURCES.md),
// loaded once per test binary.
var gocardlessSpec = sync.OnceValues(func() (*providertest.Spec, error) {
	return providertest.LoadSpec("testdata/gocardless-bad-v2.excerpt.yaml")
})

// specOperations are all the GoCardless operations the adapter calls.
var specOperations = []string{
	"POST /api/v2/token/new/",
	"POST /api/v2/token/refresh/",
	"GET /api/v2/requisitions/{id}/",
	"GET /api/v2/agreements/enduser/{id}/",
	"GET /api/v2/institutions/{id}/",
	"GET /api/v2/accounts/{id}/details/",
	"GET /api/v2/accounts/{id}/balances/",
	"GET /api/v2/accounts/{id}/transactions/",
}

// TestSimulatorFollowsPublishedSpec checks every answer the simulator gives
// the adapter, errors included, against GoCardless's published
// description. The adapter's clock moves a day after the first calls, so
// that it renews its access token with token/refresh/.
func TestSimulatorFollowsPublishedSpec(t *testing.T) {
	spec, err := gocardlessSpec()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := providertest.Suite{
		Provider: Name,
		New:      func(c *http.Client) providers.Provider { return New(c, WithClock(clock)) },
		BaseURL:  func(root string) string { return root + "/api/v2" },
	}
	providertest.CheckSpec(t, s, 1500, spec, specOperations, func(t *testing.T, r *providertest.Recording) {
		mu.Lock()
		now = now.Add(23 * time.Hour)
		mu.Unlock()
		if _, err := r.Provider.Accounts(t.Context(), r.Conn); err != nil {
			t.Fatalf("Accounts after the access token expired: %v", err)
		}
	})
}
