package inventory

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/devlink"
	"github.com/nichealth/nichealthd/topology/gpumeta"
	pci "github.com/nichealth/nichealthd/topology/inventory"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const (
	bootA = "11111111-1111-4111-8111-111111111111"
	bootB = "22222222-2222-4222-8222-222222222222"
)

var gpu3 = []gpumeta.GPU{{ID: 3, PCIAddress: "0000:5d:00.0", UUID: "GPU-3"}}

// fn is a compute IB function at addr in a given state.
func fn(addr, device string, state pci.State) pci.Function {
	f := pci.Function{Address: addr, Card: topology.CardOf(addr), Class: 0x020700, Driver: pci.CoreDriver,
		Serial: "SN-" + addr, Role: topology.RoleCompute, RoleReason: "Compute: PIX to GPU3", GPUs: gpu3}
	switch state {
	case pci.Unbound:
		f.Driver = ""
	case pci.OtherDriver:
		f.Driver = "vfio-pci"
	case pci.NoRDMA:
	default:
		f.RDMA = []string{device}
	}
	if state == pci.Healthy {
		f.Device, f.Monitored, f.NodeGUID = device, true, "guid-"+device
	}
	return f
}

func scan(boot string, now time.Time, fns ...pci.Function) Scan {
	return Scan{Functions: fns, Complete: true, Boot: boot, Now: now}
}

// apply folds specs into a health model, as the daemon does.
func apply(m *health.Model, specs []event.Spec) {
	for _, s := range specs {
		e := event.New(s, event.Stamp{NodeName: "n", Now: t0})
		m.Apply(&e)
	}
}

// Seed link-state 7.3 (device disappeared: fatal, REPLACE_VM) for the
// devices that never appeared: a compute or storage function on the bus
// without a usable RDMA device is fatal on that function, named by its
// PCI address with its role and GPUs and the fix; the healthy, the left
// alone and those of unknown or management role are not judged.
func TestLinkState_7_3_PresentWithoutRDMAIsFatal(t *testing.T) {
	for _, tc := range []struct {
		name  string
		f     pci.Function
		fatal bool
		want  []string // in the message
	}{
		{"unbound (probe failed)", fn("0000:3b:00.0", "", pci.Unbound), true,
			[]string{"0000:3b:00.0", "Compute, PIX to GPU3", "no driver", "journalctl -k --grep 0000:3b:00.0", "modprobe", "firmware", "GPU3 (0000:5d:00.0 GPU-3)"}},
		{"bound to vfio-pci", fn("0000:3b:00.0", "", pci.OtherDriver), true,
			[]string{"vfio-pci", "nicExclusionRegex", "journalctl -k --grep 0000:3b:00.0"}},
		{"mlx5_core without RDMA device", fn("0000:3b:00.0", "", pci.NoRDMA), true,
			[]string{"no RDMA device", "modprobe mlx5_ib", "journalctl -k --grep 0000:3b:00.0"}},
		{"healthy", fn("0000:3b:00.0", "mlx5_3", pci.Healthy), false, nil},
		{"left alone (excluded)", func() pci.Function { f := fn("0000:3b:00.0", "", pci.Unbound); f.LeftAlone = "excluded"; return f }(), false, nil},
		{"VF", func() pci.Function { f := fn("0000:3b:00.2", "", pci.Unbound); f.IsVF = true; return f }(), false, nil},
		{"management role", func() pci.Function {
			f := fn("0000:3b:00.0", "", pci.Unbound)
			f.Role = topology.RoleManagement
			return f
		}(), false, nil},
		{"unknown role", func() pci.Function { f := fn("0000:3b:00.0", "", pci.Unbound); f.Role = topology.RoleUnknown; return f }(), false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem, exp := NewMemory(), NewExpected()
			specs, _, _ := JudgeFunctions(mem, exp, scan(bootA, t0, tc.f))
			if !tc.fatal {
				if len(specs) != 0 || len(mem.Functions) != 0 {
					t.Fatalf("specs %+v", specs)
				}
				return
			}
			if len(specs) != 1 || specs[0].Kind != event.KindFunctionFailed || !specs[0].IsFatal || specs[0].CheckName != event.InfiniBandStateCheck {
				t.Fatalf("specs %+v", specs)
			}
			s := specs[0]
			for _, w := range tc.want {
				if !strings.Contains(s.Message, w) {
					t.Errorf("message lacks %q: %s", w, s.Message)
				}
			}
			if s.Metadata["pci"] != "0000:3b:00.0" || s.Metadata["role"] != "Compute" || !strings.Contains(s.Metadata["gpus"], "GPU3") ||
				!slices.Equal(s.Entities, []event.Entity{{Type: event.EntityPCI, Value: "0000:3b:00.0"}}) {
				t.Errorf("spec %+v", s)
			}
			if _, ok := exp.Lookup("0000:3b:00.0"); !ok {
				t.Error("a judged compute function is not expected from now on")
			}
			// Judged again unchanged: nothing new. Healthy again: its clear.
			if sp, _, _ := JudgeFunctions(mem, exp, scan(bootA, t0.Add(time.Minute), tc.f)); len(sp) != 0 {
				t.Fatalf("re-raised: %+v", sp)
			}
			sp, ch, _ := JudgeFunctions(mem, exp, scan(bootA, t0.Add(2*time.Minute), fn("0000:3b:00.0", "mlx5_3", pci.Healthy)))
			if len(sp) != 1 || sp[0].Kind != event.KindFunctionOK || !sp[0].IsHealthy || !ch || sp[0].ErrorCode[0] != s.ErrorCode[0] ||
				!strings.Contains(sp[0].Message, "mlx5_3") {
				t.Fatalf("clear %+v", sp)
			}
		})
	}
}

