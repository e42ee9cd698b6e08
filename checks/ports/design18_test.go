package ports

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/nichealth/nichealthd/event"
)

// DESIGN.md difference 18: a NIC whose loss another check claims (the PCI
// inventory, for a function still on the bus without its RDMA device) is
// gone here after three enumerations without a word, counts as gone for
// card homogeneity, and says nothing when it returns (the claiming check
// clears its own condition). If the claim ends while the NIC is still
// missing, the disappearance is reported here after all: a lost NIC is
// never nobody's.
func TestDesign_18_ClaimedLossIsNotReportedTwice(t *testing.T) {
	st := NewPortMemory()
	c := newCheck()
	claimed := true
	var asked []string
	c.Claimed = func(dev, addr string) bool { asked = append(asked, dev+"@"+addr); return claimed }
	both := map[string]Presence{"mlx5_0": {LinkLayer: ib, PCIAddress: "0000:3b:00.0"}, "mlx5_1": {LinkLayer: ib, PCIAddress: "0000:4c:00.0"}}
	one := map[string]Presence{"mlx5_0": both["mlx5_0"]}
	c.Enumerated(st, both, "/x")
	c.Evaluate(st, Observation{Device: "mlx5_1", Port: 1, LinkLayer: ib}, Steady)
	for i := 1; i <= 6; i++ {
		if ev, _ := c.Enumerated(st, one, "/x"); len(ev) != 0 {
			t.Fatalf("enumeration %d: %+v", i, ev)
		}
	}
	if !slices.Equal(st.Claimed, []string{"mlx5_1"}) || len(st.Disappeared) != 0 || asked[0] != "mlx5_1@0000:4c:00.0" {
		t.Fatalf("claimed %v disappeared %v asked %v", st.Claimed, st.Disappeared, asked)
	}
	if g := st.GoneByCard(); g["0000:4c:00"] != 1 || !st.Gone("mlx5_1") {
		t.Fatalf("gone by card %v", g)
	}
	// Back: nothing here.
	if ev, ch := c.Enumerated(st, both, "/x"); len(ev) != 0 || !ch || len(st.Claimed) != 0 {
		t.Fatalf("back: %+v claimed %v", ev, st.Claimed)
	}
	// Lost again; the claim ends while it is still missing.
	for i := 1; i <= DisappearAfter; i++ {
		c.Enumerated(st, one, "/x")
	}
	claimed = false
	ev, _ := c.Enumerated(st, one, "/x")
	if len(ev) != 1 || ev[0].Kind != event.KindDeviceDisappeared || !ev[0].IsFatal || !slices.Equal(st.Disappeared, []string{"mlx5_1"}) || len(st.Claimed) != 0 {
		t.Fatalf("claim ended: %+v disappeared %v claimed %v", ev, st.Disappeared, st.Claimed)
	}
	if ev, _ := c.Enumerated(st, both, "/x"); len(ev) != 1 || ev[0].Kind != event.KindDeviceReappeared {
		t.Fatalf("back after its own report: %+v", ev)
	}
}

// A NIC back before it counted as gone (a driver reload) is noted for a
// log line, with the enumerations that missed it; no event.
func TestDesign_18_BackBeforeGoneIsNoted(t *testing.T) {
	st := NewPortMemory()
	c := newCheck()
	both := map[string]Presence{"mlx5_0": {LinkLayer: ib}, "mlx5_1": {LinkLayer: ib}}
	c.Enumerated(st, both, "/x")
	for missed := 1; missed < DisappearAfter; missed++ {
		for i := 0; i < missed; i++ {
			c.Enumerated(st, map[string]Presence{"mlx5_0": {LinkLayer: ib}}, "/x")
		}
		if ev, _ := c.Enumerated(st, both, "/x"); len(ev) != 0 {
			t.Fatalf("back after %d: %+v", missed, ev)
		}
		if b := c.TakeBack(); fmt.Sprint(b) != fmt.Sprintf("[{mlx5_1 %d}]", missed) {
			t.Fatalf("back after %d noted as %v", missed, b)
		}
	}
	if b := c.TakeBack(); len(b) != 0 {
		t.Fatalf("noted twice: %v", b)
	}
}

// What a missing NIC keeps: its identity moves with a rename, is found by
// PCI address with its last known ports, and a state file's entry for a
// device never known, or one no daemon wrote, is dropped.
func TestPorts_MissingNICKeepsItsIdentity(t *testing.T) {
	m := NewPortMemory()
	m.KnownDevices = []string{"mlx5_3"}
	m.DeviceAddrs = map[string]string{"mlx5_3": "0000:3b:00.0"}
	m.PortStates["mlx5_3_2"] = PortState{Device: "mlx5_3", Port: 2, State: "4: ACTIVE", PhysicalState: "5: LinkUp"}
	m.PortStates["mlx5_3_1"] = PortState{Device: "mlx5_3", Port: 1, State: "4: ACTIVE", PhysicalState: "5: LinkUp"}
	m.Identity = map[string]Identity{"mlx5_3": {Role: "Compute", GPUs: "GPU3 (0000:5d:00.0 GPU-3)"}, "mlx5_9": {Role: "Compute"}}
	b, _ := json.Marshal(m)
	r := NewPortMemory()
	if err := json.Unmarshal(b, r); err != nil {
		t.Fatal(err)
	}
	if d := r.Validate(); len(d) != 1 || r.Identity["mlx5_3"].GPUs != "GPU3 (0000:5d:00.0 GPU-3)" {
		t.Fatalf("dropped %v, identity %+v", d, r.Identity)
	}
	dev, ports, reported := r.NICAt("0000:3b:00.0")
	if dev != "mlx5_3" || fmt.Sprint(ports) != "[{mlx5_3 1} {mlx5_3 2}]" || reported {
		t.Fatalf("NICAt: %s %v %v", dev, ports, reported)
	}
	if dev, _, _ := r.NICAt("0000:99:00.0"); dev != "" {
		t.Fatalf("NICAt of an unknown address: %s", dev)
	}
	r.Rename("mlx5_3", "ibp59s0")
	if r.Identity["ibp59s0"].Role != "Compute" || len(r.Identity) != 1 {
		t.Fatalf("renamed: %+v", r.Identity)
	}
	r.KnownDevices = []string{"ibp59s0"} // as the port check's rename leaves it
	r.Identity["ibp59s0"] = Identity{Role: string(make([]byte, maxIdentityBytes+1))}
	if d := r.Validate(); len(d) != 1 || len(r.Identity) != 0 {
		t.Fatalf("oversized identity kept: %v %+v", d, r.Identity)
	}
}
