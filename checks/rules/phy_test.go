package rules

import (
	"testing"
	"time"

	"github.com/nichealth/nichealthd/config"
	"github.com/nichealth/nichealthd/event"
)

// A RoCE port whose link_downed is stuck at 255 (8 bits) and whose link
// goes down and up between two looks: neither link_downed nor the state
// sees it, link_down_events_phy (64-bit) does, so the flap rule still
// counts three link downs in ten minutes (seed state 6.2).
func TestPHY_LinkDownEventsWitnessWhenLinkDownedSaturated(t *testing.T) {
	port := func(events uint64) Port {
		return Port{Device: "mlx5_9", Port: 1, Link: linkOf("ACTIVE"),
			LinkDowned:     Reading{Value: 255, OK: true},
			LinkDownEvents: Reading{Value: events, OK: true}}
	}
	e := New(config.DefaultRules(), State{}, "boot")
	now := time.Unix(1_700_000_000, 0)
	var raised bool
	for i, ev := range []uint64{4000, 4001, 4001, 4002, 4003} {
		changes := e.Cycle(now.Add(time.Duration(i)*time.Minute), []Port{port(ev)}, nil)
		for _, c := range changes {
			raised = raised || (c.Raise && c.Condition.Check == event.FlapCheck)
		}
		if got, _ := e.Episodes("mlx5_9", 1); got != ev-4000 {
			t.Fatalf("step %d: %d episodes, want %d", i, got, ev-4000)
		}
	}
	if !raised {
		t.Fatal("three link downs seen only by link_down_events_phy did not raise the flap rule")
	}
	// One episode seen by both link_downed and link_down_events_phy counts once.
	b := New(config.DefaultRules(), State{}, "boot")
	b.Cycle(now, []Port{{Device: "mlx5_9", Port: 1, Link: linkOf("ACTIVE"), LinkDowned: Reading{Value: 3, OK: true}, LinkDownEvents: Reading{Value: 3, OK: true}}}, nil)
	b.Cycle(now.Add(time.Second), []Port{{Device: "mlx5_9", Port: 1, Link: linkOf("ACTIVE"), LinkDowned: Reading{Value: 4, OK: true}, LinkDownEvents: Reading{Value: 4, OK: true}}}, nil)
	if got, _ := b.Episodes("mlx5_9", 1); got != 1 {
		t.Fatalf("one link down seen by two witnesses: %d episodes, want 1", got)
	}
}
