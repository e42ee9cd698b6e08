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

// Whatever the bytes, Parse returns a graph whose links join nodes it
// holds, each physical link once, and counts that add up.
func FuzzParse(f *testing.F) {
	seed(f, "*.topo")
	f.Add([]byte("Switch\t2 \"S-1\"\t# \"a\" base port 0 lid 1 lmc 0\n[1]\t\"S-1\"[1]\t# \"a\" lid 1 4xNDR\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		g := Parse(b)
		if g.Count(Switch)+g.Count(HCA)+g.Count(Router) != len(g.Nodes) {
			t.Fatal("node kinds do not add up")
		}
		seen := map[[2]endKey]bool{}
		for _, l := range g.Links {
			if g.Node(l.A.GUID) == nil || g.Node(l.B.GUID) == nil {
				t.Fatalf("link %+v names a node the graph lacks", l)
			}
			k := [2]endKey{{l.A.GUID, l.A.Port}, {l.B.GUID, l.B.Port}}
			if seen[k] || seen[[2]endKey{k[1], k[0]}] {
				t.Fatalf("link %+v counted twice", l)
			}
			seen[k] = true
			if l.Degraded && l.Gbps == 0 {
				t.Fatalf("a link of unknown rate judged degraded: %+v", l)
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
