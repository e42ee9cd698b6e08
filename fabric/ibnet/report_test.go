package ibnet

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/fabric/fattree"
)

// linkSet names every link by its ends' node names and ports (an HCA by
// name alone: the two formats know it by different GUIDs), so graphs
// read from different outputs of one fabric compare equal.
func linkSet(g *Graph) []string {
	var out []string
	end := func(e End) string {
		n := g.End(e)
		if n.Kind == Switch {
			return fmt.Sprintf("%s/%d", n.GUID, e.Port)
		}
		return fmt.Sprintf("%s/%d", n.Name, e.Port)
	}
	for _, l := range g.Links {
		a, b := end(l.A), end(l.B)
		if b < a {
			a, b = b, a
		}
		out = append(out, a+" "+b+" "+l.Rate())
	}
	slices.Sort(out)
	return out
}

// The slides' own workflow is `ibnetdiscover -p`. Two published excerpts
// of real fabrics (testdata/README.md) read as the lines say: each
// node's ports, the far ends, unconnected ports naming their switch.
func TestFabric_34_2_PortsReportRealExcerpts(t *testing.T) {
	g := Parse(load(t, "osc-edr-excerpt.ports"))
	if g.Format != PortsReport || len(g.Problems) != 0 {
		t.Fatalf("format %v, problems %v", g.Format, g.Problems)
	}
	// 3 HCAs; switches 1719, 2052 and 1781 have lines of their own,
	// ib-i1l2s01 (LID 1516) is only a far end.
	if g.Count(HCA) != 3 || g.Count(Switch) != 4 || len(g.Links) != 4 {
		t.Fatalf("%d HCAs %d switches %d links: %v", g.Count(HCA), g.Count(Switch), len(g.Links), linkSet(g))
	}
	sw := g.Node(0x7cfe9003009ce5b0)
	if sw == nil || sw.Kind != Switch || sw.LID != 1719 || sw.Name != "ib-i1l1s01" || !sw.Described || len(g.PortsOf(g.Index(0x7cfe9003009ce5b0))) != 3 {
		t.Fatalf("switch 1719: %+v", sw)
	}
	if far := g.Node(0x7cfe900300b07320); far == nil || far.Described || far.LID != 1516 || far.Name != "ib-i1l2s01" || far.Kind != Switch {
		t.Errorf("far-end switch %+v", far)
	}
	if lone := g.Node(0x08c0eb0300add20e); lone == nil || lone.LID != 1781 || lone.Name != "ib-i7l2s01" || lone.NumPorts != 80 {
		t.Errorf("switch with one unconnected port %+v", lone)
	}
	h := g.Node(0x7cfe9003003b4bde)
	if h == nil || h.Kind != HCA || h.LID != 134 || h.Name != "o0001 HCA-1" {
		t.Fatalf("o0001: %+v", h)
	}
	for _, l := range g.Links {
		// Each HCA link is printed from both ends: counted once, the
		// HCA end carrying its port GUID.
		if g.End(l.A).Kind == HCA && l.A.PortGUID != g.End(l.A).GUID || g.End(l.B).Kind == HCA && l.B.PortGUID != g.End(l.B).GUID {
			t.Errorf("HCA end without its port GUID: %+v", l)
		}
		if l.Rate() != "4xEDR" || l.Disagree {
			t.Errorf("link %v", l)
		}
	}

	// Names with blanks at either end stay as printed; an aggregation
	// node's port cabled to two switches (the excerpt is cut from a
	// larger dump) is two links, not one merged.
	g = Parse(load(t, "hdr-excerpt.ports"))
	if len(g.Problems) != 0 || g.Count(HCA) != 2 || g.Count(Switch) != 4 || len(g.Links) != 3 {
		t.Fatalf("HDR excerpt: %d HCAs %d switches %d links, problems %v", g.Count(HCA), g.Count(Switch), len(g.Links), g.Problems)
	}
	if n := g.Node(0x946dae0300618c83); n == nil || n.Name != " 5FB0406-spine-IB02 " {
		t.Errorf("spine 02 %+v", n)
	}
}