// Seed link-state 7.2 case 2 leaves a device missing after a reboot to
// card homogeneity, which cannot see a card that took its peers' mode
// with it or a node of single-port cards that lost one. The expected
// inventory outlives the reboot: a compute NIC monitored last boot and
// gone from the PCI bus now is fatal at the first judgement, named as the
// issue asks ("0000:3b:00.0 (compute, PIX to GPU3) present last boot,
// absent now"); it clears when the card returns.
func TestLinkState_7_2_Case2_AbsentAfterRebootIsFatal(t *testing.T) {
	mem, exp := NewMemory(), NewExpected()
	JudgeFunctions(mem, exp, scan(bootA, t0, fn("0000:3b:00.0", "mlx5_3", pci.Healthy), fn("0000:4c:00.0", "mlx5_4", pci.Healthy)))
	b, _ := json.Marshal(exp) // the file the daemon writes
	exp = NewExpected()
	if err := json.Unmarshal(b, exp); err != nil || len(exp.Validate()) != 0 {
		t.Fatal(err)
	}
	mem = NewMemory() // reboot: the boot-scoped memory is gone
	specs, _, _ := JudgeFunctions(mem, exp, scan(bootB, t0.Add(time.Hour), fn("0000:4c:00.0", "mlx5_4", pci.Healthy)))
	if len(specs) != 1 {
		t.Fatalf("specs %+v", specs)
	}
	s := specs[0]
	if s.Kind != event.KindFunctionAbsent || !s.IsFatal || s.Metadata["fault"] != FaultAbsent || s.Metadata["lastDevice"] != "mlx5_3" {
		t.Fatalf("spec %+v", s)
	}
	for _, w := range []string{"NIC function 0000:3b:00.0 (Compute, PIX to GPU3; was mlx5_3; serial SN-0000:3b:00.0) present last boot, absent now",
		"nichealthctl ack 0000:3b:00.0", "GPU3"} {
		if !strings.Contains(s.Message, w) {
			t.Errorf("message lacks %q: %s", w, s.Message)
		}
	}
	// Still absent: said once. Incomplete listing: nothing judged.
	if sp, _, _ := JudgeFunctions(mem, exp, scan(bootB, t0.Add(2*time.Hour), fn("0000:4c:00.0", "mlx5_4", pci.Healthy))); len(sp) != 0 {
		t.Fatalf("said twice: %+v", sp)
	}
	// The card returns (reseated): its condition clears.
	sp, _, _ := JudgeFunctions(mem, exp, scan(bootB, t0.Add(3*time.Hour), fn("0000:3b:00.0", "mlx5_3", pci.Healthy), fn("0000:4c:00.0", "mlx5_4", pci.Healthy)))
	if len(sp) != 1 || sp[0].Kind != event.KindFunctionOK {
		t.Fatalf("return: %+v", sp)
	}
	// Monitored this boot, then gone: the port check's disappearance, not
	// a second condition here.
	if sp, _, _ := JudgeFunctions(mem, exp, scan(bootB, t0.Add(4*time.Hour), fn("0000:4c:00.0", "mlx5_4", pci.Healthy))); len(sp) != 0 {
		t.Fatalf("runtime disappearance raised here too: %+v", sp)
	}
	// An incomplete listing says nothing is absent.
	mem2 := NewMemory()
	if sp, _, _ := JudgeFunctions(mem2, exp, Scan{Boot: bootB, Now: t0}); len(sp) != 0 {
		t.Fatalf("incomplete listing judged absence: %+v", sp)
	}
}

