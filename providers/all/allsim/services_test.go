package allsim_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
)

// echoService answers 200 on the paths it lists.
type echoService struct{ paths []string }

func (e echoService) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	_, _ = w.Write([]byte("service"))
}

func (e echoService) Paths() []string { return e.paths }

// TestMountedServiceIgnoresProviderFaults checks that a mounted service
// answers its own paths (a prefix and an exact path) even while every
// provider is down, and that other paths still reach the providers.
func TestMountedServiceIgnoresProviderFaults(t *testing.T) {
	s := allsim.New(sim.Options{Seed: 1, Services: []sim.Service{echoService{paths: []string{"/v0/", "/token"}}}})
	for _, p := range []string{"plaid", "gocardless", "stripe", "mercury"} {
		if err := s.SetFault(sim.Fault{Provider: p, Mode: sim.FaultOutage}); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	for path, want := range map[string]int{
		"/v0/app/Table":      http.StatusOK,
		"/token":             http.StatusOK,
		"/tokens":            http.StatusInternalServerError, // Plaid's path space, "plaid" is down
		"/accounts/get":      http.StatusInternalServerError,
		"/api/v1/accounts":   http.StatusServiceUnavailable,
		"/_sim/state":        http.StatusMethodNotAllowed, // GET only
		"/_sim/unknown/path": http.StatusNotFound,
	} {
		resp, err := http.Post(srv.URL+path, "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("POST %s = %d, want %d", path, resp.StatusCode, want)
		}
	}
}