// The same fabric through ibsim: infiniband-diags' own -p output of the
// published EDR cluster (testdata/README.md) has exactly the cables of
// its topology file, the HCAs known by their port GUIDs.
func TestFabric_34_2_PortsReportMatchesTopology(t *testing.T) {
	topo := Parse(load(t, "switchib-edr-2023.topo"))
	ports := Parse(load(t, "switchib-edr-2023.ibsim.ports"))
	if len(ports.Problems) != 0 || ports.Format != PortsReport {
		t.Fatalf("problems %v", ports.Problems)
	}
	if ports.Count(Switch) != 6 || ports.Count(HCA) != 96 || len(ports.Links) != 144 {
		t.Fatalf("%d switches %d HCAs %d links", ports.Count(Switch), ports.Count(HCA), len(ports.Links))
	}
	// The simulator keeps each link's width and speed: the one DDR cable
	// among EDR ones is there too, and judged the same.
	a, b := linkSet(topo), linkSet(ports)
	if !slices.Equal(a, b) {
		t.Errorf("links differ:\ntopology %v\nports    %v", a, b)
	}
	if d := degraded(ports); len(d) != 1 || d[0].Expected() != "4xEDR" {
		t.Errorf("degraded %+v", d)
	}
	// ibsim gives node038's HCA port 1 the GUID after its node GUID.
	if h := ports.Node(0x506b4b030043fa5b); h == nil || h.Name != "node038 HCA-1" || h.LID == 0 {
		t.Errorf("HCA by port GUID: %+v", h)
	}
}

// Generated fat trees read the same from both outputs, multi-rail hosts
// and unconnected switch ports included.
func TestFabric_34_2_PortsReportMatchesTopologyGenerated(t *testing.T) {
	for _, s := range []fattree.Spec{{Radix: 8, Hosts: 12, HostsPerLeaf: 3}, {Radix: 16, Hosts: 40, Rails: 2, Pods: 3, HostsPerLeaf: 8}} {
		f, err := fattree.Build(s)
		if err != nil {
			t.Fatal(err)
		}
		var topo, ports bytes.Buffer
		if err := f.WriteTopology(&topo); err != nil {
			t.Fatal(err)
		}
		if err := f.WritePorts(&ports); err != nil {
			t.Fatal(err)
		}
		gt, gp := Parse(topo.Bytes()), Parse(ports.Bytes())
		if len(gt.Problems)+len(gp.Problems) != 0 {
			t.Fatalf("problems %v %v", gt.Problems, gp.Problems)
		}
		if !slices.Equal(linkSet(gt), linkSet(gp)) || gt.Count(HCA) != gp.Count(HCA) || gt.Count(Switch) != gp.Count(Switch) {
			t.Errorf("%+v: the formats disagree", s)
		}
		for _, n := range f.Nodes {
			i := gp.Index(GUID(n.PortGUID))
			if i < 0 || gp.Nodes[i].LID != n.LID || gp.Nodes[i].Name != n.Desc {
				t.Errorf("%s: %+v", n.Desc, gp.Node(GUID(n.PortGUID)))
			}
		}
	}
}

