package runner

import (
	"fmt"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
	"github.com/nichealth/nichealthd/topology/sim"
)

// TestConditions_9_EveryEventNamesItsCondition: every event a check emits
// carries the key of the condition it raises or clears (DESIGN.md section
// 9), set by the check itself, and that key is the one an outbox record
// written before events carried keys derives: a condition raised by an
// older build is cleared by this one, and the outbox folds both alike.
func TestConditions_9_EveryEventNamesItsCondition(t *testing.T) {
	h, err := sim.Build(t.TempDir(), "dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	m := simMonitorWith(t, h, "cardAnomalyHold = \"0s\"\nparkReprobeInterval = \"10m\"\n", simSeams(h))
	now := time.Unix(1_700_000_000, 0)
	seen := map[event.Kind]int{}
	cycle := func(step string, n int, errs ...error) {
		t.Helper()
		for _, err := range errs {
			if err != nil {
				t.Fatalf("%s: %v", step, err)
			}
		}
		for i := 0; i < n; i++ {
			now = now.Add(time.Minute)
			specs, _ := m.Cycle(now)
			for _, s := range specs {
				if s.Condition.Kind == "" {
					t.Fatalf("%s: a %s event of %s names no condition: %+v", step, s.Kind, s.CheckName, s)
				}
				ev := event.New(s, event.Stamp{NodeName: "t", Now: now})
				legacy := ev
				legacy.Condition = condition.Key{}
				k, ok := event.KeyOf(&legacy)
				if !ok || k != ev.Condition {
					t.Fatalf("%s: %s event keyed %+v by its check, %+v (%v) from its fields", step, s.Kind, ev.Condition, k, ok)
				}
				seen[s.Kind]++
			}
		}
	}
	above, err := h.AERAbove("mlx5_0")
	if err != nil {
		t.Fatal(err)
	}
	cycle("first poll", 2)
	cycle("a port down, a latched counter, no SM on an active port, an AER error above a NIC, a parked file", 2,
		h.SetPortState("mlx5_0", 1, "DOWN", "Disabled"), h.AddCounter("mlx5_1", 1, "counters/link_downed", 1),
		h.WriteRaw("mlx5_3", 1, "sm_lid", "0x0\n"), h.AddAER(above, "fatal", "MalfTLP", 1),
		h.FailFile("mlx5_4", 1, "counters/symbol_error", "EACCES"))
	cycle("a port stuck in INIT: its card is short of its peers", 2, h.SetPortState("mlx5_2", 1, "INIT", "LinkUp"))
	cycle("everything back", 2, h.SetPortState("mlx5_0", 1, "ACTIVE", "LinkUp"), h.SetPortState("mlx5_2", 1, "ACTIVE", "LinkUp"),
		h.ResetCounters("mlx5_1", 1), h.WriteRaw("mlx5_3", 1, "sm_lid", "0x1\n"), h.FailFile("mlx5_4", 1, "counters/symbol_error", "off"))
	cycle("a NIC falls off the bus", 4, h.RemoveDevice("mlx5_6"))
	cycle("and comes back", 2, h.RestoreDevice("mlx5_6"))
	cycle("a NIC renamed", 2, h.RenameDevice("mlx5_7", "ibp7s0"))
	for _, k := range []event.Kind{event.KindPortFatal, event.KindPortRecovered, event.KindCounterBreach, event.KindCounterRecovered,
		event.KindLinkSanity, event.KindLinkSanityOK, event.KindPCIeAER, event.KindReadParked,
		event.KindCardAnomaly, event.KindCardRecovered, event.KindDeviceDisappeared, event.KindDeviceReappeared} {
		if seen[k] == 0 {
			t.Errorf("the scenario produced no %s event (it saw %v)", k, fmt.Sprint(seen))
		}
	}
}
