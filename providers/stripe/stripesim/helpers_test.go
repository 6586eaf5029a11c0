package stripesim

import (
	"net/http/httptest"
	"testing"

	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simtest"
)

// million is the history size of the scale tests.
const million = 1_000_000

// newTestSim starts a simulator serving this provider on an httptest
// server.
func newTestSim(t *testing.T, opts sim.Options) (*sim.Simulator, *httptest.Server) {
	t.Helper()
	return simtest.New(t, opts, Sim{})
}

// creds decodes this provider's credentials for name into a map.
func creds(t *testing.T, name string) map[string]string {
	t.Helper()
	return simtest.Creds(t, Sim{}, name)
}