// Quantum-2 (NDR) fabrics: a switch of 129 ports whose OSFP cages are
// split into 2x ports, and the port labels (cage/port/split) printed as an
// extra group after a port number.
func TestFabric_34_2_NDRSplitPortsAndLabels(t *testing.T) {
	// The published dump as published: its GUIDs were redacted, so every
	// line that names one is skipped and said to be, and nothing else.
	raw := load(t, "qm9700-split-ndr-2024.topo")
	g := Parse(raw)
	if len(g.Nodes) != 0 || len(g.Problems) != 9 {
		t.Errorf("%d nodes, problems %v", len(g.Nodes), g.Problems)
	}
	// The same lines with GUIDs in place of the redactions.
	var filled []string
	for i, line := range strings.Split(string(raw), "\n") {
		if strings.Contains(line, "9c05<redacted>") {
			filled = append(filled, strings.ReplaceAll(line, "<redacted>", "00000000abcd"))
		} else {
			filled = append(filled, strings.ReplaceAll(line, "<redacted>", fmt.Sprintf("%012x", i)))
		}
	}
	g = Parse([]byte(strings.Join(filled, "\n")))
	if len(g.Problems) != 1 || !strings.Contains(g.Problems[0].Reason, "...omitted") {
		t.Fatalf("problems %v", g.Problems)
	}
	sw := g.Nodes[g.Links[0].A.Node]
	if sw.Kind != Switch {
		sw = g.Nodes[g.Links[0].B.Node]
	}
	if sw.NumPorts != 129 || sw.Name != "MF0;CNTSN-POD229-QM97-IB-02:MQM9700/U1" || len(g.Links) != 5 {
		t.Fatalf("switch %+v, %d links", sw, len(g.Links))
	}
	for _, l := range g.Links {
		if l.Rate() != "2xNDR" || l.Gbps() != 200 || l.Degraded {
			t.Errorf("split-port link %+v", l)
		}
	}

	// Port labels, in the shape Quantum-2 fabrics print them: on a
	// switch's own ports and on a far switch end, before or after a port
	// GUID.
	g = Parse([]byte(strings.Join([]string{
		"Switch\t129 \"S-b83fd20300aa0001\"\t\t# \"leaf\" enhanced port 0 lid 1 lmc 0",
		"[1](1/1/1)\t\"S-b83fd20300aa0002\"[33](1/17/1)\t\t# \"spine\" lid 2 4xNDR",
		"[2](1/1/2)\t\"H-b83fd20300a0b010\"[1](b83fd20300a0b010) \t\t# \"gpu1 mlx5_0\" lid 3 2xNDR",
		"",
		"Switch\t129 \"S-b83fd20300aa0002\"\t\t# \"spine\" enhanced port 0 lid 2 lmc 0",
		"[33](1/17/1)\t\"S-b83fd20300aa0001\"[1](1/1/1)\t\t# \"leaf\" lid 1 4xNDR",
		"",
		"Ca\t1 \"H-b83fd20300a0b010\"\t\t# \"gpu1 mlx5_0\"",
		"[1](b83fd20300a0b010) \t\"S-b83fd20300aa0001\"[2](1/1/2)\t\t# lid 3 lmc 0 \"leaf\" lid 1 2xNDR",
	}, "\n")))
	if len(g.Problems) != 0 || len(g.Links) != 2 {
		t.Fatalf("%d links, problems %v", len(g.Links), g.Problems)
	}
	leaf := g.Index(0xb83fd20300aa0001)
	if p := g.PortOf(leaf, 1); p == nil || p.Label != "1/1/1" {
		t.Errorf("leaf port 1 %+v", p)
	}
	if p := g.PortOf(leaf, 2); p == nil || p.Label != "1/1/2" {
		t.Errorf("leaf port 2 %+v", p)
	}
	if p := g.PortOf(g.Index(0xb83fd20300aa0002), 33); p == nil || p.Label != "1/17/1" {
		t.Errorf("spine port 33 %+v", p)
	}
	if p := g.PortOf(g.Index(0xb83fd20300a0b010), 1); p == nil || p.GUID != 0xb83fd20300a0b010 || p.Label != "" {
		t.Errorf("HCA port %+v", p)
	}
}

