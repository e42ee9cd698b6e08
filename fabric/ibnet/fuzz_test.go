package ibnet

import (
	"os"
	"path/filepath"
	"testing"
)

func seed(f *testing.F, glob string) {
	files, _ := filepath.Glob(filepath.Join("testdata", glob))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// Whatever the bytes, Parse returns a graph whose ports and links join
// nodes it holds, each physical link once, and counts that add up.
func FuzzParse(f *testing.F) {
	seed(f, "*.topo")
	seed(f, "*.ports")
	f.Add([]byte("Switch\t2 \"S-1\"\t# \"a\" base port 0 lid 1 lmc 0\n[1]\t\"S-1\"[1]\t# \"a\" lid 1 4xNDR\n"))
	f.Add([]byte("SW     1  2 0x0000000000000001 4x NDR - SW     1  1 0x0000000000000001 ( 'a' - 'a' )\nCA 2 1 0x2 4x NDR - SW 1 1 0x1 ( 'h' - 'a' )\n"))
	f.Add([]byte("Switch\t129 \"S-a\"\t# \"q2\" enhanced port 0 lid 1 lmc 0\n[1](1/1/1)\t\"S-b\"[2](1/1/2)\t# \"q2b\" lid 2 2xNDR\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		g := Parse(b)
		if g.Count(Switch)+g.Count(HCA)+g.Count(Router) != len(g.Nodes) {
			t.Fatal("node kinds do not add up")
		}
		if len(g.Problems) > maxProblems {
			t.Fatalf("%d problems kept", len(g.Problems))
		}
		type end struct {
			node int32
			port uint8
		}
		seen := map[[2]end]bool{}
		for _, l := range g.Links {
			if int(l.A.Node) >= len(g.Nodes) || int(l.B.Node) >= len(g.Nodes) || l.A.Node < 0 || l.B.Node < 0 {
				t.Fatalf("link %+v names a node the graph lacks", l)
			}
			k := [2]end{{l.A.Node, l.A.Port}, {l.B.Node, l.B.Port}}
			if seen[k] || seen[[2]end{k[1], k[0]}] {
				t.Fatalf("link %+v counted twice", l)
			}
			seen[k] = true
			if l.Degraded && l.Gbps() == 0 {
				t.Fatalf("a link of unknown rate judged degraded: %+v", l)
			}
		}
		for i := range g.Nodes {
			for _, pt := range g.PortsOf(i) {
				if int(pt.Node) != i || pt.Remote.Node < 0 || int(pt.Remote.Node) >= len(g.Nodes) {
					t.Fatalf("port %+v of node %d", pt, i)
				}
				if g.PortOf(i, int(pt.Num)) == nil {
					t.Fatalf("port %d of node %d not found", pt.Num, i)
				}
			}
			if g.Index(g.Nodes[i].GUID) < 0 {
				t.Fatalf("node %s not indexed", g.Nodes[i].GUID)
			}
		}
	})
}

func FuzzParseNodeNameMap(f *testing.F) {
	seed(f, "*.map")
	f.Fuzz(func(t *testing.T, b []byte) {
		m, _ := ParseNodeNameMap(b)
		for g, name := range m {
			if name == "" {
				t.Fatalf("GUID %s mapped to an empty name", g)
			}
		}
	})
}
