package cards

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/config"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology"
)

var t0 = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

func ref(d string, p int) event.PortRef { return event.PortRef{Device: d, Port: p} }

// singlePortCards is n single-port compute cards mlx5_0..n-1, all active
// except the inactive ones.
func singlePortCards(n int, inactive ...int) []CardState {
	var out []CardState
	for i := 0; i < n; i++ {
		p := ref(mlxName(i), 1)
		c := CardState{Card: cardName(i), Role: topology.RoleCompute, HCAType: "MT4129", BoardID: "MT_0000000838",
			LinkLayer: topology.LinkLayerInfiniBand, Functions: 1, Ports: 1, Active: 1, Present: []event.PortRef{p}}
		if slices.Contains(inactive, i) {
			c.Active, c.Inactive = 0, []event.PortRef{p}
		}
		out = append(out, c)
	}
	return out
}

func mlxName(i int) string  { return "mlx5_" + string(rune('0'+i)) }
func cardName(i int) string { return "0000:1" + string(rune('0'+i)) + ":00" }

func kinds(ss []event.Spec) []event.Kind {
	var out []event.Kind
	for _, s := range ss {
		out = append(out, s.Kind)
	}
	return out
}

// TestLinkState_3_2_BlipShorterThanTheHoldIsNotFatal: a port in INIT or
// LinkErrorRecovery for less than cardAnomalyHold makes no card anomaly;
// one stuck past it does, and clears when it comes back (seed 3.2:
// "escalated to fatal by card homogeneity check if persistent").
func TestLinkState_3_2_BlipShorterThanTheHoldIsNotFatal(t *testing.T) {
	const hold = 30 * time.Second // seed 3.1: INIT "problematic if stuck >30s"
	if config.DefaultCardAnomalyHold != hold {
		t.Fatalf("config.DefaultCardAnomalyHold = %v, want the seed's 30s", config.DefaultCardAnomalyHold)
	}
	m := NewMemory()
	judge := func(at time.Duration, cs []CardState) []event.Spec {
		t.Helper()
		ss, _ := m.Judge(Input{Cards: cs, Now: t0.Add(at), Hold: hold})
		return ss
	}
	if ss := judge(0, singlePortCards(8)); len(ss) != 0 {
		t.Fatalf("healthy: %v", kinds(ss))
	}
	// A 1.2 s blip.
	for _, at := range []time.Duration{time.Second, 2200 * time.Millisecond} {
		if ss := judge(at, singlePortCards(8, 3)); len(ss) != 0 {
			t.Fatalf("blip at %v: %v", at, kinds(ss))
		}
	}
	if ss := judge(3*time.Second, singlePortCards(8)); len(ss) != 0 || len(m.Short) != 0 {
		t.Fatalf("after the blip: %v short %v", kinds(ss), m.Short)
	}
	// Stuck: nothing until the hold has passed, then one fatal anomaly.
	judge(10*time.Second, singlePortCards(8, 3))
	if ss := judge(10*time.Second+hold-time.Millisecond, singlePortCards(8, 3)); len(ss) != 0 {
		t.Fatalf("before the hold: %v", kinds(ss))
	}
	ss := judge(10*time.Second+hold, singlePortCards(8, 3))
	if len(ss) != 1 || ss[0].Kind != event.KindCardAnomaly || !ss[0].IsFatal || ss[0].Card != "0000:13:00" ||
		!slices.Equal(ss[0].Ports, []event.PortRef{ref("mlx5_3", 1)}) || ss[0].ErrorCode[0] != "card-anomaly" ||
		ss[0].Message != "Card 0000:13:00 (Compute) has 0 active ports, expected 1 (peer mode)" {
		t.Fatalf("anomaly: %+v", ss)
	}
	if ss := judge(time.Minute, singlePortCards(8, 3)); len(ss) != 0 {
		t.Fatalf("re-announced: %v", kinds(ss))
	}
	ss = judge(2*time.Minute, singlePortCards(8))
	if len(ss) != 1 || ss[0].Kind != event.KindCardRecovered || !ss[0].IsHealthy ||
		!slices.Equal(ss[0].Ports, []event.PortRef{ref("mlx5_3", 1)}) || ss[0].ErrorCode[0] != "card-anomaly" {
		t.Fatalf("recovery: %+v", ss)
	}
}

