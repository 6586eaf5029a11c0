package simkit

import (
	"strconv"
	"strings"
)

// RelinkSeparator separates a simulated connection's name from its relink
// generation: "acme" is the first link of a connection's data,
// "acme~relink2" the same data linked again a second time, which a
// provider that re-issues ids on a re-link (a new Plaid Item) serves under
// new ids.
const RelinkSeparator = "~relink"

// SplitRelink returns the name of the data a simulated connection name
// designates and its relink generation (0: the first link, also for a
// name whose suffix is not a generation).
func SplitRelink(name string) (base string, gen uint64) {
	return SplitGeneration(name, RelinkSeparator)
}

// SplitGeneration splits s at its last sep followed by a positive number:
// what comes before and that number; s and 0 when it has none. A
// simulator whose credentials carry a relink generation in their own
// format (a mark of its own) splits them with it.
func SplitGeneration(s, sep string) (string, uint64) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, 0
	}
	g, err := strconv.ParseUint(s[i+len(sep):], 10, 32)
	if err != nil || g == 0 {
		return s, 0
	}
	return s[:i], g
}

// RelinkSeed returns the seed of the ids a provider issues for the data of
// seed at relink generation gen: seed itself for the first link, another
// one, deterministic, for each later one.
func RelinkSeed(seed, gen uint64) uint64 {
	if gen == 0 {
		return seed
	}
	return Hash2(seed^0x4e11, gen)
}
