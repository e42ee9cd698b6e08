package cards

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology"
)

const (
	compute = topology.RoleCompute
	storage = topology.RoleStorage
)

// cardsOf builds n identical cards of a kind with the given active counts.
func cardsOf(role topology.Role, hca string, fns, ports int, bus int, active ...int) []CardState {
	return boardCardsOf(role, hca, "MT_0000000838", fns, ports, bus, active...)
}

// boardCardsOf is cardsOf with a board_id (PSID).
func boardCardsOf(role topology.Role, hca, board string, fns, ports int, bus int, active ...int) []CardState {
	out := make([]CardState, len(active))
	for i, a := range active {
		out[i] = CardState{Card: fmt.Sprintf("0000:%02x:00", bus+i), Role: role, HCAType: hca, BoardID: board, Functions: fns, Ports: ports, Active: a}
	}
	return out
}

func join(parts ...[]CardState) []CardState {
	var out []CardState
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

type want struct {
	card            string
	active, expects int
}

func TestCards_4_3_4_FieldValidation(t *testing.T) {
	tests := []struct {
		name  string
		cards []CardState
		want  []want
	}{
		{
			// H100 OCI: compute dual-port, storage single-port; no false
			// positive from comparing storage with compute.
			name: "H100 OCI healthy",
			cards: join(cardsOf(compute, "MT4129", 2, 2, 0x10, 2, 2, 2, 2, 2, 2, 2, 2),
				cardsOf(storage, "MT4129", 1, 1, 0x70, 1, 1)),
		},
		{
			name: "H100 OCI compute card drops to 1 active",
			cards: join(cardsOf(compute, "MT4129", 2, 2, 0x10, 2, 2, 1, 2, 2, 2, 2, 2),
				cardsOf(storage, "MT4129", 1, 1, 0x70, 1, 1)),
			want: []want{{"0000:12:00", 1, 2}},
		},
		{
			name: "H100 OCI storage card drops to 0 active",
			cards: join(cardsOf(compute, "MT4129", 2, 2, 0x10, 2, 2, 2, 2, 2, 2, 2, 2),
				cardsOf(storage, "MT4129", 1, 1, 0x70, 1, 0, 1)),
			want: []want{{"0000:71:00", 0, 1}},
		},
		{
			// L40: dual-port compute cards with one port cabled each: the
			// uncabled ports are a consistent pattern, not a fault.
			name:  "L40 one port cabled per card",
			cards: cardsOf(compute, "MT4123", 1, 2, 0x20, 1, 1),
		},
		{
			// Seed 4.3.4: "If Card A drops to 0 active → 0 < mode 1 →
			// FATAL", in a group of two: the 1:1 tie takes the higher
			// count (DESIGN.md difference 4).
			name:  "L40 card A drops to 0 active",
			cards: cardsOf(compute, "MT4123", 1, 2, 0x20, 0, 1),
			want:  []want{{"0000:20:00", 0, 1}},
		},
		{
			// Seed 4.3.4 H100 OCI with its two storage cards: "If storage
			// card drops to 0 active → 0 < mode 1 → FATAL".
			name: "H100 OCI two storage cards, one drops to 0 active",
			cards: join(cardsOf(compute, "MT4129", 2, 2, 0x10, 2, 2, 2, 2, 2, 2, 2, 2),
				cardsOf(storage, "MT4129", 1, 1, 0x70, 0, 1)),
			want: []want{{"0000:70:00", 0, 1}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			check(t, tc.cards, tc.want)
		})
	}
}

func check(t *testing.T, cards []CardState, wants []want) {
	t.Helper()
	got := Evaluate(cards)
	var g []want
	for _, a := range got {
		g = append(g, want{a.Card, a.Active, a.Expected})
	}
	if !reflect.DeepEqual(g, wants) {
		t.Errorf("anomalies = %+v, want %+v", g, wants)
	}
}

// TestCards_4_3_LikeWithLike: only cards of the same role, hca_type and
// board_id (PSID) are compared (DESIGN.md field facts), never by what the
// failure itself changes (functions or ports present).
func TestCards_4_3_LikeWithLike(t *testing.T) {
	tests := []struct {
		name  string
		cards []CardState
		want  []want
	}{
		{
			// Storage cards whose IB port 1 is uncabled by design while port
			// 2 carries Ethernet, beside single-port compute HCAs of the
			// same hca_type: their PSID tells them apart.
			name: "storage cards with an uncabled-by-design port vs single-port compute",
			cards: join(boardCardsOf(compute, "MT4129", "MT_0000000838", 1, 1, 0x10, 1, 1, 1, 1),
				boardCardsOf(compute, "MT4129", "MT_0000000970", 2, 2, 0x40, 1, 1)),
		},
		{
			name: "different hca_type in one role",
			cards: join(cardsOf(storage, "MT4129", 1, 1, 0x10, 1, 1, 1),
				cardsOf(storage, "MT4123", 1, 1, 0x40, 0)),
		},
		{
			name: "same shape, different role",
			cards: join(cardsOf(compute, "MT4129", 1, 1, 0x10, 1, 1, 1),
				cardsOf(storage, "MT4129", 1, 1, 0x40, 0, 0, 0)),
		},
		{
			// Seed 7.2 case 3: a dual-function card that lost a function
			// before the start still meets its peers, and lacks a port.
			name: "card that lost a function is still compared",
			cards: join(cardsOf(storage, "MT4129", 2, 2, 0x40, 2),
				cardsOf(storage, "MT4129", 1, 1, 0x41, 1)),
			want: []want{{"0000:41:00", 1, 2}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { check(t, tc.cards, tc.want) })
	}
}

// TestLinkState_7_2_Case3_StartupHomogeneity: the first poll with no
// persisted state finds a missing port by comparing with peers.
func TestLinkState_7_2_Case3_StartupHomogeneity(t *testing.T) {
	tests := []struct {
		name  string
		cards []CardState
		want  []want
		skip  string
	}{
		{name: "8 single-port cards, 7 ACTIVE, 1 DOWN",
			cards: cardsOf(compute, "MT4129", 1, 1, 0x80, 1, 1, 1, 1, 0, 1, 1, 1),
			want:  []want{{"0000:84:00", 0, 1}}},
		{name: "single card group is skipped", cards: cardsOf(compute, "MT4129", 1, 1, 0x80, 0),
			skip: "only card of its kind: no peers to compare with"},
		{name: "a tie takes the higher count", cards: cardsOf(compute, "MT4129", 1, 2, 0x80, 2, 2, 1, 1),
			want: []want{{"0000:82:00", 1, 2}, {"0000:83:00", 1, 2}}},
		{name: "two cards, one down: the tie takes 1", cards: cardsOf(compute, "MT4129", 1, 1, 0x80, 1, 0),
			want: []want{{"0000:81:00", 0, 1}}},
		{name: "mode 0 is skipped", cards: cardsOf(compute, "MT4129", 1, 1, 0x80, 0, 0, 0, 1),
			skip: "most peers have no active port"},
		{name: "more active than the mode is healthy", cards: cardsOf(compute, "MT4129", 1, 2, 0x80, 1, 1, 1, 2)},
		{name: "empty", cards: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			check(t, tc.cards, tc.want)
			for _, v := range Assess(tc.cards) {
				if v.Skip != tc.skip {
					t.Errorf("%s: skip = %q, want %q", v.Card, v.Skip, tc.skip)
				}
				if tc.skip != "" && (v.Anomalous || v.Message() != "") {
					t.Errorf("%s: skipped card judged: %+v", v.Card, v)
				}
			}
		})
	}
}

func TestLinkState_7_2_Case3_Messages(t *testing.T) {
	a := Anomaly{Card: "0000:84:00", Role: compute, Active: 0, Expected: 1}
	if got, want := a.Message(), "Card 0000:84:00 (Compute) has 0 active ports, expected 1 (peer mode)"; got != want {
		t.Errorf("anomaly message = %q, want %q", got, want)
	}
	if got, want := HealthyMessage("0000:84:00", compute, 1, 1), "Card 0000:84:00 (Compute) has 1 active ports, matching peer mode 1"; got != want {
		t.Errorf("healthy message = %q, want %q", got, want)
	}
	vs := Assess(cardsOf(compute, "MT4129", 1, 1, 0x83, 1, 0, 1))
	if got, want := vs[1].Message(), "Card 0000:84:00 (Compute) has 0 active ports, expected 1 (peer mode)"; got != want {
		t.Errorf("verdict message = %q, want %q", got, want)
	}
	if got, want := vs[0].Message(), "Card 0000:83:00 (Compute) has 1 active ports, matching peer mode 1"; got != want {
		t.Errorf("verdict message = %q, want %q", got, want)
	}
}

func dev(name, addr string, role topology.Role, hca string, mellanox, vf bool, ports ...[2]string) *topology.Device {
	d := &topology.Device{Name: name, PCIAddress: addr, Card: topology.CardOf(addr), Role: role, HCAType: hca, Mellanox: mellanox, IsVF: vf, NUMANode: 0}
	for i, p := range ports {
		d.Ports = append(d.Ports, topology.Port{Num: i + 1, State: p[0], PhysState: p[1]})
	}
	return d
}

var (
	up   = [2]string{"4: ACTIVE", "5: LinkUp"}
	down = [2]string{"1: DOWN", "3: Disabled"}
	arm  = [2]string{"3: ARMED", "5: LinkUp"}
	poll = [2]string{"4: ACTIVE", "2: Polling"}
	junk = [2]string{"N/A", ""}
)

// TestCards_4_3_2_GroupByCard: functions of one card fold together
// (0000:47:00.0 and .1), PCI domains are kept, only monitored PFs count,
// and ACTIVE+LinkUp is what "active" means.
func TestCards_4_3_2_GroupByCard(t *testing.T) {
	devs := []*topology.Device{
		dev("mlx5_0", "0000:47:00.0", compute, "MT4129", true, false, up),
		dev("mlx5_1", "0000:47:00.1", compute, "MT4129", true, false, down),
		dev("ibp3s0", "0000:03:00.0", compute, "MT4129", true, false, up),
		dev("ibP2p3s0", "0002:03:00.0", compute, "MT4129", true, false, arm),
		dev("mlx5_8", "0000:a1:00.0", storage, "MT4129", true, false, up, poll),
		dev("mlx5_9", "0000:a1:00.1", topology.RoleManagement, "MT4129", true, false, up),
		dev("mlx5_10", "0000:b1:00.0", topology.RoleManagement, "MT4129", true, false, up),
		dev("mlx5_20", "0000:47:00.2", topology.RoleUnknown, "MT4129", true, true, down),
		dev("irdma0", "0000:c1:00.0", compute, "", false, false, up),
		dev("mlx5_30", "", compute, "MT4129", true, false, up),
		dev("mlx5_31", "0000:d1:00.0", compute, "MT4129", true, false, junk),
		nil,
	}
	got := Group(devs, nil)
	ref := func(d string, p int) event.PortRef { return event.PortRef{Device: d, Port: p} }
	want := []CardState{
		{Card: "0000:03:00", Role: compute, HCAType: "MT4129", Functions: 1, Ports: 1, Active: 1,
			Present: []event.PortRef{ref("ibp3s0", 1)}},
		{Card: "0000:47:00", Role: compute, HCAType: "MT4129", Functions: 2, Ports: 2, Active: 1,
			Present: []event.PortRef{ref("mlx5_0", 1), ref("mlx5_1", 1)}, Inactive: []event.PortRef{ref("mlx5_1", 1)}},
		{Card: "0000:a1:00", Role: storage, HCAType: "MT4129", Functions: 1, Ports: 2, Active: 1,
			Present: []event.PortRef{ref("mlx5_8", 1), ref("mlx5_8", 2)}, Inactive: []event.PortRef{ref("mlx5_8", 2)}},
		{Card: "0000:d1:00", Role: compute, HCAType: "MT4129", Functions: 1, Ports: 1, Active: 0,
			Present: []event.PortRef{ref("mlx5_31", 1)}, Inactive: []event.PortRef{ref("mlx5_31", 1)}},
		{Card: "0002:03:00", Role: compute, HCAType: "MT4129", Functions: 1, Ports: 1, Active: 0,
			Present: []event.PortRef{ref("ibP2p3s0", 1)}, Inactive: []event.PortRef{ref("ibP2p3s0", 1)}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Group =\n%+v\nwant\n%+v", got, want)
	}
	// A custom predicate replaces PortActive.
	all := Group(devs[:2], func(*topology.Device, *topology.Port) bool { return true })
	if len(all) != 1 || all[0].Active != 2 {
		t.Errorf("custom isActive: %+v", all)
	}
}

func TestCards_4_3_2_PortActive(t *testing.T) {
	tests := []struct {
		state, phys string
		want        bool
	}{
		{"4: ACTIVE", "5: LinkUp", true},
		{"ACTIVE", "LinkUp", true},
		{"4: ACTIVE", "2: Polling", false},
		{"3: ARMED", "5: LinkUp", false},
		{"1: DOWN", "3: Disabled", false},
		{"", "", false},
		{"garbage", "5: LinkUp", false},
	}
	for _, tc := range tests {
		if got := PortActive(nil, &topology.Port{State: tc.state, PhysState: tc.phys}); got != tc.want {
			t.Errorf("PortActive(%q, %q) = %v", tc.state, tc.phys, got)
		}
	}
}
