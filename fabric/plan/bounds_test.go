package plan

import (
	"bytes"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/fabric/ibnet"
)

// allocated is the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// craftedLFTs is 20,000 tables, each one entry for a LID near the top of
// the unicast space: for switches absent from the graph (foreign), or
// for the graph's own six switches, table after table.
func craftedLFTs(g *ibnet.Graph, foreign bool) []byte {
	var sws []ibnet.GUID
	for i := range g.Nodes {
		if g.Nodes[i].Kind == ibnet.Switch {
			sws = append(sws, g.Nodes[i].GUID)
		}
	}
	var b bytes.Buffer
	for i := range 20000 {
		guid := fmt.Sprintf("0x%016x", 0x7000000000000000+uint64(i))
		if !foreign {
			guid = fmt.Sprintf("0x%016x", uint64(sws[i%len(sws)]))
		}
		fmt.Fprintf(&b, "Unicast lids [0x1-0xbfff] of switch Lid %d guid %s (x):\n0xbfff 001\n", 1+i%100, guid)
	}
	return b.Bytes()
}

// TestIssue40Row4_CraftedTablesCostWhatTheGraphHolds: a 2 MB dump_lfts
// of 20,000 tables with one high LID each costs a few times its size,
// not 20,000 tables of 48 KiB (975 MB): tables of switches absent from
// the ibnetdiscover graph are skipped, and a table is only as long as
// the graph's highest LID.
func TestIssue40Row4_CraftedTablesCostWhatTheGraphHolds(t *testing.T) {
	g := ibnet.Parse(load(t, filepath.Join("..", "ibnet", "testdata", "switchib-edr-2023.ibsim.ports")))
	for _, foreign := range []bool{true, false} {
		in := craftedLFTs(g, foreign)
		var tab *Tables
		n := allocated(func() {
			var err error
			tab, err = ParseLFTs(bytes.NewReader(in), g)
			if err != nil {
				t.Fatal(err)
			}
		})
		t.Logf("foreign %v: %d bytes of input, %d allocated, %d tables kept, %d skipped", foreign, len(in), n, len(tab.Switches), tab.Foreign)
		if n > 16<<20 {
			t.Errorf("foreign %v: %d MiB allocated for %d KiB of tables, want under 16 MiB", foreign, n>>20, len(in)>>10)
		}
		if foreign && (len(tab.Switches) != 0 || tab.Foreign != 20000 || len(tab.Problems) > 1000 || !strings.Contains(fmt.Sprint(tab.Problems[0]), "not a switch of the ibnetdiscover output")) {
			t.Errorf("foreign tables: %d kept, %d skipped, %d problems (%v)", len(tab.Switches), tab.Foreign, len(tab.Problems), tab.Problems[:1])
		}
		if !foreign {
			if len(tab.Switches) != 6 {
				t.Errorf("%d tables kept, want the graph's 6", len(tab.Switches))
			}
			for _, lft := range tab.Switches {
				// The EDR sample's LIDs end at 0x67 (103).
				if len(lft.Out) > 0x68 {
					t.Errorf("table %s holds %d entries, past the graph's highest LID 0x67", lft.GUID, len(lft.Out))
				}
			}
		}
	}
}

// BenchmarkIssue40Row4_CraftedForeignTables: the crafted 2 MB dump's cost.
func BenchmarkIssue40Row4_CraftedForeignTables(b *testing.B) {
	g := ibnet.Parse(load(b, filepath.Join("..", "ibnet", "testdata", "switchib-edr-2023.ibsim.ports")))
	in := craftedLFTs(g, true)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		ParseLFTs(bytes.NewReader(in), g)
	}
}

// planPort255AndNoLID plans h1, h2 and h3 on two switches: h1 on port 1
// of sw (LID 1), h2 on its port 255, h3 on a switch without a LID.
func planPort255AndNoLID(t *testing.T) *Plan {
	t.Helper()
	g := ibnet.Parse([]byte("Switch\t255 \"S-000000000000000a\"\t\t# \"sw\" base port 0 lid 1 lmc 0\n" +
		"[1]\t\"H-00000000000000b1\"[1](b1) \t\t# \"h1 mlx5_0\" lid 2 4xNDR\n" +
		"[255]\t\"H-00000000000000b2\"[1](b2) \t\t# \"h2 mlx5_0\" lid 3 4xNDR\n" +
		"Switch\t8 \"S-000000000000000c\"\t\t# \"nolid\" base port 0 lid 0 lmc 0\n" +
		"[1]\t\"H-00000000000000b3\"[1](b3) \t\t# \"h3 mlx5_0\" lid 4 4xNDR\n"))
	if len(g.Problems) != 0 {
		t.Fatalf("the graph: %v", g.Problems)
	}
	tab, _ := ParseLFTs(bytes.NewReader(nil), g)
	p, _ := Make(g, tab, []string{"h1", "h2", "h3"})
	return p
}

// TestIssue40Row7_PlanLeavesOutPortsNoDaemonReads: an HCA on switch port
// 255 (no such port: 1..254) and a switch without a LID are in the
// plan's unassigned list with the reason, never in a host's list.
func TestIssue40Row7_PlanLeavesOutPortsNoDaemonReads(t *testing.T) {
	p := planPort255AndNoLID(t)
	if len(p.Assignments["h1"]) != 1 || p.Assignments["h1"][0].Port != 1 {
		t.Errorf("h1: %+v, want switch port 1 (%+v)", p.Assignments["h1"], p)
	}
	if len(p.Assignments["h2"]) != 0 || len(p.Assignments["h3"]) != 0 {
		t.Errorf("h2 and h3 hold ports no daemon reads: %+v %+v", p.Assignments["h2"], p.Assignments["h3"])
	}
	reasons := map[int]string{}
	for _, u := range p.Unassigned {
		reasons[u.Port] = u.Reason
	}
	if !strings.Contains(reasons[255], "port 255 outside 1..254") || !strings.Contains(reasons[1], "no switchLID") {
		t.Errorf("unassigned %+v", p.Unassigned)
	}
}
