// Package process assembles finsync's long-running processes from the
// parsed configuration: `serve` (the API, its ops console and the ops
// endpoints), `worker` (River's client with every worker), and the pieces
// `finsync dev` runs both from in one process (the database wait, the
// metrics every process exports, the graceful stop of workers). It starts
// nothing on import and holds no state of its own.
package process

import (
	"log/slog"

	"github.com/finsync/finsync/config"
	"github.com/finsync/finsync/providers"
)

// Env is what every process is built from: the configuration, parsed once,
// the provider registry, built once per process, and the logger.
type Env struct {
	Config   config.Config
	Registry *providers.Registry
	Log      *slog.Logger
}

// DefaultGCPercent is the garbage collector's target for serve when GOGC is
// unset: the API's live heap is small and its garbage is short-lived
// response data, so a higher target trades a little memory for less GC
// work on the read path (see BENCHMARKS.md).
const DefaultGCPercent = 400
