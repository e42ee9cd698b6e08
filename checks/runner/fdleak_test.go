package runner

import (
	"os"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/topology/sim"
)

// TestKeepOpen_SanityPassesLeakNoDescriptors: on real sysfs the reader
// keeps the plan's descriptors open, and the sanity pass (PCIe link along
// the path, SM LID, rates) reads its files one-shot every minute. Five
// passes later the daemon holds exactly the descriptors it held after the
// first: a leak of a hundred or so a minute would exhaust LimitNOFILE
// within hours and blind every read.
func TestKeepOpen_SanityPassesLeakNoDescriptors(t *testing.T) {
	h, err := sim.Build(t.TempDir(), "dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	m := perfMonitorWith(t, h, true, "") // with the link sanity pass
	count := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatalf("count descriptors: %v", err)
		}
		return len(ents)
	}
	now := time.Unix(1_700_000_000, 0)
	m.Cycle(now)
	first := count()
	for i := 0; i < 5; i++ {
		now = now.Add(2 * sanityEvery)
		m.Cycle(now)
	}
	if n := count(); n != first {
		t.Fatalf("descriptors after the first pass %d, after five more %d", first, n)
	}
	// A plan rebuilt (reload, rediscovery) closes the old plan's kept
	// descriptors, the AER reads' among them.
	for i := 0; i < 3; i++ {
		m.Reconfigure(m.cfg, now) // the plan is built again
		now = now.Add(2 * sanityEvery)
		m.Cycle(now)
	}
	if n := count(); n != first {
		t.Fatalf("descriptors after the first pass %d, after three plan rebuilds %d", first, n)
	}
}
