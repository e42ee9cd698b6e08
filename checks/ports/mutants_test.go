package ports

import (
	"testing"

	"github.com/nichealth/nichealthd/event"
)

// TestLinkState_EventsNameTheirCheckAndHealth: the check name follows the
// link layer (IB or RoCE), IsHealthy and IsFatal follow the verdict, and
// the RoCE netdev's operstate is in the metadata only when there is one.
func TestLinkState_EventsNameTheirCheckAndHealth(t *testing.T) {
	if event.StateCheckFor(ib) != event.InfiniBandStateCheck || event.StateCheckFor(eth) != event.EthernetStateCheck {
		t.Fatalf("StateCheckFor: ib %q, eth %q", event.StateCheckFor(ib), event.StateCheckFor(eth))
	}
	for _, tc := range []struct {
		o                  Observation
		start              Start
		check              string
		fatal, healthy     bool
		operstate, message string
	}{
		{obs(ib, "4: ACTIVE", "5: LinkUp", ""), Baseline, event.InfiniBandStateCheck, false, true, "",
			"Port mlx5_0 port 1: healthy (ACTIVE, LinkUp)"},
		{obs(eth, "4: ACTIVE", "5: LinkUp", "up"), Baseline, event.EthernetStateCheck, false, true, "up",
			"RoCE port mlx5_0 port 1: healthy (ACTIVE, LinkUp, operstate up)"},
		{obs(eth, "4: ACTIVE", "5: LinkUp", ""), Baseline, event.EthernetStateCheck, false, true, "",
			"RoCE port mlx5_0 port 1: healthy (ACTIVE, LinkUp)"},
	} {
		st := NewPortMemory()
		c := newCheck()
		s, changed := c.Evaluate(st, tc.o, tc.start)
		if s == nil || !changed {
			t.Fatalf("%s: no event or no change (%v)", tc.message, changed)
		}
		op, has := s.Metadata["operstate"]
		if s.CheckName != tc.check || s.IsFatal != tc.fatal || s.IsHealthy != tc.healthy || s.Message != tc.message ||
			op != tc.operstate || has != (tc.operstate != "") {
			t.Fatalf("event %+v, want check %s fatal %v healthy %v operstate %q message %q",
				s, tc.check, tc.fatal, tc.healthy, tc.operstate, tc.message)
		}
		// Down and back: fatal then healthy, under the same check.
		down := tc.o
		down.State, down.Phys = obs(ib, "1: DOWN", "", "").State, obs(ib, "", "3: Disabled", "").Phys
		if s, _ := c.Evaluate(st, down, Steady); s == nil || !s.IsFatal || s.IsHealthy || s.CheckName != tc.check {
			t.Fatalf("fatal event %+v", s)
		}
		if s, _ := c.Evaluate(st, tc.o, Steady); s == nil || s.IsFatal || !s.IsHealthy || s.CheckName != tc.check ||
			s.Kind != event.KindPortRecovered {
			t.Fatalf("recovery event %+v", s)
		}
	}
}

// TestLinkState_6_6_ChangedOnlyWhenTheSnapshotChanges: Evaluate's
// "changed" is what makes the daemon save the state file.
func TestLinkState_6_6_ChangedOnlyWhenTheSnapshotChanges(t *testing.T) {
	st := NewPortMemory()
	c := newCheck()
	up := obs(ib, "4: ACTIVE", "5: LinkUp", "")
	if _, changed := c.Evaluate(st, up, Baseline); !changed {
		t.Fatal("first observation not saved")
	}
	if _, changed := c.Evaluate(st, up, Steady); changed {
		t.Fatal("same observation asked for a save")
	}
	polling := obs(ib, "2: INIT", "2: Polling", "")
	if _, changed := c.Evaluate(st, polling, Steady); !changed {
		t.Fatal("new observation not saved")
	}
	if st.PortStates["mlx5_0_1"].PhysicalState != "2: Polling" {
		t.Fatalf("persisted %+v", st.PortStates["mlx5_0_1"])
	}
}

// TestLinkState_7_2_RoCEDeviceDisappearsUnderEthernetCheck: a vanished
// device is reported under the state check of its ports' link layer, taken
// from the persisted port states once the device is gone.
func TestLinkState_7_2_RoCEDeviceDisappearsUnderEthernetCheck(t *testing.T) {
	st := NewPortMemory()
	c := newCheck()
	c.Evaluate(st, obs(eth, "4: ACTIVE", "5: LinkUp", "up"), Baseline)
	c.Enumerated(st, map[string]Presence{"mlx5_0": {LinkLayer: eth}}, "/x")
	var ev []event.Spec
	for i := 0; i < 3; i++ {
		ev, _ = c.Enumerated(st, map[string]Presence{}, "/x")
	}
	if len(ev) != 1 || ev[0].Kind != event.KindDeviceDisappeared || ev[0].CheckName != event.EthernetStateCheck {
		t.Fatalf("disappearance = %+v", ev)
	}
}