// Issue 32's surviving mutant: a loopback cable (two ports of one switch
// cabled together) counted as two links. It is one, whichever format and
// whether one end or both print it.
func TestFabric_12_LoopbackCableIsOneLink(t *testing.T) {
	for name, in := range map[string]string{
		"topology, both ends": "Switch\t8 \"S-000000000000000a\"\t\t# \"sw\" base port 0 lid 1 lmc 0\n" +
			"[1]\t\"S-000000000000000a\"[2]\t\t# \"sw\" lid 1 4xNDR\n" +
			"[2]\t\"S-000000000000000a\"[1]\t\t# \"sw\" lid 1 4xNDR\n" +
			"[3]\t\"H-00000000000000b1\"[1](b1) \t\t# \"h mlx5_0\" lid 2 4xNDR\n",
		"topology, one end": "Switch\t8 \"S-000000000000000a\"\t\t# \"sw\" base port 0 lid 1 lmc 0\n" +
			"[2]\t\"S-000000000000000a\"[1]\t\t# \"sw\" lid 1 4xNDR\n" +
			"[3]\t\"H-00000000000000b1\"[1](b1) \t\t# \"h mlx5_0\" lid 2 4xNDR\n",
		"ports report": "SW     1  3 0x000000000000000a 4x NDR - CA     2  1 0x00000000000000b1 ( 'sw' - 'h mlx5_0' )\n" +
			"SW     1  2 0x000000000000000a 4x NDR - SW     1  1 0x000000000000000a ( 'sw' - 'sw' )\n" +
			"SW     1  1 0x000000000000000a 4x NDR - SW     1  2 0x000000000000000a ( 'sw' - 'sw' )\n",
	} {
		g := Parse([]byte(in))
		if len(g.Problems) != 0 || len(g.Links) != 2 || g.Count(Switch) != 1 || g.Count(HCA) != 1 {
			t.Errorf("%s: %d links (want the loopback and the HCA's), problems %v", name, len(g.Links), g.Problems)
			continue
		}
		l := g.Links[0]
		if g.End(l.A).Kind != Switch || g.End(l.B).Kind != Switch {
			l = g.Links[1]
		}
		if l.A.Node != l.B.Node || l.A.Port != 1 || l.B.Port != 2 {
			t.Errorf("%s: loopback %+v", name, l)
		}
	}
}

// Issue 32 row 7: the parser holds one line at a time and a bounded list
// of problems, whatever the input: a line longer than any the format has
// is skipped without being held, and a file of garbage keeps its first
// problems and a count of the rest.
func TestBounded_7_ParserHoldsALineAndBoundedProblems(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	in := io.MultiReader(strings.NewReader("Switch\t8 \"S-000000000000000a\"\t\t# \"sw\" base port 0 lid 1 lmc 0\n"),
		strings.NewReader(long+"\n"),
		strings.NewReader("[3]\t\"H-00000000000000b1\"[1](b1) \t\t# \"h mlx5_0\" lid 2 4xNDR\n"))
	g, err := ParseReader(in)
	if err != nil || len(g.Links) != 1 || len(g.Problems) != 1 || g.Problems[0].Line != 2 || !strings.Contains(g.Problems[0].Reason, "longer than 4096") {
		t.Fatalf("err %v, %d links, problems %v", err, len(g.Links), g.Problems)
	}
	g = Parse(bytes.Repeat([]byte("garbage\n"), 50_000))
	if len(g.Problems) != 1000 || g.MoreProblems != 49_000 {
		t.Errorf("%d problems kept, %d more", len(g.Problems), g.MoreProblems)
	}
	g = Parse([]byte("Switch\t8 \"S-a\"\t# \"a\" base port 0 lid 1 lmc 0\nSW 1 1 0xa 4x NDR - SW 1 1 0xa ( 'a' - 'a' )\n"))
	if g.Format != Topology || len(g.Problems) != 1 || !strings.Contains(g.Problems[0].Reason, "a ports report (-p) line in a topology file") {
		t.Errorf("mixed formats: %v %v", g.Format, g.Problems)
	}
}
