package sanity

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// pathFindings runs the PCIe option and keeps the path findings.
func pathFindings(n *host) []Finding {
	var out []Finding
	for _, f := range Run(n.h.Paths(), n.devs, nil, Options{PCIe: true}) {
		if f.PCI != "" {
			out = append(out, f)
		}
	}
	return out
}

// TestPCIePath_Findings downtrains one hop of a simulated node and pins
// what the finding says: the hop, its role, current against what both
// ends support, and every monitored NIC below it, once per hop.
func TestPCIePath_Findings(t *testing.T) {
	type link struct{ target, speed, width string }
	cases := []struct {
		name   string
		shape  string
		set    []link
		kind   string // "" = no path finding
		pci    string
		below  []string
		msg    string   // exact when set
		want   []string // substrings otherwise
		expect map[string]string
	}{
		{name: "switch downstream port x16 to x8 above two NICs", shape: "h100-oci", set: []link{{"mlx5_0", "", "8"}},
			kind: KindPCIePathWidth, pci: "0000:17:00.0", below: []string{"mlx5_0", "mlx5_1"},
			msg: "PCIe switch downstream port 0000:17:00.0 runs its link at 32.0 GT/s x8, both ends support 32.0 GT/s x16 (50% of the bandwidth): " +
				"NICs mlx5_0, mlx5_1 below it are limited to that; check the riser, cable or retimer of this link and reseat, a reboot retrains it",
			expect: map[string]string{"pciHop": "0000:17:00.0", "hopRole": "switch downstream port", "nics": "mlx5_0,mlx5_1",
				"currentWidth": "8", "expectedWidth": "16", "currentSpeed": "32.0 GT/s", "expectedSpeed": "32.0 GT/s"}},
		{name: "root port Gen5 to Gen3", shape: "dgx-h100", set: []link{{"0000:15:01.0", "8", ""}},
			kind: KindPCIePathSpeed, pci: "0000:15:01.0", below: []string{"mlx5_0"},
			msg: "PCIe root port 0000:15:01.0 runs its link at 8.0 GT/s x16, both ends support 32.0 GT/s x16 (25% of the bandwidth): " +
				"NIC mlx5_0 below it is limited to that; check the riser, cable or retimer of this link and reseat, a reboot retrains it"},
		{name: "switch upstream port judged against the root port", shape: "dgx-h100", set: []link{{"0000:16:00.0", "", "4"}},
			kind: KindPCIePathWidth, pci: "0000:16:00.0", below: []string{"mlx5_0"},
			want: []string{"PCIe switch upstream port 0000:16:00.0 runs its link at 32.0 GT/s x4, both ends support 32.0 GT/s x16 (25% of the bandwidth)"}},
		{name: "speed and width low is a width finding", shape: "dgx-h100", set: []link{{"mlx5_3", "16", "8"}},
			kind: KindPCIePathWidth, below: []string{"mlx5_3"}, want: []string{"at 16.0 GT/s x8, both ends support 32.0 GT/s x16 (25% of"}},
		{name: "both ends support less: Gen4 switch under a Gen5 root port", shape: "a100-oci"},
		{name: "both ends support less: x8 NIC in an x16 root port", shape: "h100-oci"},
		{name: "Gen3 below a Gen4 switch is judged against Gen4", shape: "a100-oci", set: []link{{"0000:40:01.0", "8", ""}},
			kind: KindPCIePathSpeed, pci: "0000:40:01.0", below: []string{"mlx5_1", "mlx5_2"},
			want: []string{"runs its link at 8.0 GT/s x16, both ends support 16.0 GT/s x16 (50% of the bandwidth): NICs mlx5_1, mlx5_2 below"}},
		{name: "unknown current speed fails open", shape: "h100-oci", set: []link{{"mlx5_0", "Unknown", ""}}},
		{name: "unknown max speed fails open", shape: "dgx-h100", set: []link{{"0000:15:01.0", "8", ""}, {"0000:16:00.0:max", "Unknown", ""}}},
		{name: "width 0 (link down) fails open", shape: "dgx-h100", set: []link{{"mlx5_0", "", "0"}}},
		{name: "storage card under its root port", shape: "dgx-h100", set: []link{{"mlx5_8", "", "8"}},
			kind: KindPCIePathWidth, pci: "0000:40:01.0", below: []string{"mlx5_8", "mlx5_9"}, want: []string{"PCIe root port 0000:40:01.0"}},
		{name: "management NIC is not monitored", shape: "dgx-h100", set: []link{{"mlx5_12", "", "1"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			n := buildHost(t, c.shape)
			for _, l := range c.set {
				if addr, ok := strings.CutSuffix(l.target, ":max"); ok {
					writeFile(t, n.h.SysRoot()+"/bus/pci/devices/"+addr+"/max_link_speed", l.speed+"\n")
					continue
				}
				if _, err := n.h.SetPCIeLink(l.target, l.speed, l.width); err != nil {
					t.Fatal(err)
				}
			}
			got := pathFindings(n)
			if c.kind == "" {
				if len(got) != 0 {
					t.Fatalf("want no path finding, got %+v", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("want one finding, got %+v", got)
			}
			f := got[0]
			if f.Kind != c.kind || (c.pci != "" && f.PCI != c.pci) || !reflect.DeepEqual(f.Below, c.below) || f.Device != c.below[0] || f.Port != 0 {
				t.Fatalf("finding %s %s below %v (device %s/%d), want %s %s below %v", f.Kind, f.PCI, f.Below, f.Device, f.Port, c.kind, c.pci, c.below)
			}
			if c.msg != "" && f.Message != c.msg {
				t.Fatalf("message\n%s\nwant\n%s", f.Message, c.msg)
			}
			for _, w := range c.want {
				if !strings.Contains(f.Message, w) {
					t.Fatalf("message %q lacks %q", f.Message, w)
				}
			}
			for k, v := range c.expect {
				if f.Metadata[k] != v {
					t.Errorf("metadata %s = %q, want %q", k, f.Metadata[k], v)
				}
			}
			for _, d := range c.below {
				if !f.AppliesTo(d, 1) {
					t.Errorf("finding does not apply to %s port 1", d)
				}
			}
		})
	}
}

// TestPCIePath_RetrainClears: the finding stands while the link is slow
// and is gone once it trains back, with nothing left on any other hop.
func TestPCIePath_RetrainClears(t *testing.T) {
	n := buildHost(t, "h100-oci")
	if got := pathFindings(n); len(got) != 0 {
		t.Fatalf("healthy node: %+v", got)
	}
	addr, err := n.h.SetPCIeLink("mlx5_0", "", "8")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if got := pathFindings(n); len(got) != 1 || got[0].PCI != addr {
			t.Fatalf("pass %d: %+v", i, got)
		}
	}
	if _, err := n.h.SetPCIeLink(addr, "", "16"); err != nil {
		t.Fatal(err)
	}
	if got := pathFindings(n); len(got) != 0 {
		t.Fatalf("after retraining: %+v", got)
	}
}

// TestPCIePath_HealthyShapes: every shape's trained links, Gen4 switches
// and x8 NICs in x16 slots included, give no path finding.
func TestPCIePath_HealthyShapes(t *testing.T) {
	for _, shape := range []string{"dgx-h100", "gb200", "l40s-onprem", "minimal", "a100-oci", "h100-oci", "l40s-oci"} {
		t.Run(shape, func(t *testing.T) {
			t.Parallel()
			if got := pathFindings(buildHost(t, shape)); len(got) != 0 {
				t.Fatalf("%s: %s", shape, fmt.Sprint(got))
			}
		})
	}
}

// TestPCIePath_UnreadableHopFailsOpen: a hop whose link files cannot be
// read gives no finding (Run reports health, not I/O trouble).
func TestPCIePath_UnreadableHopFailsOpen(t *testing.T) {
	n := buildHost(t, "h100-oci")
	if _, err := n.h.SetPCIeLink("mlx5_0", "", "8"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, n.h.SysRoot()+"/bus/pci/devices/0000:17:00.0/max_link_width", "many\n")
	if got := pathFindings(n); len(got) != 0 {
		t.Fatalf("%+v", got)
	}
}

// TestPCIePath_MemoryValidateAndRename: hop reports restore by
// "<kind>|<PCI address>" with their check, follow a NIC's rename, and
// malformed ones are dropped and listed.
func TestPCIePath_MemoryValidateAndRename(t *testing.T) {
	m := &Memory{Reported: map[string]string{}, Hops: map[string]HopReport{
		"pcie-path-width|0000:17:00.0": {Check: "EthernetDegradationCheck", Message: "x8", NICs: []string{"mlx5_0", "mlx5_1"}},
		"no-address":                   {Check: "EthernetDegradationCheck"},
		"pcie-path-speed|0000:15:01.0": {Message: "no check"},
	}}
	dropped := m.Validate()
	if len(dropped) != 2 || len(m.Hops) != 1 {
		t.Fatalf("dropped %v, kept %+v", dropped, m.Hops)
	}
	m.Rename("mlx5_1", "enp24s0f1")
	if got := m.Hops["pcie-path-width|0000:17:00.0"].NICs; !reflect.DeepEqual(got, []string{"mlx5_0", "enp24s0f1"}) {
		t.Fatalf("after rename %v", got)
	}
	var old Memory // a state file from before hop reports
	if old.Validate(); old.Hops == nil {
		t.Fatal("validated memory has no hop map")
	}
}
