package main

import (
	"errors"
	"log/slog"
	"os"
	"runtime/debug"
	"time"

	"github.com/nichealth/nichealthd/internal/residency"
)

// gcPercent is the heap growth the collector allows over the live heap
// (Go's default is 100). The daemon keeps about 2 MiB live on a DGX H100
// and allocates in bursts: once a minute (the inventory scan, the sanity
// pass) and at each scrape of /metrics; at 100 each burst grows the heap
// to twice the live set and the runtime keeps it. At 25 a collection
// follows every half MiB allocated: a steady poll allocates nothing
// (BenchmarkCycle_dgxH100), so that is a few collections a minute of a
// millisecond or two each, far under 1% of a core.
const gcPercent = 25

// secondRelease is when start-up's pages are released once more: after
// the first minute's passes (observe.InventoryEvery), whose first run
// reads what later runs keep (VPD, routes) and touches code they do not.
const secondRelease = 90 * time.Second

// tuneMemory sets the collector's pace unless the unit or the operator
// chose one (GOGC, GOMEMLIMIT in the environment win, as the Go runtime
// documents).
func tuneMemory() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}

// releaseStartup hands back the pages of the binary that start-up
// touched (internal/residency): once the first poll is complete, and again
// after the first minute's passes.
func releaseStartup(log *slog.Logger) {
	release(log)
	time.AfterFunc(secondRelease, func() { release(log) })
}

func release(log *slog.Logger) {
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
