package counters

import (
	"fmt"
	"slices"
	"testing"

	"github.com/nichealth/nichealthd/event"
)

// Seed 6.5 asks for a healthy baseline of every counter after a reboot.
// Folded, every counter is still named by exactly one healthy event of its
// port (as an error code, which is what NVSentinel's connector clears by),
// the other events keep their order, and no event names more counters
// than an event may carry.
func TestCounters_6_5_BaselinesFoldedOnePerPort(t *testing.T) {
	ib, eth := event.InfiniBandDegradationCheck, event.EthernetDegradationCheck
	var specs []event.Spec
	specs = append(specs, event.Spec{Kind: event.KindCheckCleared, CheckName: ib, IsHealthy: true})
	for i := 0; i < 14; i++ {
		specs = append(specs, baselineSpec(fmt.Sprintf("c%02d", i), "mlx5_0", 1, ib, uint64(i), false))
	}
	specs = append(specs, event.Spec{Kind: event.KindCounterBreach, CheckName: ib, Device: "mlx5_1", Port: 1, ErrorCode: []string{"symbol_error"}})
	for i := 0; i < 18; i++ { // a RoCE port with its PHY statistics: two events
		specs = append(specs, baselineSpec(fmt.Sprintf("r%02d", i), "mlx5_8", 1, eth, 0, true))
	}
	before := slices.Clone(specs)
	out := FoldBaselines(specs, 1)
	if len(out) != 1+1+1+2 {
		t.Fatalf("%d specs, want the clear, one baseline for mlx5_0, the breach, two for mlx5_8: %+v", len(out), out)
	}
	if out[0].Kind != event.KindCheckCleared || out[2].Kind != event.KindCounterBreach {
		t.Fatalf("other events moved: %v %v", out[0].Kind, out[2].Kind)
	}
	named := map[string]int{}
	for _, s := range out {
		if s.Kind != event.KindCounterBaseline {
			continue
		}
		if !s.IsHealthy || s.IsFatal || len(s.ErrorCode) > 16 || s.Device == "" || s.Port != 1 {
			t.Fatalf("folded baseline %+v", s)
		}
		for _, c := range s.ErrorCode {
			named[s.Device+"/"+c]++
		}
	}
	for _, s := range before {
		if s.Kind == event.KindCounterBaseline && named[s.Device+"/"+s.Metadata["counter"]] != 1 {
			t.Errorf("%s %s named %d times", s.Device, s.Metadata["counter"], named[s.Device+"/"+s.Metadata["counter"]])
		}
	}
	if out[1].Message != "Counters healthy after reboot on port mlx5_0 port 1: c00, c01, c02, c03, c04, c05, c06, c07, c08, c09, c10, c11, c12, c13" ||
		out[3].Metadata["reason"] != "no-previous-state" || out[1].Metadata["values"][:5] != "c00=0" {
		t.Errorf("folded message %q, reason %q, values %q", out[1].Message, out[3].Metadata["reason"], out[1].Metadata["values"])
	}
	// Nothing before from is touched, and with no baseline nothing moves.
	if got := FoldBaselines(before[:1], 0); len(got) != 1 {
		t.Errorf("%+v", got)
	}
}
