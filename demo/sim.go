package demo

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/finsync/finsync/destinations/destsim"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
)

// Simulator is what `finsync sim` and the demo serve: the providers'
// simulated APIs and, beside them, the simulated destinations, their data
// drawn from seed.
func Simulator(seed int64) *sim.Simulator {
	return allsim.New(sim.Options{Seed: seed, Services: []sim.Service{destsim.New()}})
}

// notifyHere points the simulator's notifications, for every provider of
// reg whose adapter receives them, at the API served at base
// (POST /providers/{provider}/webhooks).
func notifyHere(s *sim.Simulator, reg *providers.Registry, base string) error {
	for _, name := range reg.Names() {
		p, err := reg.New(name, providers.Deps{})
		if err != nil {
			return err
		}
		if _, ok := p.(providers.WebhookReceiver); !ok {
			continue
		}
		if err := s.SetWebhookURL(name, base+"/providers/"+name+"/webhooks"); err != nil {
			return err
		}
	}
	return nil
}

// waitHealthy polls the health URL until it answers 200, the server fails
// (on errc), or ten seconds pass.
func waitHealthy(ctx context.Context, url string, errc chan error) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-errc:
			if err == nil {
				return errors.New("the server stopped")
			}
			return fmt.Errorf("the server stopped: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if httpOK(ctx, url) {
			return nil
		}
	}
	return fmt.Errorf("API did not become healthy at %s", url)
}

// httpOK reports whether GET url answers 200.
func httpOK(ctx context.Context, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