// A function unbound at boot and then gone from the bus is re-graded from
// failed to absent: one condition (one entity) throughout.
func TestInventory_UnboundThenGoneIsOneCondition(t *testing.T) {
	mem, exp := NewMemory(), NewExpected()
	model := health.NewModel()
	sp, _, _ := JudgeFunctions(mem, exp, scan(bootA, t0, fn("0000:3b:00.0", "", pci.Unbound)))
	apply(model, sp)
	sp, _, _ = JudgeFunctions(mem, exp, scan(bootA, t0.Add(time.Minute)))
	if len(sp) != 1 || sp[0].Kind != event.KindFunctionAbsent || !strings.Contains(sp[0].Message, "present earlier this boot") {
		t.Fatalf("specs %+v", sp)
	}
	apply(model, sp)
	cs := model.Conditions()
	if len(cs) != 1 || cs[0].Entity.Kind != condition.PCI || cs[0].Kind != event.KindFunctionAbsent || !cs[0].Since.Equal(t0) {
		t.Fatalf("conditions %+v", cs)
	}
}

// A card moved to another slot carries its serial number: the expectation
// follows it and nothing is reported missing.
func TestLinkState_7_2_MovedCardIsFollowed(t *testing.T) {
	mem, exp := NewMemory(), NewExpected()
	JudgeFunctions(mem, exp, scan(bootA, t0, fn("0000:3b:00.0", "mlx5_3", pci.Healthy)))
	moved := fn("0000:9b:00.0", "mlx5_3", pci.Healthy)
	moved.Serial = "SN-0000:3b:00.0"
	sp, _, ech := JudgeFunctions(NewMemory(), exp, scan(bootB, t0, moved))
	if len(sp) != 0 || !ech {
		t.Fatalf("specs %+v", sp)
	}
	if _, ok := exp.Lookup("0000:3b:00.0"); ok {
		t.Fatal("the old slot is still expected")
	}
	if _, ok := exp.Lookup("0000:9b:00.0"); !ok {
		t.Fatal("the new slot is not expected")
	}
}

// nichealthctl ack on an absent function: a deliberate removal is
// acknowledged once, forgotten, and not reported again at the next boot.
func TestInventory_AcknowledgeForgetsARemovedCard(t *testing.T) {
	mem, exp := NewMemory(), NewExpected()
	JudgeFunctions(mem, exp, scan(bootA, t0, fn("0000:3b:00.0", "mlx5_3", pci.Healthy), fn("0000:4c:00.0", "", pci.Unbound)))
	mem = NewMemory()
	JudgeFunctions(mem, exp, scan(bootB, t0, fn("0000:4c:00.0", "", pci.Unbound)))
	if _, err := Acknowledge(mem, exp, "0000:4c:00.0", "uid 0"); !errors.Is(err, ErrStillPresent) || !strings.Contains(err.Error(), "nicExclusionRegex") {
		t.Fatalf("ack of a present unbound function: %v", err)
	}
	if _, err := Acknowledge(mem, exp, "0000:77:00.0", "uid 0"); !errors.Is(err, ErrNotRaised) {
		t.Fatalf("ack of an unknown function: %v", err)
	}
	sp, err := Acknowledge(mem, exp, "0000:3b:00.0", "uid 0")
	if err != nil || len(sp) != 1 || sp[0].Kind != event.KindFunctionOK || !strings.Contains(sp[0].Message, "acknowledged by uid 0") {
		t.Fatalf("ack: %+v %v", sp, err)
	}
	if _, ok := exp.Lookup("0000:3b:00.0"); ok {
		t.Fatal("still expected after the acknowledgement")
	}
	if sp, _, _ := JudgeFunctions(NewMemory(), exp, scan(bootB, t0, fn("0000:4c:00.0", "", pci.Unbound))); len(sp) != 1 || sp[0].Kind != event.KindFunctionFailed {
		t.Fatalf("after the ack, the next judgement: %+v", sp)
	}
}

