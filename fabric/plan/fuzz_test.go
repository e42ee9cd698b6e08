package plan

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/fabric/ibnet"
)

// Whatever the bytes, the tables hold ports of one byte for unicast LIDs
// and a bounded list of problems.
func FuzzParseLFTs(f *testing.F) {
	f.Add(load(f, filepath.Join("testdata", "switchib-edr-2023.ibsim.lfts")))
	f.Add([]byte("Unicast lids [0x1-0x3] of switch Lid 3 guid 0x2 (s):\n0x0001 003\n0x0003 000\nMulticast mlids [0xc000-0xc000] of switch Lid 3 guid 0x2 (s):\n0xc000 x\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		tab, err := ParseLFTs(bytes.NewReader(b), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(tab.Problems) > maxProblems {
			t.Fatalf("%d problems kept", len(tab.Problems))
		}
		for _, lft := range tab.Switches {
			if len(lft.Out) > maxLID+1 || lft.LID < 0 || lft.LID > maxLID {
				t.Fatalf("table %s: %d entries, LID %d", lft.GUID, len(lft.Out), lft.LID)
			}
			if tab.Switch(lft.GUID) == nil {
				t.Fatalf("table %s not found by GUID", lft.GUID)
			}
		}
	})
}

// Whatever the bytes, a host list holds distinct names that are plain
// file names, and no more than the bound.
func FuzzParseHosts(f *testing.F) {
	f.Add([]byte("gpu[001-004,010]\nnode1 node2,node3 # comment\nrack[1-2]-n[1-3]\n"))
	f.Add([]byte("a[0-99999999]\n../x\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		hosts, _, err := ParseHosts(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if len(hosts) > maxHosts {
			t.Fatalf("%d hosts", len(hosts))
		}
		seen := map[string]bool{}
		for _, h := range hosts {
			if seen[h] || !validName(h) || strings.ContainsAny(h, "/\x00") || h == "." || h == ".." {
				t.Fatalf("host %q", h)
			}
			seen[h] = true
		}
	})
}

// Whatever the fabric, tables and job, a plan gives each host a list and
// each switch port to one host at most, and returns.
func FuzzMake(f *testing.F) {
	topo, err := os.ReadFile(filepath.Join("..", "ibnet", "testdata", "switchib-edr-2023.ibsim.ports"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(topo, load(f, filepath.Join("testdata", "switchib-edr-2023.ibsim.lfts")), []byte("node001 gpu004 gpu041 node021"))
	// A table that loops between two switches, and one that sends a LID
	// out of a port with no cable.
	f.Add([]byte("Switch\t4 \"S-000000000000000a\"\t# \"a\" base port 0 lid 1 lmc 0\n[1]\t\"S-000000000000000b\"[1]\t# \"b\" lid 2 4xNDR\n[2]\t\"H-00000000000000c1\"[1](c1) \t# \"h1 mlx5_0\" lid 3 4xNDR\n"+
		"Switch\t4 \"S-000000000000000b\"\t# \"b\" base port 0 lid 2 lmc 0\n[1]\t\"S-000000000000000a\"[1]\t# \"a\" lid 1 4xNDR\n[2]\t\"H-00000000000000c2\"[1](c2) \t# \"h2 mlx5_0\" lid 4 4xNDR\n"),
		[]byte("Unicast lids [0x1-0x4] of switch Lid 1 guid 0xa (a):\n0x0004 001\n0x0003 003\nUnicast lids [0x1-0x4] of switch Lid 2 guid 0xb (b):\n0x0004 001\n0x0003 001\n"),
		[]byte("h1 h2"))
	f.Fuzz(func(t *testing.T, topo, lfts, nodes []byte) {
		g := ibnet.Parse(topo)
		tab, _ := ParseLFTs(bytes.NewReader(lfts), g)
		hosts, _, _ := ParseHosts(bytes.NewReader(nodes))
		p, _ := Make(g, tab, hosts)
		if len(p.Assignments) != len(hosts) {
			t.Fatalf("%d lists for %d hosts", len(p.Assignments), len(hosts))
		}
		type key struct {
			guid ibnet.GUID
			port int
		}
		seen := map[key]bool{}
		for _, list := range p.Assignments {
			for _, a := range list {
				k := key{a.SwitchGUID, a.Port}
				if seen[k] {
					t.Fatalf("%s port %d assigned twice", a.SwitchGUID, a.Port)
				}
				seen[k] = true
			}
		}
	})
}
