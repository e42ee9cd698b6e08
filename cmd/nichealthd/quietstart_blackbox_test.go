package main

import (
	"slices"
	"testing"

	"github.com/nichealth/nichealthd/event"
)

// Seed 6.5 with DESIGN.md differences 5 and 2, counted on the built
// daemon: a fresh start of a DGX H100 says, per check, one check-scoped
// clear; per port, one healthy port baseline; per port, one counter
// baseline under the state check naming its fatal counters and one under
// the degradation check naming the others (a baseline goes where the
// counter's breach would). Nothing else: 47 events where per-counter
// baselines made 180.
func TestCounters_6_5_QuietFreshStart(t *testing.T) {
	t.Parallel()
	n := newNode(t, "dgx-h100", "")
	n.start()
	n.waitEvent("the last port's counter baseline", portEvent("mlx5_11", event.KindCounterBaseline))
	n.stop()
	kinds := map[event.Kind]int{}
	counters := 0
	byCheck := map[string]map[string][]string{} // device -> check -> counters
	for _, e := range n.read() {
		kinds[e.Kind]++
		if e.Kind == event.KindCounterBaseline {
			counters += len(e.ErrorCode)
			if byCheck[e.Device()] == nil {
				byCheck[e.Device()] = map[string][]string{}
			}
			byCheck[e.Device()][e.CheckName] = append(byCheck[e.Device()][e.CheckName], e.ErrorCode...)
		}
	}
	// Counter seed 11.1: the fatal counters under the state check, every
	// other one under the degradation check; a RoCE port's hardware
	// counters are the same files (the simulated host has no PHY
	// statistics).
	ibFatal := []string{"excessive_buffer_overrun_errors", "link_downed", "local_link_integrity_errors", "rnr_nak_retry_err", "symbol_error_fatal"}
	for dev, checks := range byCheck {
		if len(checks) != 2 {
			t.Errorf("%s: counter baselines under %v, want the state and the degradation check", dev, checks)
		}
		for _, c := range []string{"InfiniBandStateCheck", "EthernetStateCheck"} {
			if st := slices.Sorted(slices.Values(checks[c])); st != nil && !slices.Equal(st, ibFatal) {
				t.Errorf("%s: %s's baseline names %v, want %v", dev, c, st, ibFatal)
			}
		}
		for _, c := range []string{"InfiniBandDegradationCheck", "EthernetDegradationCheck"} {
			if deg := checks[c]; deg != nil && slices.ContainsFunc(deg, func(n string) bool { return slices.Contains(ibFatal, n) }) {
				t.Errorf("%s: %s's baseline names a fatal counter: %v", dev, c, deg)
			}
		}
	}
	// dgx-h100: 12 monitored ports (8 IB with 13 counters each, 4 RoCE
	// with 14 each); 11 checks (4 port and counter checks, the kernel
	// log's, the transceivers', the firmware health's, the far end's, 3
	// rules).
	if kinds[event.KindCheckCleared] != 11 || kinds[event.KindPortBaseline] != 12 || kinds[event.KindCounterBaseline] != 2*12 ||
		counters != 8*13+4*14 || len(kinds) != 3 {
		t.Fatalf("fresh start said %v, naming %d counters in its baselines", kinds, counters)
	}
}
