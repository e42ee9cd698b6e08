package ibnet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func load(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func degraded(g *Graph) []Link {
	var out []Link
	for _, l := range g.Links {
		if l.Degraded {
			out = append(out, l)
		}
	}
	return out
}

func guid(g *Graph, e End) GUID { return g.Nodes[e.Node].GUID }

// The samples of testdata/README.md, counted by hand from their text:
// switches and HCAs are their Switch and Ca blocks, links the distinct
// port pairs.
func TestFabric_12_RealSamplesCounted(t *testing.T) {
	for _, tc := range []struct {
		file                          string
		switches, hcas, routers, link int
		degraded                      int
	}{
		// The rdma-core manual's example: 2 Voltaire switches, 4 InfiniHost
		// HCAs, 7 links of which two trained at 1x among 4x peers.
		{"rdma-core-manpage-example.topo", 2, 4, 0, 7, 2},
		// One 36-port QDR switch and five ConnectX-2 HCAs.
		{"mlx4-qdr-5hosts.topo", 1, 5, 0, 5, 0},
		// A 2023 SwitchIB EDR cluster: 4 leaves, 2 spines, 96 HCAs, 96 HCA
		// links and 48 inter-switch links, one of them trained at DDR.
		{"switchib-edr-2023.topo", 6, 96, 0, 144, 1},
	} {
		t.Run(tc.file, func(t *testing.T) {
			g := Parse(load(t, tc.file))
			if len(g.Problems) != 0 {
				t.Errorf("problems: %v", g.Problems)
			}
			if n := g.Count(Switch); n != tc.switches {
				t.Errorf("switches %d, want %d", n, tc.switches)
			}
			if n := g.Count(HCA); n != tc.hcas {
				t.Errorf("HCAs %d, want %d", n, tc.hcas)
			}
			if n := g.Count(Router); n != tc.routers {
				t.Errorf("routers %d, want %d", n, tc.routers)
			}
			if n := len(g.Links); n != tc.link {
				t.Errorf("links %d, want %d", n, tc.link)
			}
			if n := len(degraded(g)); n != tc.degraded {
				t.Errorf("degraded links %d, want %d: %+v", n, tc.degraded, degraded(g))
			}
			for _, nd := range g.Nodes {
				if !nd.Described {
					t.Errorf("node %s (%s) only seen as a far end", nd.GUID, nd.Name)
				}
			}
		})
	}
}

func TestFabric_12_EDRSampleDetails(t *testing.T) {
	g := Parse(load(t, "switchib-edr-2023.topo"))
	// ec0d9a0300ec8480 port 11 to ec0d9a0300ec8200 port 11 is 4xDDR among
	// 4xEDR inter-switch links.
	d := degraded(g)
	if len(d) != 1 {
		t.Fatalf("degraded %+v", d)
	}
	l := d[0]
	if guid(g, l.A) != 0xec0d9a0300ec8200 || l.A.Port != 11 || guid(g, l.B) != 0xec0d9a0300ec8480 || l.B.Port != 11 ||
		l.Rate() != "4xDDR" || l.Expected() != "4xEDR" || l.Gbps() != 16 {
		t.Errorf("degraded link %+v", l)
	}
	sw := g.Node(0xec0d9a0300ec8240)
	if sw == nil || sw.Kind != Switch || sw.LID != 48 || sw.NumPorts != 36 || sw.Name != "SwitchIB Mellanox Technologies" ||
		sw.VendorID != 0x2c9 || sw.DeviceID != 0xcb20 || sw.SysImageGUID != 0xec0d9a0300ec8240 || len(g.PortsOf(g.Index(0xec0d9a0300ec8240))) != 36 {
		t.Fatalf("switch ec8240: %+v", sw)
	}
	// A GUID printed without its leading zero (8c0eb0300ddc0f6) is the same
	// HCA as "H-08c0eb0300ddc0f6".
	h := g.Node(0x08c0eb0300ddc0f6)
	hp := g.PortsOf(g.Index(0x08c0eb0300ddc0f6))
	if h == nil || h.Kind != HCA || h.Name != "node046 HCA-1" || h.LID != 103 || h.DeviceID != 0x1017 || len(hp) != 1 ||
		hp[0].GUID != 0x08c0eb0300ddc0f6 || guid(g, hp[0].Remote) != 0xec0d9a0300ec8240 || hp[0].Remote.Port != 12 {
		t.Fatalf("node046: %+v %+v", h, hp)
	}
	// A description that is not "<host> HCA-1" stays whole.
	if c := g.Node(0x506b4b030043f9e2); c == nil || c.Name != "controller mlx5_0" {
		t.Errorf("controller: %+v", c)
	}
	for _, l := range g.Links {
		if l.Disagree {
			t.Errorf("ends disagree on %+v", l)
		}
		if g.End(l.A).Name == "" || g.End(l.B).Name == "" {
			t.Errorf("unnamed end %+v", l)
		}
	}
}

func TestFabric_12_ManPageEndsDisagree(t *testing.T) {
	g := Parse(load(t, "rdma-core-manpage-example.topo"))
	var found bool
	for _, l := range g.Links {
		if guid(g, l.A) == 0x0008f10403960558 && l.A.Port == 1 {
			found = true
			// The switch printed 4xSDR, the HCA 1xSDR: the slower one is
			// what the link carries.
			if !l.Disagree || l.Rate() != "1xSDR" || !l.Degraded || l.Expected() != "4xSDR" {
				t.Errorf("link %+v", l)
			}
			if l.A.PortGUID != 0x0008f10403960559 {
				t.Errorf("port GUID %s", l.A.PortGUID)
			}
		}
	}
	if !found {
		t.Fatal("no link from H-0008f10403960558 port 1")
	}
	if sw := g.Node(0x0008f10400410015); sw == nil || sw.SysImageGUID != 0 || sw.LID != 3 {
		t.Errorf("switch without sysimgguid: %+v", sw)
	}
	if h := g.Node(0x0008f10403960984); h == nil || h.LID != 16 || g.PortsOf(g.Index(0x0008f10403960984))[0].LMC != 1 {
		t.Errorf("HCA lid/lmc: %+v", h)
	}
}

func TestFabric_12_NodeNameMap(t *testing.T) {
	m, probs := ParseNodeNameMap(load(t, "rdma-core-manpage.map"))
	if len(probs) != 0 || len(m) != 14 {
		t.Fatalf("rdma-core map: %d names, problems %v", len(m), probs)
	}
	if m[0x0008f10400411a08] != "SW1  (Rack  3) ISR9024 Voltaire 9024D" {
		t.Errorf("spaces inside the quotes are kept: %q", m[0x0008f10400411a08])
	}
	m, probs = ParseNodeNameMap(load(t, "ib-monitoring-slides.map"))
	if len(probs) != 0 || len(m) != 8 || m[0x0002c903001c5e31] != "oss1" || m[0x0002c903008726a0] != "ibsw-core1 Spine 1" {
		t.Fatalf("slides map: %v %v", m, probs)
	}

	// Applied by node GUID, and by port GUID for maps written per port.
	g := Parse(load(t, "mlx4-qdr-5hosts.topo"))
	n := g.ApplyNames(map[GUID]string{0x0002c9020046c588: "leaf-a01", 0x0002c90300293e1f: "ip-211"})
	if n != 2 || g.Node(0x0002c9020046c588).Name != "leaf-a01" || g.Node(0x0002c90300293e1e).Name != "ip-211" {
		t.Fatalf("applied %d: %+v", n, g.Nodes)
	}
	if g.Node(0x0002c9020046c588).Desc != "Infiniscale-IV Mellanox Technologies" {
		t.Error("the description must stay what the dump said")
	}
	for _, l := range g.Links {
		if guid(g, l.B) == 0x0002c9020046c588 && g.End(l.B).Name != "leaf-a01" || guid(g, l.A) == 0x0002c9020046c588 && g.End(l.A).Name != "leaf-a01" {
			t.Errorf("link end not renamed: %+v", l)
		}
	}

	_, probs = ParseNodeNameMap([]byte("0xzz \"x\"\n0x1 \"unterminated\n0x2\n0x3 plain name # note\n"))
	if len(probs) != 3 {
		t.Errorf("problems %v", probs)
	}
	m, _ = ParseNodeNameMap([]byte("0x3 plain name # note\n3 \"later\"\n"))
	if m[3] != "later" {
		t.Errorf("last name wins: %v", m)
	}
}

// The format's variants that the samples lack: a grouped dump (-g) with
// chassis headers and [ext N] ports, a router, unknown width/speed, NDR,
// CRLF line ends, and lines that are not the format.
func TestFabric_12_FormatVariants(t *testing.T) {
	in := strings.Join([]string{
		"#", "# Topology file: generated on Mon Jan  1 00:00:00 2024", "#",
		"Chassis 1 (guid 0x8f10400411f56)", "", "# Spine Nodes",
		"vendid=0x2c9", "devid=0xd2f0", "sysimgguid=0xb83fd20300aa0000\t\t# Chassis 1 (QM9790)",
		"switchguid=0xb83fd20300aa0001(b83fd20300aa0001)\t# QM9790 Spine 1",
		"Switch\t64 \"S-b83fd20300aa0001\"\t\t# \"ibsw \"core\" 1\" enhanced port 0 lid 7 lmc 0",
		"[1][ext 1]\t\"H-b83fd20300a0b010\"[1](b83fd20300a0b010) \t\t# \"gpu-a017 mlx5_0\" lid 21 4xNDR",
		"[2]\t\"R-0002c90300000001\"[1](2c90300000002) \t\t# \"router one\" lid 30 ??NDR s=0 w=0 v=0",
		"[3]\t\"H-b83fd20300a0b020\"[1](b83fd20300a0b020) \t\t# \"gpu-a017 mlx5_1\" lid 22 2xNDR",
		"", "Non-Chassis Nodes", "",
		"vendid=0x2c9", "devid=0xa2dc", "sysimgguid=0xb83fd20300a0b010", "rtguid=0x0002c90300000001",
		"Rt\t1 \"R-0002c90300000001\"\t\t# \"router one\"",
		"[1](2c90300000002) \t\"S-b83fd20300aa0001\"[2]\t\t# lid 30 lmc 0 \"ibsw \"core\" 1\" lid 7 4x???",
		"garbage line",
		"[9]\tnot a node",
	}, "\r\n")
	g := Parse([]byte(in))
	if g.Count(Switch) != 1 || g.Count(HCA) != 2 || g.Count(Router) != 1 || len(g.Links) != 3 {
		t.Fatalf("counts: %d sw %d hca %d rt %d links; problems %v", g.Count(Switch), g.Count(HCA), g.Count(Router), len(g.Links), g.Problems)
	}
	if len(g.Problems) != 2 || g.Problems[0].Line != 24 || g.Problems[1].Line != 25 {
		t.Errorf("problems %v", g.Problems)
	}
	sw := g.Node(0xb83fd20300aa0001)
	if sw.Name != `ibsw "core" 1` || sw.LID != 7 || sw.Chassis != 1 || sw.NumPorts != 64 {
		t.Errorf("switch %+v", sw)
	}
	rt := g.Node(0x0002c90300000001)
	if rt.Kind != Router || !rt.Described || rt.LID != 30 {
		t.Errorf("router %+v", rt)
	}
	for _, l := range g.Links {
		switch {
		case guid(g, l.A) == 0x0002c90300000001:
			// The switch said ??NDR, the router 4x???: unknown either way.
			if l.Gbps() != 0 || l.Degraded {
				t.Errorf("router link %+v", l)
			}
		case guid(g, l.A) == 0xb83fd20300a0b020 && (l.Width != Width2x || !l.Degraded || l.Expected() != "4xNDR"):
			t.Errorf("2x link among 4x: %+v", l)
		case guid(g, l.A) == 0xb83fd20300a0b010 && (l.Gbps() != 400 || l.Degraded || l.A.PortGUID != 0xb83fd20300a0b010):
			t.Errorf("NDR link %+v", l)
		}
	}
	// An HCA only named as a far end is in the graph, not described.
	if h := g.Node(0xb83fd20300a0b010); h == nil || h.Described || h.Name != "gpu-a017 mlx5_0" || h.LID != 21 {
		t.Errorf("far-end HCA %+v", h)
	}
}

func TestFabric_12_ParseGUIDForms(t *testing.T) {
	for in, want := range map[string]GUID{
		"0x0002c903001c5e31": 0x0002c903001c5e31, "2c903001c5e31": 0x0002c903001c5e31,
		"b83f:d203:00a0:b010": 0xb83fd20300a0b010, " 0XB83FD20300A0B010 ": 0xb83fd20300a0b010,
	} {
		if g, err := ParseGUID(in); err != nil || g != want {
			t.Errorf("ParseGUID(%q) = %s, %v", in, g, err)
		}
	}
	for _, bad := range []string{"", "0x", "0x12345678901234567", "fe80::1", "0xg"} {
		if _, err := ParseGUID(bad); err == nil {
			t.Errorf("ParseGUID(%q) accepted", bad)
		}
	}
	if s := GUID(0x2c903001c5e31).String(); s != "0x0002c903001c5e31" {
		t.Errorf("String %s", s)
	}
}
