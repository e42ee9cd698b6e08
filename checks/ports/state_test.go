package ports

import (
	"io"
	"log/slog"
	"testing"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

func obs(ll, state, phys, oper string) Observation {
	s, _ := sysfs.ParseState([]byte(state))
	p, _ := sysfs.ParsePhysState([]byte(phys))
	return Observation{Device: "mlx5_0", Port: 1, LinkLayer: ll, State: s, Phys: p, Operstate: oper}
}

const ib, eth = topology.LinkLayerInfiniBand, topology.LinkLayerEthernet

func TestLinkState_3_2_Classification(t *testing.T) {
	for _, tc := range []struct {
		name            string
		ll, state, phys string
		oper            string
		want            Verdict
	}{
		{"IB active linkup", ib, "4: ACTIVE", "5: LinkUp", "", Healthy},
		{"IB down disabled", ib, "1: DOWN", "3: Disabled", "", Fatal},
		{"IB down polling", ib, "1: DOWN", "2: Polling", "", Fatal},
		{"IB active disabled", ib, "4: ACTIVE", "3: Disabled", "", Fatal},
		{"IB init", ib, "2: INIT", "5: LinkUp", "", NonFatal},
		{"IB armed", ib, "3: ARMED", "5: LinkUp", "", NonFatal},
		{"IB polling", ib, "2: INIT", "2: Polling", "", NonFatal},
		{"IB link error recovery", ib, "4: ACTIVE", "6: LinkErrorRecovery", "", NonFatal},
		{"IPoIB netdev down never matters for IB", ib, "4: ACTIVE", "5: LinkUp", "down", Healthy},
		{"RoCE active", eth, "4: ACTIVE", "5: LinkUp", "up", Healthy},
		{"RoCE down", eth, "1: DOWN", "3: Disabled", "down", Fatal},
		{"RoCE init not reported", eth, "2: INIT", "5: LinkUp", "up", Transient},
		{"RoCE armed not reported", eth, "3: ARMED", "5: LinkUp", "up", Transient},
		{"RoCE netdev down while active", eth, "4: ACTIVE", "5: LinkUp", "down", NonFatal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Judge(obs(tc.ll, tc.state, tc.phys, tc.oper)); got != tc.want {
				t.Fatalf("Judge = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLinkState_13_1_Messages(t *testing.T) {
	for _, tc := range []struct {
		o    Observation
		want string
	}{
		{obs(ib, "1: DOWN", "3: Disabled", ""), "Port mlx5_0 port 1: state DOWN, phys_state Disabled"},
		{obs(eth, "1: DOWN", "3: Disabled", "down"), "RoCE port mlx5_0 port 1: state DOWN, phys_state Disabled, operstate down"},
		{obs(ib, "4: ACTIVE", "5: LinkUp", ""), "Port mlx5_0 port 1: healthy (ACTIVE, LinkUp)"},
	} {
		if got := Message(tc.o, Judge(tc.o)); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

func newCheck() *PortStateCheck {
	return NewPortStateCheck(slog.New(slog.NewTextHandler(io.Discard, nil)))
}

type step struct {
	o         Observation
	start     Start
	wantKind  event.Kind // "" = no event
	wantFatal bool
}

func play(t *testing.T, st *PortMemory, steps []step) {
	t.Helper()
	c := newCheck()
	for i, s := range steps {
		spec, _ := c.Evaluate(st, s.o, s.start)
		var got event.Kind
		if spec != nil {
			got = spec.Kind
			if spec.IsFatal != s.wantFatal {
				t.Fatalf("step %d: fatal=%v want %v (%s)", i, spec.IsFatal, s.wantFatal, spec.Message)
			}
			if spec.Device != "mlx5_0" || spec.Port != 1 {
				t.Fatalf("step %d: entities %q/%d", i, spec.Device, spec.Port)
			}
		}
		if got != s.wantKind {
			t.Fatalf("step %d: event %q, want %q", i, got, s.wantKind)
		}
	}
}

func TestLinkState_3_4_BoundaryCrossingsOnly(t *testing.T) {
	st := NewPortMemory()
	play(t, st, []step{
		{obs(ib, "4: ACTIVE", "5: LinkUp", ""), Baseline, event.KindPortBaseline, false},
		{obs(ib, "4: ACTIVE", "5: LinkUp", ""), Steady, "", false},
		{obs(ib, "1: DOWN", "3: Disabled", ""), Steady, event.KindPortFatal, true},
		{obs(ib, "1: DOWN", "2: Polling", ""), Steady, "", false}, // unhealthy→unhealthy
		{obs(ib, "4: ACTIVE", "5: LinkUp", ""), Steady, event.KindPortRecovered, false},
		{obs(ib, "2: INIT", "5: LinkUp", ""), Steady, event.KindPortNonFatal, false},
		{obs(ib, "1: DOWN", "3: Disabled", ""), Steady, event.KindPortFatal, true}, // escalation
		{obs(ib, "2: INIT", "2: Polling", ""), Steady, "", false},
	})
}

func TestLinkState_3_4_FirstPollAfterReboot(t *testing.T) {
	// Healthy ports: healthy baseline. Unhealthy ports: nothing from the
	// port check, whatever their card; on a card that lacks them against
	// its peers, card homogeneity reports them once its hold has passed
	// (DESIGN.md difference 4), as the one fatal condition they are.
	play(t, NewPortMemory(), []step{{obs(ib, "4: ACTIVE", "5: LinkUp", ""), Baseline, event.KindPortBaseline, false}})
	st := NewPortMemory()
	play(t, st, []step{{obs(ib, "1: DOWN", "3: Disabled", ""), Baseline, "", false}})
	if st.FatalOnItsOwn("mlx5_0", 1) {
		t.Fatal("a port never reported counts as fatal on its own")
	}
	play(t, NewPortMemory(), []step{{obs(ib, "2: INIT", "5: LinkUp", ""), Baseline, "", false}})
}

// TestLinkState_3_4_ReportedVerdictRemembered: the port check remembers
// what it last reported, which tells card homogeneity whether a port is
// already a fatal condition of its own.
func TestLinkState_3_4_ReportedVerdictRemembered(t *testing.T) {
	st := NewPortMemory()
	c := newCheck()
	c.Evaluate(st, obs(ib, "4: ACTIVE", "5: LinkUp", ""), Baseline)
	for _, tc := range []struct {
		o    Observation
		want bool
	}{
		{obs(ib, "2: INIT", "5: LinkUp", ""), false},
		{obs(ib, "1: DOWN", "3: Disabled", ""), true},
		{obs(ib, "2: INIT", "2: Polling", ""), true}, // fatal → non-fatal is not reported: still fatal
		{obs(ib, "4: ACTIVE", "5: LinkUp", ""), false},
	} {
		c.Evaluate(st, tc.o, Steady)
		if got := st.FatalOnItsOwn("mlx5_0", 1); got != tc.want {
			t.Fatalf("after %s/%s: fatal on its own = %v, want %v", tc.o.State.Name, tc.o.Phys.Name, got, tc.want)
		}
	}
}

func TestLinkState_3_4_FirstPollWithPersistedState(t *testing.T) {
	// A port that was DOWN before the restart and is ACTIVE now: recovery.
	st := NewPortMemory()
	play(t, st, []step{{obs(ib, "4: ACTIVE", "5: LinkUp", ""), Baseline, event.KindPortBaseline, false},
		{obs(ib, "1: DOWN", "3: Disabled", ""), Steady, event.KindPortFatal, true}})
	play(t, st, []step{{obs(ib, "4: ACTIVE", "5: LinkUp", ""), Resume, event.KindPortRecovered, false}})
	// Same health as before the restart: nothing.
	play(t, st, []step{{obs(ib, "4: ACTIVE", "5: LinkUp", ""), Resume, "", false}})
}

func TestLinkState_9_RoCETransientsHoldPreviousVerdict(t *testing.T) {
	st := NewPortMemory()
	play(t, st, []step{
		{obs(eth, "4: ACTIVE", "5: LinkUp", "up"), Baseline, event.KindPortBaseline, false},
		{obs(eth, "2: INIT", "5: LinkUp", "up"), Steady, "", false},
		{obs(eth, "4: ACTIVE", "5: LinkUp", "up"), Steady, "", false},
		{obs(eth, "1: DOWN", "3: Disabled", "down"), Steady, event.KindPortFatal, true},
	})
	if st.PortStates["mlx5_0_1"].Operstate != "down" {
		t.Fatalf("operstate not persisted: %+v", st.PortStates)
	}
}

func TestLinkState_7_2_DisappearanceAfterThreeEnumerations(t *testing.T) {
	st := NewPortMemory()
	c := newCheck()
	present := map[string]Presence{"mlx5_0": {LinkLayer: ib}, "mlx5_1": {LinkLayer: ib}}
	if ev, _ := c.Enumerated(st, present, "/sys/class/infiniband"); len(ev) != 0 {
		t.Fatal("events on first enumeration")
	}
	delete(present, "mlx5_1")
	for i := 1; i < DisappearAfter; i++ {
		if ev, _ := c.Enumerated(st, present, "/sys/class/infiniband"); len(ev) != 0 {
			t.Fatalf("miss %d reported early", i)
		}
	}
	ev, changed := c.Enumerated(st, present, "/sys/class/infiniband")
	if len(ev) != 1 || ev[0].Kind != event.KindDeviceDisappeared || !ev[0].IsFatal || !changed {
		t.Fatalf("got %+v", ev)
	}
	if ev[0].Message != "NIC mlx5_1 disappeared from /sys/class/infiniband/ - hardware failure" || ev[0].Port != 0 {
		t.Fatalf("message/entities: %+v", ev[0])
	}
	// Reported once.
	if ev, _ := c.Enumerated(st, present, "/sys/class/infiniband"); len(ev) != 0 {
		t.Fatal("reported twice")
	}
	// Case 1 across a restart: a new check with the persisted state still
	// knows it was reported and does not report again.
	c2 := newCheck()
	for i := 0; i < 5; i++ {
		if ev, _ := c2.Enumerated(st, present, "/sys/class/infiniband"); len(ev) != 0 {
			t.Fatal("re-reported after restart")
		}
	}
	present["mlx5_1"] = Presence{LinkLayer: ib}
	ev, _ = c2.Enumerated(st, present, "/sys/class/infiniband")
	if len(ev) != 1 || ev[0].Kind != event.KindDeviceReappeared || !ev[0].IsHealthy {
		t.Fatalf("reappearance: %+v", ev)
	}
}

// A transient read error is not a disappearance: the caller does not call
// Enumerated for incomplete listings, and a device back before the third
// miss resets its count.
func TestLinkState_7_2_TransientMissResets(t *testing.T) {
	st := NewPortMemory()
	c := newCheck()
	all := map[string]Presence{"mlx5_0": {LinkLayer: ib}}
	c.Enumerated(st, all, "/x")
	for round := 0; round < 5; round++ {
		c.Enumerated(st, map[string]Presence{}, "/x")
		c.Enumerated(st, map[string]Presence{}, "/x")
		if ev, _ := c.Enumerated(st, all, "/x"); len(ev) != 0 {
			t.Fatal("unexpected event")
		}
	}
}

func TestDesign_Difference5_ClearedSpecHasNoEntities(t *testing.T) {
	s := checks.ClearedSpec(event.InfiniBandStateCheck, "host rebooted (boot ID changed)")
	ev := event.New(s, event.Stamp{NodeName: "n"})
	if !ev.IsHealthy || len(ev.EntitiesImpacted) != 0 || ev.RecommendedAction != event.ActionNone {
		t.Fatalf("%+v", ev)
	}
}

// A device renamed under the same PCI address is the same NIC: its state
// moves to the new name and no disappearance is reported.
func TestLinkState_7_2_RenameIsNotADisappearance(t *testing.T) {
	st := NewPortMemory()
	c := newCheck()
	c.Evaluate(st, obs(ib, "1: DOWN", "3: Disabled", ""), Steady)
	var renamed []string
	c.OnRename = func(old, nw string) { renamed = append(renamed, old+">"+nw) }
	c.Enumerated(st, map[string]Presence{"mlx5_0": {ib, "0000:3b:00.0"}}, "/x")
	var all []event.Spec
	for i := 0; i < 5; i++ {
		ev, _ := c.Enumerated(st, map[string]Presence{"mlx5_9": {ib, "0000:3b:00.0"}}, "/x")
		all = append(all, ev...)
	}
	if len(all) != 1 || all[0].Kind != event.KindDeviceReappeared || !all[0].IsHealthy || all[0].Device != "mlx5_0" {
		t.Fatalf("events %+v", all)
	}
	if _, ok := st.PortStates["mlx5_9_1"]; !ok || len(renamed) != 1 || renamed[0] != "mlx5_0>mlx5_9" {
		t.Fatalf("state not migrated: %+v, other checks told %v", st.PortStates, renamed)
	}
	if len(st.KnownDevices) != 1 || st.KnownDevices[0] != "mlx5_9" || len(st.Disappeared) != 0 {
		t.Fatalf("known %v disappeared %v", st.KnownDevices, st.Disappeared)
	}
}

// DESIGN.md section 7 (the link's own story): a RoCE port-down event says
// why the link went down where the driver said (ethtool's extended link
// state), in its message and its metadata; the recovery does not carry a
// stale reason, an IB port never one, and a port whose driver said
// nothing reads as before.
func TestDesign_7_RoCEPortDownSaysWhy(t *testing.T) {
	withWhy := func(o Observation, reason, sub, words string) Observation {
		o.LinkDownReason, o.LinkDownSubReason, o.LinkDownWords = reason, sub, words
		return o
	}
	up := obs(eth, "4: ACTIVE", "5: LinkUp", "up")
	down := withWhy(obs(eth, "1: DOWN", "3: Disabled", "down"), "cable_issue", "unsupported_cable", "cable issue: unsupported cable")
	st := NewPortMemory()
	c := newCheck()
	if sp, _ := c.Evaluate(st, up, Baseline); sp == nil {
		t.Fatal("no baseline")
	}
	sp, _ := c.Evaluate(st, down, Steady)
	if sp == nil || !sp.IsFatal {
		t.Fatalf("port-down: %+v", sp)
	}
	if want := "RoCE port mlx5_0 port 1: state DOWN, phys_state Disabled, operstate down; link down: cable issue: unsupported cable"; sp.Message != want {
		t.Errorf("message %q\nwant    %q", sp.Message, want)
	}
	if sp.Metadata["linkDownReason"] != "cable_issue" || sp.Metadata["linkDownSubReason"] != "unsupported_cable" {
		t.Errorf("metadata %v", sp.Metadata)
	}
	rec, _ := c.Evaluate(st, withWhy(up, "cable_issue", "unsupported_cable", "x"), Steady)
	if rec == nil || rec.Metadata["linkDownReason"] != "" {
		t.Errorf("recovery %+v: carries a reason", rec)
	}
	noSub, _ := c.Evaluate(st, withWhy(obs(eth, "1: DOWN", "3: Disabled", "down"), "no_cable", "", "no cable"), Steady)
	if noSub == nil || noSub.Metadata["linkDownReason"] != "no_cable" || noSub.Metadata["linkDownSubReason"] != "" {
		t.Errorf("no substate: %+v", noSub)
	}
	ibDown := withWhy(obs(ib, "1: DOWN", "3: Disabled", ""), "no_cable", "", "no cable")
	if got := Message(ibDown, Fatal); got != "Port mlx5_0 port 1: state DOWN, phys_state Disabled" {
		t.Errorf("IB message %q: an IPoIB netdev gives no reason, and none is shown", got)
	}
}
