package sanity

import (
	"reflect"
	"testing"

	"github.com/nichealth/nichealthd/topology"
)

// TestSanity_Slides_LinkSpeedMatchesPeers proves the slides' "link
// speed/width matches capability", measured against the port's role peers
// (a node has no configured expected rate; its like ports are the
// reference).
func TestSanity_Slides_LinkSpeedMatchesPeers(t *testing.T) {
	const ib, eth = topology.LinkLayerInfiniBand, topology.LinkLayerEthernet
	c, s := topology.RoleCompute, topology.RoleStorage
	p := func(dev string, role topology.Role, ll string, g float64, active bool) PortRate {
		return PortRate{Device: dev, Port: 1, Role: role, LinkLayer: ll, Gbps: g, Active: active}
	}
	cases := []struct {
		name  string
		ports []PortRate
		want  []string // devices flagged, in order
	}{
		{"all at 400", []PortRate{p("a", c, ib, 400, true), p("b", c, ib, 400, true), p("c", c, ib, 400, true)}, nil},
		{"one at 200 among 400s", []PortRate{p("a", c, ib, 400, true), p("b", c, ib, 200, true), p("c", c, ib, 400, true), p("d", c, ib, 400, true)}, []string{"b"}},
		{"two slow ones", []PortRate{p("a", c, ib, 100, true), p("b", c, ib, 200, true), p("c", c, ib, 400, true), p("d", c, ib, 400, true), p("e", c, ib, 400, true)}, []string{"a", "b"}},
		{"faster than the mode is fine", []PortRate{p("a", c, ib, 800, true), p("b", c, ib, 400, true), p("c", c, ib, 400, true)}, nil},
		{"down port placeholder 10 Gb/s never compared", []PortRate{p("a", c, ib, 10, false), p("b", c, ib, 400, true), p("c", c, ib, 400, true)}, nil},
		{"RoCE placeholder 40 Gb/s never compared", []PortRate{p("a", s, eth, 40, false), p("b", s, eth, 200, true), p("c", s, eth, 200, true)}, nil},
		{"down ports do not make the mode", []PortRate{p("a", c, ib, 10, false), p("b", c, ib, 10, false), p("c", c, ib, 10, false), p("d", c, ib, 400, true), p("e", c, ib, 200, true)}, []string{"e"}},
		{"a single active port has no peers", []PortRate{p("a", c, ib, 200, true), p("b", c, ib, 400, false)}, nil},
		{"tie: the slower half is flagged", []PortRate{p("a", c, ib, 200, true), p("b", c, ib, 400, true)}, []string{"a"}},
		{"roles are not peers", []PortRate{p("a", c, ib, 400, true), p("b", c, ib, 400, true), p("c", s, ib, 200, true)}, nil},
		{"link layers are not peers", []PortRate{p("a", s, eth, 400, true), p("b", s, eth, 400, true), p("c", s, ib, 200, true)}, nil},
		{"unknown rate is not compared", []PortRate{p("a", c, ib, 0, true), p("b", c, ib, 400, true), p("c", c, ib, 400, true)}, nil},
		{"empty", nil, nil},
	}
	for _, cs := range cases {
		t.Run(cs.name, func(t *testing.T) {
			var got []string
			for _, f := range RateVsPeers(cs.ports) {
				if f.Kind != KindRateBelowPeers {
					t.Errorf("kind %q", f.Kind)
				}
				got = append(got, f.Device)
			}
			if !reflect.DeepEqual(got, cs.want) {
				t.Errorf("flagged %v, want %v", got, cs.want)
			}
		})
	}

	// Different HCA types of one role are not peers (DESIGN.md field facts:
	// like with like); an unset HCA type groups by role and link layer.
	mixed := []PortRate{
		{Device: "cx7a", Port: 1, Role: s, LinkLayer: eth, HCAType: "MT4129", Gbps: 400, Active: true},
		{Device: "cx7b", Port: 1, Role: s, LinkLayer: eth, HCAType: "MT4129", Gbps: 400, Active: true},
		{Device: "cx6", Port: 1, Role: s, LinkLayer: eth, HCAType: "MT4123", Gbps: 200, Active: true},
	}
	if got := RateVsPeers(mixed); len(got) != 0 {
		t.Errorf("different HCA types compared: %+v", got)
	}

	got := RateVsPeers([]PortRate{p("mlx5_0", c, ib, 400, true), {Device: "mlx5_2", Port: 1, Role: c, LinkLayer: ib, Gbps: 200, Active: true}, p("mlx5_3", c, ib, 400, true)})
	const want = "Port mlx5_2 port 1 runs at 200 Gb/s, its Compute peers at 400 Gb/s: check the cable and the switch port"
	if len(got) != 1 || got[0].Message != want || got[0].Port != 1 || got[0].Metadata["peerRateGbps"] != "400" || got[0].Metadata["rateGbps"] != "200" {
		t.Errorf("got %+v\nwant %q", got, want)
	}
	got = RateVsPeers([]PortRate{p("a", "", ib, 400, true), p("b", "", ib, 56.25, true), p("c", "", ib, 400, true)})
	if len(got) != 1 || got[0].Message != "Port b port 1 runs at 56.25 Gb/s, its peers at 400 Gb/s: check the cable and the switch port" {
		t.Errorf("no role: %+v", got)
	}
}

// The same rule on a simulated DGX H100: one compute port retrained to HDR.
func TestSanity_Slides_LinkSpeedMatchesPeersOnTree(t *testing.T) {
	n := buildHost(t, "dgx-h100")
	opts := Options{RateVsPeers: true}
	if got := Run(n.h.Paths(), n.devs, nil, opts); len(got) != 0 {
		t.Fatalf("healthy node: %+v", got)
	}
	if err := n.h.SetRate("mlx5_2", 1, "200 Gb/sec (4X HDR)"); err != nil {
		t.Fatal(err)
	}
	// A storage port that is down reports a placeholder rate.
	if err := n.h.SetPortState("mlx5_9", 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	if err := n.h.SetRate("mlx5_9", 1, "40 Gb/sec (4X QDR)"); err != nil {
		t.Fatal(err)
	}
	n.rediscover(t)
	got := Run(n.h.Paths(), n.devs, nil, opts)
	if len(got) != 1 || got[0].Device != "mlx5_2" || got[0].Kind != KindRateBelowPeers ||
		got[0].Message != "Port mlx5_2 port 1 runs at 200 Gb/s, its Compute peers at 400 Gb/s: check the cable and the switch port" {
		t.Fatalf("got %+v", got)
	}
	// The daemon passes live rates instead of discovery's.
	live := func(d *topology.Device, p *topology.Port) Live { return Live{Gbps: 400, Link: linkOf("4: ACTIVE")} }
	if got := Run(n.h.Paths(), n.devs, live, opts); len(got) != 0 {
		t.Fatalf("live rates all 400: %+v", got)
	}
}