// A raised function condition with nothing left to hold it (the function
// was excluded, or is no longer expected) is cleared: every raise has its
// clear.
func TestInventory_LeftAloneClears(t *testing.T) {
	mem, exp := NewMemory(), NewExpected()
	JudgeFunctions(mem, exp, scan(bootA, t0, fn("0000:3b:00.0", "", pci.Unbound)))
	f := fn("0000:3b:00.0", "", pci.Unbound)
	f.LeftAlone = "excluded by the NIC filter"
	sp, _, _ := JudgeFunctions(mem, exp, scan(bootA, t0, f))
	if len(sp) != 1 || sp[0].Kind != event.KindFunctionOK || !strings.Contains(sp[0].Message, "excluded") {
		t.Fatalf("%+v", sp)
	}
	// Raised, then forgotten from the expectation by hand: cleared.
	mem = NewMemory()
	mem.Functions["0000:77:00.0"] = Raised{Check: event.InfiniBandStateCheck, Fault: FaultAbsent}
	sp, _, _ = JudgeFunctions(mem, NewExpected(), scan(bootA, t0))
	if len(sp) != 1 || sp[0].Kind != event.KindFunctionOK || len(mem.Functions) != 0 {
		t.Fatalf("%+v", sp)
	}
}

func card(c, role, hca, fw, board string, devs ...string) Card {
	cd := Card{Card: c, Role: topology.Role(role), HCAType: hca, FWVer: fw, BoardID: board, LinkLayer: topology.LinkLayerInfiniBand, Devices: devs}
	for _, d := range devs {
		cd.Ports = append(cd.Ports, event.PortRef{Device: d, Port: 1})
	}
	return cd
}

