package ports

import (
	"testing"

	"github.com/nichealth/nichealthd/event"
)

// The seed's numbers are written here as literals, never read back from a
// constant of the package: a test that loops to the value under test cannot
// notice that the value changed.

// TestLinkState_7_2_SeedPin_ThreeMissesThenDisappeared: DESIGN.md
// difference 3 says 3 consecutive complete enumerations, not 2, not 4.
func TestLinkState_7_2_SeedPin_ThreeMissesThenDisappeared(t *testing.T) {
	st := NewPortMemory()
	c := newCheck()
	both := map[string]Presence{"mlx5_0": {LinkLayer: ib}, "mlx5_1": {LinkLayer: ib}}
	c.Enumerated(st, both, "/sys/class/infiniband")
	one := map[string]Presence{"mlx5_0": {LinkLayer: ib}}
	for miss, want := range []int{0, 0, 1} {
		ev, _ := c.Enumerated(st, one, "/sys/class/infiniband")
		if len(ev) != want {
			t.Fatalf("miss %d: %d events %+v, want %d", miss+1, len(ev), ev, want)
		}
	}
	if len(st.Disappeared) != 1 || st.Disappeared[0] != "mlx5_1" {
		t.Fatalf("Disappeared = %v", st.Disappeared)
	}
	// Two misses then back: the count starts again from zero.
	st = NewPortMemory()
	c = newCheck()
	c.Enumerated(st, both, "/x")
	for round := 0; round < 3; round++ {
		for i := 0; i < 2; i++ {
			if ev, _ := c.Enumerated(st, one, "/x"); len(ev) != 0 {
				t.Fatalf("round %d miss %d: %+v", round, i+1, ev)
			}
		}
		c.Enumerated(st, both, "/x")
	}
}

// TestLinkState_3_1_SeedPin_StateNumbers: the kernel's numbering of the
// two files (seed 3.1) as they appear in the messages and the state file.
func TestLinkState_3_1_SeedPin_StateNumbers(t *testing.T) {
	for _, tc := range []struct {
		state, phys string
		want        Verdict
	}{
		{"1: DOWN", "5: LinkUp", Fatal},
		{"2: INIT", "5: LinkUp", NonFatal},
		{"3: ARMED", "5: LinkUp", NonFatal},
		{"4: ACTIVE", "5: LinkUp", Healthy},
		{"4: ACTIVE", "1: Sleep", NonFatal},
		{"4: ACTIVE", "2: Polling", NonFatal},
		{"4: ACTIVE", "3: Disabled", Fatal},
		{"4: ACTIVE", "4: PortConfigurationTraining", NonFatal},
		{"4: ACTIVE", "6: LinkErrorRecovery", NonFatal},
	} {
		o := obs(ib, tc.state, tc.phys, "")
		if got := Judge(o); got != tc.want {
			t.Errorf("%s / %s: %v, want %v", tc.state, tc.phys, got, tc.want)
		}
		if ps := snapshotOf(o); ps.State != tc.state || ps.PhysicalState != tc.phys {
			t.Errorf("persisted as %q / %q", ps.State, ps.PhysicalState)
		}
	}
}

// TestLinkState_TornPairHeldOnePoll: a poll that lands between the writes
// of state and phys_state sees a pair the port never held. It keeps the
// previous verdict for one poll; the settled pair is what gets reported. A
// torn pair seen twice in a row is real and is judged.
func TestLinkState_TornPairHeldOnePoll(t *testing.T) {
	active := obs(ib, "4: ACTIVE", "5: LinkUp", "")
	downUp := obs(ib, "1: DOWN", "5: LinkUp", "")
	downDisabled := obs(ib, "1: DOWN", "3: Disabled", "")
	activeDisabled := obs(ib, "4: ACTIVE", "3: Disabled", "")

	st := NewPortMemory()
	c := newCheck()
	eval := func(o Observation, start Start) *event.Spec {
		t.Helper()
		s, _ := c.Evaluate(st, o, start)
		return s
	}
	if s := eval(active, Baseline); s == nil || s.Kind != event.KindPortBaseline {
		t.Fatalf("baseline: %+v", s)
	}
	// Going down: state written first.
	if s := eval(downUp, Steady); s != nil {
		t.Fatalf("torn DOWN/LinkUp judged at once: %+v", s)
	}
	if !c.Holding("mlx5_0", 1) {
		t.Fatal("torn pair not held")
	}
	if st.PortStates["mlx5_0_1"].State != "4: ACTIVE" {
		t.Fatalf("held pair persisted: %+v", st.PortStates["mlx5_0_1"])
	}
	s := eval(downDisabled, Steady)
	if s == nil || s.Kind != event.KindPortFatal || s.Message != "Port mlx5_0 port 1: state DOWN, phys_state Disabled" {
		t.Fatalf("settled pair: %+v", s)
	}
	if c.Holding("mlx5_0", 1) {
		t.Fatal("still holding after a settled pair")
	}
	// Coming back: state ACTIVE written before phys_state LinkUp.
	if s := eval(activeDisabled, Steady); s != nil {
		t.Fatalf("torn ACTIVE/Disabled judged at once: %+v", s)
	}
	if s := eval(active, Steady); s == nil || s.Kind != event.KindPortRecovered {
		t.Fatalf("recovery: %+v", s)
	}
	// A torn pair that persists is judged on its second sight.
	if s := eval(downUp, Steady); s != nil {
		t.Fatalf("first sight: %+v", s)
	}
	s = eval(downUp, Steady)
	if s == nil || s.Kind != event.KindPortFatal || s.Message != "Port mlx5_0 port 1: state DOWN, phys_state LinkUp" {
		t.Fatalf("persistent torn pair: %+v", s)
	}
	// On first sight of a port there is no previous verdict to hold: the
	// pair is recorded at once (and, unhealthy, not reported).
	st2 := NewPortMemory()
	if s, _ := newCheck().Evaluate(st2, downUp, Baseline); s != nil || st2.PortStates["mlx5_0_1"].State != "1: DOWN" {
		t.Fatalf("first sight of a torn pair: %+v %+v", s, st2.PortStates)
	}
}
