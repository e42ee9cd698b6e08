package daemon

import (
	"bytes"
	"runtime"
	"sync"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology/sim"
)

// simSeams are h's stand-ins for the kernel: its errno table (nichealth-sim
// fail) and its driver-statistics files (nichealth-sim phy).
func simSeams(h *sim.Host) Seams {
	return Seams{ReadFaults: sim.NewErrnoTable(h.Root), OpenStats: sim.PHYStatsOpener(h.Root)}
}

// The checks as the boundary names them.
const (
	aerCheck    = event.PCIeAERCheck
	sanityCheck = event.LinkSanityCheck
)

var ruleChecks = []string{event.FlapCheck, event.DropCheck, event.DegradationCheck}

type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Write(p) }
func (l *logBuf) String() string              { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC() // the second pass frees what finalizers released in the first
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