// DESIGN.md difference 20: firmware drift is judged among the cards of one
// PSID (board_id), whatever their role: the reference is the majority (a
// tie: the newest), the odd card a non-fatal finding naming it and the
// majority. Different PSIDs side by side are different products, never
// drift (a DGX H100's dual-port MT_0000000834 cards beside its
// MT_0000000838 compute cards, in one role when both run InfiniBand); a
// card whose slot held another PSID before this boot's card is the
// finding instead.
func TestDesign_20_FirmwareDriftAmongCardsOfOnePSID(t *testing.T) {
	const fw, old, psid, dual = "28.39.1002", "28.36.1010", "MT_0000000838", "MT_0000000834"
	eight := func(mod func(i int, c *Card)) []Card {
		var out []Card
		for i := 0; i < 8; i++ {
			c := card("0000:"+string(rune('1'+i))+"5:00", "Compute", "MT4129", fw, psid, "mlx5_"+string(rune('0'+i)))
			if mod != nil {
				mod(i, &c)
			}
			out = append(out, c)
		}
		return out
	}
	dgx := func(dualFW ...string) []Card {
		out := eight(nil)
		for i, f := range dualFW {
			out = append(out, card(fmt.Sprintf("0000:%x0:00", 0xa+i), "Compute", "MT4129", f, dual, fmt.Sprintf("mlx5_%d", 8+i)))
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		cards []Card
		odd   []string // "card drift"
		want  []string
	}{
		{"uniform", eight(nil), nil, nil},
		{"one card never flashed", eight(func(i int, c *Card) {
			if i == 3 {
				c.FWVer = old
			}
		}), []string{"0000:45:00 fw_ver"}, []string{"Card 0000:45:00", "runs firmware 28.36.1010", "7 of the 8 MT_0000000838 MT4129 cards", "run 28.39.1002", "mlxfwmanager"}},
		{"another PSID in the role is another product", eight(func(i int, c *Card) {
			if i == 5 {
				c.BoardID, c.FWVer = "MT_0000000999", "28.99.0001"
			}
		}), nil, nil},
		{"DGX H100 in InfiniBand: two PSIDs, each uniform", dgx(fw, fw), nil, nil},
		{"DGX H100: the dual-port cards run their own firmware", dgx("28.40.1000", "28.40.1000"), nil, nil},
		{"DGX H100: one dual-port card never flashed", dgx("28.40.1000", old), []string{"0000:b0:00 fw_ver"}, []string{"1 of the 2 MT_0000000834 MT4129 cards run 28.40.1000"}},
		{"one PSID across roles", []Card{card("0000:15:00", "Compute", "MT4129", fw, psid, "mlx5_0"), card("0000:25:00", "Compute", "MT4129", fw, psid, "mlx5_1"),
			card("0000:35:00", "Storage", "MT4129", old, psid, "mlx5_8")}, []string{"0000:35:00 fw_ver"}, []string{"(Storage, mlx5_8) runs firmware 28.36.1010, while 2 of the 3"}},
		{"two cards, two firmwares: the older is odd", []Card{card("0000:15:00", "Storage", "MT4129", fw, psid, "mlx5_8"), card("0000:25:00", "Storage", "MT4129", old, psid, "mlx5_9")},
			[]string{"0000:25:00 fw_ver"}, []string{"runs firmware 28.36.1010"}},
		{"ASICs are not compared", []Card{card("0000:15:00", "Compute", "MT4129", fw, psid, "mlx5_0"), card("0000:35:00", "Compute", "MT4123", "20.39.1002", psid, "mlx5_1")}, nil, nil},
		{"unknown firmware is not judged", eight(func(i int, c *Card) {
			if i == 2 {
				c.FWVer = ""
			}
		}), nil, nil},
		{"unknown PSID is not judged", eight(func(i int, c *Card) {
			if i == 2 {
				c.BoardID, c.FWVer = "", old
			}
		}), nil, nil},
		{"a swapped card", eight(func(i int, c *Card) {
			if i == 6 {
				c.BoardID, c.SwappedFrom, c.Address = "MT_0000000999", psid, "0000:75:00.0"
			}
		}), []string{"0000:75:00 board_id"}, []string{"is board MT_0000000999; before this boot its slot held board MT_0000000838", "nichealthctl ack 0000:75:00.0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := NewMemory()
			specs, _ := JudgeDrift(mem, tc.cards, true)
			var got []string
			for _, s := range specs {
				got = append(got, s.Card+" "+s.Metadata["drift"])
				if s.Kind != event.KindDrift || s.IsFatal || s.IsHealthy || len(s.Ports) == 0 {
					t.Errorf("spec %+v", s)
				}
				for _, w := range tc.want {
					if !strings.Contains(s.Message, w) {
						t.Errorf("message lacks %q: %s", w, s.Message)
					}
				}
			}
			if !slices.Equal(got, tc.odd) {
				t.Fatalf("odd %v, want %v", got, tc.odd)
			}
			if sp, _ := JudgeDrift(mem, tc.cards, true); len(sp) != 0 {
				t.Fatalf("raised twice: %+v", sp)
			}
			sp, _ := JudgeDrift(mem, eight(nil), true)
			if len(sp) != len(tc.odd) {
				t.Fatalf("clears %+v", sp)
			}
			for _, s := range sp {
				if s.Kind != event.KindDriftOK || !s.IsHealthy || s.Card == "" || len(s.Ports) == 0 {
					t.Errorf("clear %+v", s)
				}
			}
		})
	}
	mem := NewMemory()
	JudgeDrift(mem, eight(func(i int, c *Card) {
		if i == 1 {
			c.FWVer = old
		}
	}), true)
	if sp, _ := JudgeDrift(mem, nil, false); len(sp) != 1 || !strings.Contains(sp[0].Message, "switched off") {
		t.Fatalf("switched off: %+v", sp)
	}
}

// DESIGN.md difference 20: the expected inventory remembers the PSID each
// slot held; another PSID in the slot after a reboot is a swapped card,
// a finding for that boot (the slot then held the new model, so the next
// boot says nothing) until acknowledged. A PSID that cannot be read keeps
// the one remembered.
func TestDesign_20_SwappedCardIsAFindingForThatBoot(t *testing.T) {
	exp := NewExpected()
	withPSID := func(f pci.Function, psid string) pci.Function { f.BoardID = psid; return f }
	a := withPSID(fn("0000:3b:00.0", "mlx5_3", pci.Healthy), "MT_0000000838")
	JudgeFunctions(NewMemory(), exp, scan(bootA, t0, a))
	if exp.Swapped("0000:3b:00.0", bootA) != "" || exp.Functions["0000:3b:00.0"].BoardID != "MT_0000000838" {
		t.Fatalf("first boot: %+v", exp.Functions)
	}
	swapped := withPSID(fn("0000:3b:00.0", "mlx5_3", pci.Healthy), "MT_0000000999")
	swapped.Serial = "SN-other"
	mem := NewMemory()
	_, _, ech := JudgeFunctions(mem, exp, scan(bootB, t0.Add(time.Hour), swapped))
	if !ech || exp.Swapped("0000:3b:00.0", bootB) != "MT_0000000838" {
		t.Fatalf("after the swap: %+v", exp.Functions)
	}
	// Judged again this boot (the minute's scan, a restart), and once
	// with its PSID unreadable: still the swap of this boot.
	JudgeFunctions(mem, exp, scan(bootB, t0.Add(2*time.Hour), swapped))
	JudgeFunctions(mem, exp, scan(bootB, t0.Add(3*time.Hour), withPSID(swapped, "")))
	if exp.Swapped("0000:3b:00.0", bootB) != "MT_0000000838" || exp.Functions["0000:3b:00.0"].BoardID != "MT_0000000999" {
		t.Fatalf("later this boot: %+v", exp.Functions)
	}
	cards := []Card{{Card: "0000:3b:00", Address: "0000:3b:00.0", Role: topology.RoleCompute, HCAType: "MT4129", FWVer: "28.39.1002", BoardID: "MT_0000000999",
		Devices: []string{"mlx5_3"}, Ports: []event.PortRef{{Device: "mlx5_3", Port: 1}}, SwappedFrom: exp.Swapped("0000:3b:00.0", bootB)}}
	sp, _ := JudgeDrift(mem, cards, true)
	if len(sp) != 1 || sp[0].Metadata["drift"] != DriftModel || sp[0].Metadata["previous"] != "MT_0000000838" || sp[0].Metadata["value"] != "MT_0000000999" {
		t.Fatalf("finding %+v", sp)
	}
	// Acknowledged (by any function of the card): cleared and forgotten.
	ack, ok := AcknowledgeSwap(mem, exp, "0000:3b:00.1", bootB, "uid 0")
	if !ok || len(ack) != 1 || ack[0].Kind != event.KindDriftOK || !strings.Contains(ack[0].Message, "acknowledged by uid 0") || exp.Swapped("0000:3b:00.0", bootB) != "" {
		t.Fatalf("ack %+v %v", ack, ok)
	}
	cards[0].SwappedFrom = exp.Swapped("0000:3b:00.0", bootB)
	if sp, _ := JudgeDrift(mem, cards, true); len(sp) != 0 {
		t.Fatalf("after the ack: %+v", sp)
	}
	if _, ok := AcknowledgeSwap(mem, exp, "0000:3b:00.0", bootB, "uid 0"); ok {
		t.Fatal("acknowledged twice")
	}
	// Unacknowledged, the next boot's judgement says nothing: last boot the
	// slot held the new model.
	exp2 := NewExpected()
	JudgeFunctions(NewMemory(), exp2, scan(bootA, t0, a))
	JudgeFunctions(NewMemory(), exp2, scan(bootB, t0.Add(time.Hour), swapped))
	JudgeFunctions(NewMemory(), exp2, scan("33333333-3333-4333-8333-333333333333", t0.Add(48*time.Hour), swapped))
	if s := exp2.Swapped("0000:3b:00.0", "33333333-3333-4333-8333-333333333333"); s != "" {
		t.Fatalf("the boot after the swap still reports it: %q", s)
	}
}

func TestInventory_NewerVersion(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"28.39.1002", "28.36.1010", true}, {"28.36.1010", "28.39.1002", false}, {"28.39.1002", "28.39.1002", false},
		{"28.100.0", "28.99.9", true}, {"28.39.1002.1", "28.39.1002", true}, {"x.1", "w.9", true},
	} {
		if got := newerVersion(tc.a, tc.b); got != tc.want {
			t.Errorf("newerVersion(%s, %s) = %v", tc.a, tc.b, got)
		}
	}
}

