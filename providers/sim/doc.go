// Package sim is the simulator host: one http.Handler that serves the
// simulated HTTP APIs of the providers it is given, each at its real path,
// with their real auth schemes, field names, pagination and error bodies,
// so that finsync's adapters can be tested (and demonstrated) without
// reaching a real provider: pointing an adapter at a real provider is only
// a matter of base URL and credentials.
//
// # Host and providers
//
// The host names no provider. Each provider's simulated API is a
// ProviderSim in the provider's own folder (providers/<name>/<name>sim),
// and providers/all/allsim lists them, as providers/all lists the
// adapters:
//
//	s := allsim.New(sim.Options{Seed: 1}) // = sim.New(opts, allsim.Providers()...)
//	creds := allsim.Credentials(name, "alice")
//
// The host keeps the clock, the connections' settings and seeds and the
// faults; it applies the faults latency and malformed itself and asks the
// provider for its outage and rate-limit answers (WriteFault); the
// provider's endpoints answer login_required and its extra faults.
// Provider-neutral building blocks (hashing, the transaction timeline, the
// merchant catalogue, a streaming JSON writer) are in package simkit.
//
// # Control API
//
// The control API lives under /_sim/:
//
//	POST /_sim/advance     {"days": N}
//	POST /_sim/faults      {"provider", "mode", "latencyMs", "institutionId", "path"}
//	POST /_sim/connections {"provider", "credential", "transactions", "historyDays", "recentDays", "revealDay"}
//	GET  /_sim/state
//
// with the Go methods Advance, SetFault, SetConnection and State.
//
// Other simulated services (the destinations finsync delivers to, for
// example) are mounted on the same root through Options.Services, at the
// paths each lists; provider faults leave them alone.
//
// # Data
//
// A connection is identified by its distinguishing credential (see
// Providers.CredentialKey) and its data derives from that key and
// Options.Seed. Transaction i of a connection is a pure function of (seed,
// key, i) and the clock, so a history of millions of rows holds no memory
// and any page costs the same. Options.MemoBytes trades memory for CPU
// where a provider supports it: the pages rendered are kept, up to that
// many bytes, and served again while the clock and faults stay as they
// were (the sync benchmarks use it, so that re-reading unchanged pages
// does not charge the simulator's rendering to the client).
//
// # Clock
//
// The simulator starts at Options.Start (day 0) and moves only through
// Advance. Every advanced day brings new transactions; pending transactions
// post after one to three days and a few never post; each provider shows
// this life cycle as the real one does (see its package).
package sim
