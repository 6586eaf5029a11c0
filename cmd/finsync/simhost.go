package main

import (
	"github.com/finsync/finsync/destinations/destsim"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
)

// newSimulator is the simulator `finsync sim` and `finsync dev` serve: the
// providers' simulated APIs and, beside them, the simulated destinations.
func newSimulator(seed int64) *sim.Simulator {
	return allsim.New(sim.Options{Seed: seed, Services: []sim.Service{destsim.New()}})
}

// notifyHere points the simulator's notifications, for every provider
// whose adapter receives them, at the API served at base
// (POST /providers/{provider}/webhooks).
func notifyHere(s *sim.Simulator, base string) error {
	reg := registry()
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