// GPUd's documented NIC complement per GPU model (leptonai/gpud
// threshold_default.go): A100 1 port at 200 Gb/s; H100, H200, B200 8 at
// 400 Gb/s, for an 8-GPU board only.
func TestInventory_DefaultExpectationByGPUModel(t *testing.T) {
	gpus := func(n int, name string) []gpumeta.GPU {
		var out []gpumeta.GPU
		for i := 0; i < n; i++ {
			out = append(out, gpumeta.GPU{ID: i, Name: name})
		}
		return out
	}
	for _, tc := range []struct {
		gpus  []gpumeta.GPU
		ports int
		rate  float64
		ok    bool
	}{
		{gpus(8, "NVIDIA H100 80GB HBM3"), 8, 400, true},
		{gpus(8, "NVIDIA H200"), 8, 400, true},
		{gpus(8, "NVIDIA B200"), 8, 400, true},
		{gpus(8, "NVIDIA A100-SXM4-80GB"), 1, 200, true},
		{gpus(2, "NVIDIA A100 80GB PCIe"), 1, 200, true},
		{gpus(2, "NVIDIA H100 PCIe"), 0, 0, false},
		{gpus(8, "NVIDIA L40S"), 0, 0, false},
		{gpus(8, ""), 0, 0, false},
		{nil, 0, 0, false},
	} {
		e, ok := DefaultExpectation(tc.gpus)
		if ok != tc.ok || e.Ports != tc.ports || e.RateGbps != tc.rate {
			t.Errorf("%d x %+v: %+v %v", len(tc.gpus), tc.gpus, e, ok)
		}
		if ok && !strings.Contains(e.Why, "expectedComputePorts") {
			t.Errorf("why %q does not say how to change it", e.Why)
		}
	}
}

