// Package layers holds the test that keeps finsync's imports flowing one
// way (docs/architecture.md): cmd → api, worker → storage, providers,
// destinations, rules → resilience → domain. It has no code of its own.
package layers
