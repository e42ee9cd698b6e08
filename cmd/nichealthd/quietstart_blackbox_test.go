package main

import (
	"testing"

	"github.com/nichealth/nichealthd/event"
)

// Seed 6.5 with DESIGN.md difference 5, counted on the built daemon: a
// fresh start of a DGX H100 says, per check, one check-scoped clear; per
// port, one healthy port baseline; per port and degradation check, one
// counter baseline naming every counter of the port. Nothing else: 35
// events where per-counter baselines made 180.
func TestCounters_6_5_QuietFreshStart(t *testing.T) {
	t.Parallel()
	n := newNode(t, "dgx-h100", "")
	n.start()
	n.waitEvent("the last port's counter baseline", portEvent("mlx5_11", event.KindCounterBaseline))
	n.stop()
	kinds := map[event.Kind]int{}
	counters := 0
	for _, e := range n.read() {
		kinds[e.Kind]++
		if e.Kind == event.KindCounterBaseline {
			counters += len(e.ErrorCode)
		}
	}
	// dgx-h100: 12 monitored ports (8 IB with 13 counters each, 4 RoCE
	// with 14 each); 11 checks (4 port and counter checks, the kernel
	// log's, the transceivers', the firmware health's, the far end's, 3
	// rules).
	if kinds[event.KindCheckCleared] != 11 || kinds[event.KindPortBaseline] != 12 || kinds[event.KindCounterBaseline] != 12 ||
		counters != 8*13+4*14 || len(kinds) != 3 {
		t.Fatalf("fresh start said %v, naming %d counters in its baselines", kinds, counters)
	}
}
