package mercurysim

import (
	"testing"

	"github.com/finsync/finsync/providers/sim/simkit"
)

// TestEveryMerchantIsCategorised checks that every catalogue entry has this
// provider's view, so that no row goes out with empty categories.
func TestEveryMerchantIsCategorised(t *testing.T) {
	for k := simkit.Checking; k < simkit.AccountKinds; k++ {
		for _, m := range simkit.Catalog(k) {
			if _, ok := mercuryCats[mercuryMerchantKey{k, m.Name}]; !ok {
				t.Errorf("kind %d: %s has no entry", k, m.Name)
			}
			if mercuryCatOf(k, &m) != mercuryCats[mercuryMerchantKey{k, m.Name}] {
				t.Errorf("kind %d: %s: lookup by ID disagrees", k, m.Name)
			}
		}
	}
}