// Seed 4.4 removed the speed check because it needed per-GPU-type
// configuration and could not tell compute from storage NICs; this brings
// it back where those objections do not hold: only compute ports count,
// and the expectation is the GPU model's documented NIC complement or the
// operator's. Fewer active compute ports at the rate than expected, for
// longer than the hold, is one fatal node-level condition naming the
// shortfall; it clears as soon as the count is met.
func TestLinkState_4_4_FewerComputePortsThanExpected(t *testing.T) {
	exp := Expectation{Ports: 8, RateGbps: 400, Why: "H100"}
	ports := func(mod func(i int, p *ComputePort)) []ComputePort {
		var out []ComputePort
		for i := 0; i < 8; i++ {
			p := ComputePort{Device: "mlx5_" + string(rune('0'+i)), Port: 1, Active: true, State: "ACTIVE", RateGbps: 400}
			if mod != nil {
				mod(i, &p)
			}
			out = append(out, p)
		}
		return out
	}
	short := ports(func(i int, p *ComputePort) {
		switch i {
		case 3:
			p.Active, p.State = false, "DOWN"
		case 5:
			p.RateGbps = 200
		}
	})
	in := PortsInput{Expect: exp, Ports: short[:7], Missing: []string{"NIC function 0000:3b:00.0"}, Hold: time.Minute, Now: t0, Check: event.InfiniBandStateCheck}
	mem := NewMemory()
	if sp, ch := JudgePorts(mem, in); len(sp) != 0 || !ch || mem.Ports.ShortSince.IsZero() {
		t.Fatalf("raised before the hold: %+v", sp)
	}
	in.Now = t0.Add(59 * time.Second)
	if sp, _ := JudgePorts(mem, in); len(sp) != 0 {
		t.Fatalf("raised before the hold: %+v", sp)
	}
	in.Now = t0.Add(time.Minute)
	sp, _ := JudgePorts(mem, in)
	if len(sp) != 1 || sp[0].Kind != event.KindPortsShort || !sp[0].IsFatal {
		t.Fatalf("after the hold: %+v", sp)
	}
	for _, w := range []string{"Only 5 of 8", "400 Gb/s", "mlx5_3 port 1 DOWN", "mlx5_5 port 1 at 200 Gb/s", "0000:3b:00.0 has no port"} {
		if !strings.Contains(sp[0].Message, w) {
			t.Errorf("message lacks %q: %s", w, sp[0].Message)
		}
	}
	if sp, _ := JudgePorts(mem, in); len(sp) != 0 {
		t.Fatalf("raised twice: %+v", sp)
	}
	in.Ports, in.Missing = ports(nil), nil
	sp, _ = JudgePorts(mem, in)
	if len(sp) != 1 || sp[0].Kind != event.KindPortsOK || !sp[0].IsHealthy || mem.Ports != (PortsMemory{}) {
		t.Fatalf("clear: %+v", sp)
	}
	// A blip shorter than the hold says nothing.
	in.Ports = short
	in.Now = t0.Add(2 * time.Minute)
	JudgePorts(mem, in)
	in.Ports = ports(nil)
	if sp, _ := JudgePorts(mem, in); len(sp) != 0 || mem.Ports != (PortsMemory{}) {
		t.Fatalf("blip: %+v", sp)
	}
	// Nothing expected: never raised.
	if sp, _ := JudgePorts(NewMemory(), PortsInput{Ports: short, Now: t0, Hold: 0}); len(sp) != 0 {
		t.Fatalf("%+v", sp)
	}
}

