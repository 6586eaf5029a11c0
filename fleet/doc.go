// Package fleet holds the fleet test: it builds the finsync binary and runs
// it as an operator would run a fleet — a private PostgreSQL cluster, the
// provider simulator, two `serve` and two `worker` processes — and checks
// from the outside, over HTTP and the command line, what the service
// promises when it runs as several processes and when parts of it fail.
//
// The test is behind the build tag `fleet` because it takes minutes; run it
// with `make fleet-test`. FINSYNC_FLEET_OUTAGE sets the length of the
// database outage it causes (default 45s).
package fleet