// TestLinkState_4_3_HoldAppliesAtFirstPoll: at the first poll too, a card
// below its peers is an anomaly only after the hold.
func TestLinkState_4_3_HoldAppliesAtFirstPoll(t *testing.T) {
	m := NewMemory()
	if ss, changed := m.Judge(Input{Cards: singlePortCards(4, 2), Now: t0, Hold: 30 * time.Second}); len(ss) != 0 || !changed {
		t.Fatalf("first poll: %v changed %v", kinds(ss), changed)
	}
	if ss, _ := m.Judge(Input{Cards: singlePortCards(4, 2), Now: t0.Add(30 * time.Second), Hold: 30 * time.Second}); len(ss) != 1 {
		t.Fatalf("after the hold: %v", kinds(ss))
	}
	// Hold 0 (the one-shot check): at once.
	if ss, _ := NewMemory().Judge(Input{Cards: singlePortCards(4, 2), Now: t0}); len(ss) != 1 || ss[0].Kind != event.KindCardAnomaly {
		t.Fatalf("hold 0: %v", kinds(ss))
	}
}

// TestLinkState_4_3_OneCablePullIsOneFatalCondition: a port that is fatal
// on its own (reported DOWN) is not reported a second time by its card;
// a NIC reported disappeared neither.
func TestLinkState_4_3_OneCablePullIsOneFatalCondition(t *testing.T) {
	down := map[event.PortRef]bool{ref("mlx5_3", 1): true}
	own := func(p event.PortRef) bool { return down[p] }
	m := NewMemory()
	for _, at := range []time.Duration{0, time.Minute} {
		if ss, _ := m.Judge(Input{Cards: singlePortCards(8, 3), OwnFatal: own, Now: t0.Add(at), Hold: time.Second}); len(ss) != 0 {
			t.Fatalf("card reported a port fatal on its own: %+v", ss)
		}
	}
	// Dual-port card, mode 2: one port DOWN (its own fatal), the other
	// stuck in INIT: the card names the INIT port only.
	dual := func(active int, inactive ...event.PortRef) CardState {
		return CardState{Card: "0000:40:00", Role: topology.RoleStorage, HCAType: "MT4129", BoardID: "b", LinkLayer: topology.LinkLayerEthernet,
			Functions: 2, Ports: 2, Active: active, Present: []event.PortRef{ref("mlx5_8", 1), ref("mlx5_9", 1)}, Inactive: inactive}
	}
	peer := CardState{Card: "0000:50:00", Role: topology.RoleStorage, HCAType: "MT4129", BoardID: "b", Functions: 2, Ports: 2, Active: 2,
		Present: []event.PortRef{ref("mlx5_10", 1), ref("mlx5_11", 1)}}
	own2 := map[event.PortRef]bool{ref("mlx5_8", 1): true}
	m = NewMemory()
	ss, _ := m.Judge(Input{Cards: []CardState{dual(0, ref("mlx5_8", 1), ref("mlx5_9", 1)), peer},
		OwnFatal: func(p event.PortRef) bool { return own2[p] }, Now: t0})
	if len(ss) != 1 || !slices.Equal(ss[0].Ports, []event.PortRef{ref("mlx5_9", 1)}) || ss[0].CheckName != event.EthernetStateCheck {
		t.Fatalf("dual-port card: %+v", ss)
	}
	// The INIT port goes DOWN too (now fatal on its own): the card's
	// anomaly is cleared, naming what it named.
	own2[ref("mlx5_9", 1)] = true
	ss, _ = m.Judge(Input{Cards: []CardState{dual(0, ref("mlx5_8", 1), ref("mlx5_9", 1)), peer},
		OwnFatal: func(p event.PortRef) bool { return own2[p] }, Now: t0.Add(time.Second)})
	if len(ss) != 1 || ss[0].Kind != event.KindCardRecovered || !slices.Equal(ss[0].Ports, []event.PortRef{ref("mlx5_9", 1)}) ||
		!strings.Contains(ss[0].Message, "reported on its own") {
		t.Fatalf("covered port became fatal on its own: %+v", ss)
	}
	// A card whose NIC disappeared: the disappearance is the condition.
	m = NewMemory()
	gone := singlePortCards(4)
	gone[1].Functions, gone[1].Ports, gone[1].Active, gone[1].Present = 0, 0, 0, nil
	if ss, _ := m.Judge(Input{Cards: gone, Gone: map[string]int{cardName(1): 1}, Now: t0}); len(ss) != 0 {
		t.Fatalf("disappeared NIC reported by its card too: %+v", ss)
	}
}

