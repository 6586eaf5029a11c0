package main

import (
	"github.com/finsync/finsync/destinations/destsim"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
)

// newSimulator is the simulator `finsync sim` and `finsync dev` serve: the
// providers' simulated APIs and, beside them, the simulated destinations.
func newSimulator(seed int64) *sim.Simulator {
	return allsim.New(sim.Options{Seed: seed, Services: []sim.Service{destsim.New()}})
}