func TestInventory_MemoryValidateAndReplay(t *testing.T) {
	m := NewMemory()
	m.Functions["nope"] = Raised{Fault: FaultAbsent}
	m.Functions["0000:3b:00.0"] = Raised{Fault: "melted"}
	m.Functions["0000:4c:00.0"] = Raised{Fault: FaultUnbound}
	m.Drift["x"] = Raised{Fault: DriftFirmware, Card: "y"}
	if d := m.Validate(); len(d) != 3 || len(m.Functions) != 1 || len(m.Drift) != 0 {
		t.Fatalf("dropped %v, left %+v", d, m)
	}
	r := NewMemory()
	for _, s := range []event.Spec{
		{Kind: event.KindFunctionAbsent, CheckName: event.InfiniBandStateCheck, IsFatal: true, Metadata: map[string]string{"pci": "0000:3b:00.0", "fault": FaultAbsent}},
		{Kind: event.KindDrift, CheckName: event.InfiniBandStateCheck, Card: "0000:15:00", Ports: []event.PortRef{{Device: "mlx5_0", Port: 1}}, Metadata: map[string]string{"drift": DriftFirmware}},
		{Kind: event.KindPortsShort, CheckName: event.InfiniBandStateCheck, IsFatal: true},
	} {
		e := event.New(s, event.Stamp{Now: t0})
		r.Replay(&e)
	}
	if r.Functions["0000:3b:00.0"].Fault != FaultAbsent || len(r.Drift) != 1 || r.Drift[DriftKey("0000:15:00", DriftFirmware)].Ports[0].Device != "mlx5_0" || !r.Ports.Raised {
		t.Fatalf("replayed %+v", r)
	}
	for _, s := range []event.Spec{
		{Kind: event.KindFunctionOK, Metadata: map[string]string{"pci": "0000:3b:00.0"}},
		{Kind: event.KindDriftOK, Card: "0000:15:00", Metadata: map[string]string{"drift": DriftFirmware}},
		{Kind: event.KindPortsOK},
	} {
		e := event.New(s, event.Stamp{Now: t0})
		r.Replay(&e)
	}
	if len(r.Functions)+len(r.Drift) != 0 || r.Ports.Raised {
		t.Fatalf("after the clears %+v", r)
	}
	e := NewExpected()
	e.Functions["0000:3b:00.0"] = ExpectedFunction{Role: "Compute"}
	e.Functions["0000:4c:00.0"] = ExpectedFunction{Role: "Management"}
	e.Functions["bad"] = ExpectedFunction{Role: "Compute"}
	if d := e.Validate(); len(d) != 2 || len(e.Functions) != 1 {
		t.Fatalf("expected validate %v %+v", d, e)
	}
}

// DESIGN.md section 7: devlink's fw.psid and running fw.version feed the
// drift finding where sysfs left them empty (sysfs's values stand where it
// has them), so a card whose RDMA device never registered them is still
// compared with its peers.
func TestDesign_7_DevlinkFeedsDrift(t *testing.T) {
	const fw, old, psid = "28.39.1002", "28.36.1010", "MT_0000000838"
	var devs []*topology.Device
	var cards []Card
	var infos []devlink.Info
	for i := 0; i < 4; i++ {
		cardAddr := "0000:" + string(rune('1'+i)) + "5:00"
		pci := cardAddr + ".0"
		name := "mlx5_" + string(rune('0'+i))
		c := card(cardAddr, "Compute", "MT4129", fw, psid, name)
		running := fw
		if i == 2 {
			c.FWVer, c.BoardID = "", "" // sysfs said nothing
			running = old
		}
		if i == 3 {
			running = old // devlink disagrees with sysfs: sysfs stands
		}
		cards = append(cards, c)
		devs = append(devs, &topology.Device{Name: name, PCIAddress: pci, Card: cardAddr})
		infos = append(infos, devlink.Info{Device: devlink.Device{Bus: "pci", Name: pci}, Fixed: map[string]string{"fw.psid": psid},
			Running: map[string]string{"fw.version": running}})
	}
	filled := FillFromDevlink(slices.Clone(cards), devs, infos)
	if filled[2].FWVer != old || filled[2].BoardID != psid || filled[3].FWVer != fw {
		t.Fatalf("filled %+v", filled)
	}
	specs, _ := JudgeDrift(NewMemory(), filled, true)
	if len(specs) != 1 || specs[0].Card != "0000:35:00" || specs[0].Metadata["drift"] != "fw_ver" {
		t.Fatalf("drift %+v", specs)
	}
	// Without devlink nothing changes: the card without values is not judged.
	if specs, _ := JudgeDrift(NewMemory(), FillFromDevlink(cards, devs, nil), true); len(specs) != 0 {
		t.Fatalf("drift without devlink %+v", specs)
	}
}
