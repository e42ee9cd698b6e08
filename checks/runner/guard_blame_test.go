package runner

import (
	"fmt"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology/sim/simtest"
)

// A step serves several checks (the state observation serves the
// InfiniBand and the Ethernet state checks, the counter pass both
// degradation checks), and narrows down to one check per port (Enter).
// A panic there disables the check it was working for, and only that
// one: the other check of the same step stays enabled and still reports a
// fault. (Blaming every check the step serves passed every test but a
// black-box one minutes in.)
func TestGuard_PanicDisablesOnlyTheCheckTheStepWorkedFor(t *testing.T) {
	ib, eth := event.InfiniBandStateCheck, event.EthernetStateCheck
	ibDeg, ethDeg := event.InfiniBandDegradationCheck, event.EthernetDegradationCheck
	for _, tc := range []struct {
		check, step string
		sibling     string
		// dev is a port of the sibling's link layer set DOWN: the
		// sibling (or, for the degradation checks, the state check of
		// that link layer, which the panic must not touch either)
		// still reports it.
		dev string
	}{
		{ib, "observe", eth, "mlx5_8"},
		{eth, "judge", ib, "mlx5_0"},
		{ib, "judge", eth, "mlx5_8"},
		{ibDeg, "counters", ethDeg, "mlx5_8"},
		{ethDeg, "counters", ibDeg, "mlx5_0"},
		{ibDeg, "plan", ethDeg, "mlx5_0"},
	} {
		t.Run(tc.check+"/"+tc.step, func(t *testing.T) {
			h := simtest.Build(t, "dgx-h100")
			m := simMonitorWith(t, h, "", Seams{Step: func(check, step string) {
				if check == tc.check && step == tc.step {
					panic(fmt.Sprintf("injected into %s/%s", check, step))
				}
			}})
			now := time.Unix(1_700_000_000, 0)
			var failed []event.Spec
			for i := 0; i < 3; i++ {
				specs, _ := m.Cycle(now)
				failed = append(failed, specsOfKind(specs, event.KindCheckFailed)...)
				now = now.Add(time.Second)
			}
			if len(failed) != 1 || failed[0].Check != tc.check {
				t.Fatalf("check-failed for %v, want %s alone", checksOf(failed), tc.check)
			}
			if !m.g.Failed(tc.check) || m.g.Failed(tc.sibling) {
				t.Fatalf("disabled: %s %v, %s %v; want only %s", tc.check, m.g.Failed(tc.check), tc.sibling, m.g.Failed(tc.sibling), tc.check)
			}
			if err := h.SetPortState(tc.dev, 1, "DOWN", "Disabled"); err != nil {
				t.Fatal(err)
			}
			specs, _ := m.Cycle(now)
			if pe := portEvents(specs, tc.dev, 1); len(pe) != 1 || pe[0].Kind != event.KindPortFatal {
				t.Fatalf("%s port 1 DOWN after %s failed: %+v", tc.dev, tc.check, pe)
			}
		})
	}
}

func checksOf(specs []event.Spec) []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Check)
	}
	return out
}
