package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/fabric/ibnet"
)

func load(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// DESIGN 14: the switches' forwarding tables as dump_lfts prints them.
// The real tool's output for the published EDR cluster loaded into ibsim
// and routed by opensm (testdata/README.md): six tables of the 102
// LIDs, each switch's own LID forwarded to port 0.
func TestDesign_14_ParseDumpLFTs(t *testing.T) {
	tab, err := ParseLFTs(strings.NewReader(string(load(t, filepath.Join("testdata", "switchib-edr-2023.ibsim.lfts")))), nil)
	if err != nil || len(tab.Problems) != 0 {
		t.Fatal(err, tab.Problems)
	}
	if len(tab.Switches) != 6 {
		t.Fatalf("%d tables", len(tab.Switches))
	}
	ports := ibnet.Parse(load(t, filepath.Join("..", "ibnet", "testdata", "switchib-edr-2023.ibsim.ports")))
	for _, lft := range tab.Switches {
		sw := ports.Node(lft.GUID)
		if sw == nil || lft.LID != sw.LID || lft.Name != "SwitchIB Mellanox Technologies" {
			t.Errorf("table %s: LID %d name %q; the fabric says %+v", lft.GUID, lft.LID, lft.Name, sw)
		}
		valid := 0
		for lid := range lft.Out {
			if lft.Port(lid) != NoRoute {
				valid++
			}
		}
		if valid != 102 {
			t.Errorf("table %s: %d LIDs routed, want 102", lft.GUID, valid)
		}
	}
	// ec0d9a0300f548c0 sends LID 1 (gpu011) out of port 15.
	if lft := tab.Switch(0xec0d9a0300f548c0); lft == nil || lft.Port(1) != 15 || lft.Port(0) != NoRoute || lft.Port(70000) != NoRoute {
		t.Errorf("table of f548c0: %+v", lft)
	}
}

// The other shapes of the same tables: ibroute's (addressed by LID),
// dump_fts -n (no destination names), -M's multicast tables and the
// notices dump_lfts prints, and lines that are none of these.
func TestDesign_14_ParseLFTVariants(t *testing.T) {
	in := strings.Join([]string{
		"Unicast lids [0x1-0x6] of switch Lid 3 guid 0x0000000000200001 (Switch (two)):",
		"  Lid  Out   Destination",
		"       Port     Info ",
		"0x0001 003 : (Switch portguid 0x0000000000200000: 'Switch1')",
		"0x0003 000 : (Switch portguid 0x0000000000200001: 'Switch2')",
		"0x0004 001",
		"0x0005 255 : (illegal port)",
		"4 valid lids dumped ",
		"Multicast mlids [0xc000-0xc001] of switch Lid 3 guid 0x0000000000200001 (Switch2):",
		"            0                   1",
		"     Ports: 0 1 2 3 4 5 6 7 8 9 0 1 2",
		" MLid",
		"0xc000      x x",
		"1 valid mlids dumped ",
		"Unicast lids [0x0-0x2] of switch DR path slid 0; dlid 0; 0,1 guid 0x0000000000200000 (Switch1):",
		"0x0001 000 : (Switch portguid 0x0000000000200000: 'Switch1')",
		"0x0002 001 : (Channel Adapter portguid 0x0000000000100001: 'Hca1')",
		"2 valid lids dumped ",
		"",
		"*** WARNING ***: this command has been replaced by dump_fts",
		"0x0009 001",
		"SubnGet(LFT) failed on switch 'x'",
		"0xzz 001",
	}, "\n")
	tab, err := ParseLFTs(strings.NewReader(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Problems) != 3 || tab.Problems[0].Line != 21 || tab.Problems[1].Line != 22 || tab.Problems[2].Line != 23 {
		t.Errorf("problems %v", tab.Problems)
	}
	s2 := tab.Switch(0x200001)
	if s2 == nil || s2.LID != 3 || s2.Name != "Switch (two)" || s2.Port(1) != 3 || s2.Port(3) != 0 || s2.Port(4) != 1 || s2.Port(5) != NoRoute || s2.Port(0xc000) != NoRoute {
		t.Errorf("Switch2 %+v", s2)
	}
	s1 := tab.Switch(0x200000)
	if s1 == nil || s1.LID != 1 || s1.Port(2) != 1 {
		t.Errorf("Switch1 %+v", s1)
	}
}

func TestDesign_14_ParseHosts(t *testing.T) {
	in := "# job 4711\ngpu001\ngpu[003-005,010],node1.cluster.local  rack[1-2]-n[08-09]\n\ngpu001 bad/name ../etc x[1-\n"
	hosts, probs, err := ParseHosts(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := "gpu001 gpu003 gpu004 gpu005 gpu010 node1.cluster.local rack1-n08 rack1-n09 rack2-n08 rack2-n09"
	if strings.Join(hosts, " ") != want {
		t.Errorf("hosts %v", hosts)
	}
	if len(probs) != 3 || probs[0].Line != 5 {
		t.Errorf("problems %v", probs)
	}
	if _, probs, _ := ParseHosts(strings.NewReader("n[0-99999999]\n")); len(probs) != 1 || !strings.Contains(probs[0].Reason, "more than 65536") {
		t.Errorf("a huge range: %v", probs)
	}
}