// TestLinkState_7_2_Case3_FunctionMissingAtStart: a dual-function card
// that lost a function before the daemon started has no inactive port to
// name: its anomaly names the card's present ports.
func TestLinkState_7_2_Case3_FunctionMissingAtStart(t *testing.T) {
	full := CardState{Card: "0000:40:00", Role: topology.RoleStorage, HCAType: "MT4129", BoardID: "b", LinkLayer: topology.LinkLayerEthernet,
		Functions: 2, Ports: 2, Active: 2, Present: []event.PortRef{ref("mlx5_8", 1), ref("mlx5_9", 1)}}
	lost := CardState{Card: "0000:c0:00", Role: topology.RoleStorage, HCAType: "MT4129", BoardID: "b", LinkLayer: topology.LinkLayerEthernet,
		Functions: 1, Ports: 1, Active: 1, Present: []event.PortRef{ref("mlx5_10", 1)}}
	ss, _ := NewMemory().Judge(Input{Cards: []CardState{full, lost}, Now: t0})
	if len(ss) != 1 || ss[0].Card != "0000:c0:00" || !slices.Equal(ss[0].Ports, []event.PortRef{ref("mlx5_10", 1)}) ||
		ss[0].Message != "Card 0000:c0:00 (Storage) has 1 active ports, expected 2 (peer mode)" {
		t.Fatalf("lost function: %+v", ss)
	}
}

// TestLinkState_4_3_ChangedPortsAreRaisedAgain: when the ports an anomaly
// names change, it is cleared with the old ones and raised with the new
// ones, so each clear names exactly what its raise named.
func TestLinkState_4_3_ChangedPortsAreRaisedAgain(t *testing.T) {
	card := func(active int, inactive ...event.PortRef) []CardState {
		c := CardState{Card: "0000:40:00", Role: topology.RoleCompute, HCAType: "h", BoardID: "b", Functions: 2, Ports: 2, Active: active,
			Present: []event.PortRef{ref("mlx5_0", 1), ref("mlx5_1", 1)}, Inactive: inactive}
		peer := c
		peer.Card, peer.Active, peer.Inactive = "0000:50:00", 2, nil
		peer.Present = []event.PortRef{ref("mlx5_2", 1), ref("mlx5_3", 1)}
		return []CardState{c, peer}
	}
	m := NewMemory()
	ss, _ := m.Judge(Input{Cards: card(0, ref("mlx5_0", 1), ref("mlx5_1", 1)), Now: t0})
	if len(ss) != 1 || len(ss[0].Ports) != 2 {
		t.Fatalf("raise: %+v", ss)
	}
	ss, _ = m.Judge(Input{Cards: card(1, ref("mlx5_1", 1)), Now: t0.Add(time.Second)})
	if got := kinds(ss); !slices.Equal(got, []event.Kind{event.KindCardRecovered, event.KindCardAnomaly}) ||
		len(ss[0].Ports) != 2 || !slices.Equal(ss[1].Ports, []event.PortRef{ref("mlx5_1", 1)}) {
		t.Fatalf("re-raise: %+v", ss)
	}
	if l := m.Anomalies["0000:40:00"]; !slices.Equal(l.Ports, []event.PortRef{ref("mlx5_1", 1)}) {
		t.Fatalf("latched ports %+v", l)
	}
}

