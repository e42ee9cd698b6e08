package sysfs

import "testing"

// TestLinkState_3_4_UpIsActiveAndLinkUp pins the one definition of "up":
// seed 3.4 step 3 (healthy only when state = ACTIVE and phys_state =
// LinkUp) and 4.3.2 (an active port is ACTIVE + LinkUp). ACTIVE_DEFER, a
// port whose physical link is in error recovery, is not up.
func TestLinkState_3_4_UpIsActiveAndLinkUp(t *testing.T) {
	for _, c := range []struct {
		state, phys    string
		up, down, know bool
	}{
		{"4: ACTIVE", "5: LinkUp", true, false, true},
		{"ACTIVE", "LinkUp", true, false, true},
		{"5: ACTIVE_DEFER", "5: LinkUp", false, false, true},
		{"5: ACTIVE_DEFER", "6: LinkErrorRecovery", false, false, true},
		{"4: ACTIVE", "6: LinkErrorRecovery", false, false, true},
		{"4: ACTIVE", "3: Disabled", false, false, true},
		{"2: INIT", "5: LinkUp", false, false, true},
		{"3: ARMED", "5: LinkUp", false, false, true},
		{"1: DOWN", "5: LinkUp", false, true, true},
		{"1: DOWN", "3: Disabled", false, true, true},
		{"1: DOWN", "2: Polling", false, true, true},
	} {
		s, err1 := ParseState([]byte(c.state))
		p, err2 := ParsePhysState([]byte(c.phys))
		if err1 != nil || err2 != nil {
			t.Fatalf("%q %q: %v %v", c.state, c.phys, err1, err2)
		}
		l := Link{State: s, Phys: p}
		if l.Up() != c.up || l.Down() != c.down || l.Known() != c.know {
			t.Errorf("%q/%q: up %v down %v known %v, want %v %v %v", c.state, c.phys, l.Up(), l.Down(), l.Known(), c.up, c.down, c.know)
		}
	}
	var never Link
	if never.Up() || never.Down() || never.Known() {
		t.Error("a port never read is up, down or known")
	}
}
