package main

import (
	"errors"
	"log/slog"
	"os"
	"runtime/debug"

	"github.com/nichealth/nichealthd/internal/residency"
)

// gcPercent is the heap growth the collector allows over the live heap
// (Go's default is 100). The daemon keeps a few MiB live and allocates in
// bursts once a minute (the inventory scan, the sanity pass); at 100 each
// burst grows the heap to twice the live set and the runtime keeps it.
// At 50 the heap stays within half again of the live set, for a
// collection every few hundred polls instead of every thousand: well
// under 1% of a core (BenchmarkCycle_dgxH100 allocates nothing in a steady
// poll).
const gcPercent = 50

// tuneMemory sets the collector's pace unless the unit or the operator
// chose one (GOGC, GOMEMLIMIT in the environment win, as the Go runtime
// documents).
func tuneMemory() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}

// releaseStartup hands back the pages of the binary that start-up
// touched (internal/residency); called once the first poll is complete.
func releaseStartup(log *slog.Logger) {
	n, err := residency.Release()
	switch {
	case errors.Is(err, residency.ErrUnsupported):
		log.Debug("start-up pages stay resident", "reason", err.Error())
	case err != nil:
		log.Warn("could not release start-up pages; the resident set stays larger than it needs to be", "error", err.Error())
	default:
		log.Debug("start-up pages released", "mapped_bytes", n)
	}
}