// TestLinkState_4_3_NoSubnetManager: every IB port of a group waiting
// for a subnet manager past the hold is one non-fatal node-level
// condition, cleared when they stop waiting (DESIGN.md difference 12).
func TestLinkState_4_3_NoSubnetManager(t *testing.T) {
	ports := []event.PortRef{ref("mlx5_0", 1), ref("mlx5_1", 1)}
	g := func(waiting bool) []SMGroup {
		return []SMGroup{{Role: topology.RoleCompute, Ports: ports, Waiting: waiting}}
	}
	m := NewMemory()
	if ss, _ := m.JudgeSubnetManager(g(true), t0, 30*time.Second); len(ss) != 0 {
		t.Fatalf("before the hold: %+v", ss)
	}
	ss, _ := m.JudgeSubnetManager(g(true), t0.Add(30*time.Second), 30*time.Second)
	if len(ss) != 1 || ss[0].Kind != event.KindNoSubnetManager || ss[0].IsFatal || ss[0].IsHealthy ||
		!slices.Equal(ss[0].Ports, ports) || ss[0].ErrorCode[0] != "no-subnet-manager" || ss[0].Action != nil ||
		!strings.Contains(ss[0].Message, "sm_lid 0x0") {
		t.Fatalf("raise: %+v", ss)
	}
	if ss, _ := m.JudgeSubnetManager(g(true), t0.Add(time.Minute), 30*time.Second); len(ss) != 0 {
		t.Fatalf("re-raised: %+v", ss)
	}
	ss, _ = m.JudgeSubnetManager(g(false), t0.Add(2*time.Minute), 30*time.Second)
	if len(ss) != 1 || ss[0].Kind != event.KindSubnetManagerFound || !ss[0].IsHealthy || !slices.Equal(ss[0].Ports, ports) {
		t.Fatalf("clear: %+v", ss)
	}
	if len(m.NoSM) != 0 {
		t.Fatalf("memory kept %+v", m.NoSM)
	}
	// Waiting shorter than the hold: nothing, and nothing to clear.
	m.JudgeSubnetManager(g(true), t0, 30*time.Second)
	if ss, _ := m.JudgeSubnetManager(g(false), t0.Add(time.Second), 30*time.Second); len(ss) != 0 {
		t.Fatalf("unraised condition cleared: %+v", ss)
	}
}

// TestLinkState_4_3_MemoryReplayAndValidate: the card memory replays its
// events and drops what no check could have written.
func TestLinkState_4_3_MemoryReplayAndValidate(t *testing.T) {
	m := NewMemory()
	raise, _ := NewMemory().Judge(Input{Cards: singlePortCards(4, 2), Now: t0})
	ev := event.New(raise[0], event.Stamp{Now: t0})
	m.Replay(&ev)
	if l, ok := m.Anomalies[cardName(2)]; !ok || !slices.Equal(l.Ports, []event.PortRef{ref("mlx5_2", 1)}) || l.Check != event.InfiniBandStateCheck {
		t.Fatalf("replayed %+v", m.Anomalies)
	}
	m.Short["\x00"] = t0
	m.Anomalies["0000:99:00"] = Latched{Ports: []event.PortRef{{Device: "", Port: 1}}}
	if d := m.Validate(); len(d) != 2 {
		t.Fatalf("dropped %v", d)
	}
}
