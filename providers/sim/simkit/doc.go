// Package simkit holds the provider-neutral building blocks of the
// simulated provider APIs: deterministic hashing and ids (rand.go), the
// transaction timeline of a connection and its life cycle (timeline.go),
// the merchant catalogue every provider draws from (catalog.go), a fast
// streaming JSON writer (jsonw.go) and credential shape checks
// (tokens.go). The simulator host (package sim) and each provider's
// simulator package use it; it names no provider and keeps no state.
package simkit
