package plan

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/fabric/ibnet"
)

// lmcTopo is two leaves under two spines; each host's HCA has LMC 2 (four
// LIDs: gpua 4-7, gpub 8-11). The subnet manager spreads a host's LIDs
// over the spines (as opensm does with LMC, for multipath): the fourth of
// each range alone goes through spine 2.
const lmcTopo = `
vendid=0x2c9
devid=0xd2f0
switchguid=0xa100000000000001(a100000000000001)
Switch	4 "S-a100000000000001"		# "leaf1" base port 0 lid 1 lmc 0
[1]	"H-c100000000000001"[1](c100000000000001) 		# "gpua mlx5_0" lid 4 4xNDR
[3]	"S-b100000000000001"[1]		# "spine1" lid 3 4xNDR
[4]	"S-b200000000000001"[1]		# "spine2" lid 12 4xNDR

vendid=0x2c9
devid=0xd2f0
switchguid=0xa200000000000001(a200000000000001)
Switch	4 "S-a200000000000001"		# "leaf2" base port 0 lid 2 lmc 0
[1]	"H-c200000000000001"[1](c200000000000001) 		# "gpub mlx5_0" lid 8 4xNDR
[3]	"S-b100000000000001"[2]		# "spine1" lid 3 4xNDR
[4]	"S-b200000000000001"[2]		# "spine2" lid 12 4xNDR

vendid=0x2c9
devid=0xd2f0
switchguid=0xb100000000000001(b100000000000001)
Switch	4 "S-b100000000000001"		# "spine1" base port 0 lid 3 lmc 0
[1]	"S-a100000000000001"[3]		# "leaf1" lid 1 4xNDR
[2]	"S-a200000000000001"[3]		# "leaf2" lid 2 4xNDR

vendid=0x2c9
devid=0xd2f0
switchguid=0xb200000000000001(b200000000000001)
Switch	4 "S-b200000000000001"		# "spine2" base port 0 lid 12 lmc 0
[1]	"S-a100000000000001"[4]		# "leaf1" lid 1 4xNDR
[2]	"S-a200000000000001"[4]		# "leaf2" lid 2 4xNDR

vendid=0x2c9
devid=0x101b
caguid=0xc100000000000001
Ca	1 "H-c100000000000001"		# "gpua mlx5_0"
[1](c100000000000001) 	"S-a100000000000001"[1]		# lid 4 lmc 2 "leaf1" lid 1 4xNDR

vendid=0x2c9
devid=0x101b
caguid=0xc200000000000001
Ca	1 "H-c200000000000001"		# "gpub mlx5_0"
[1](c200000000000001) 	"S-a200000000000001"[1]		# lid 8 lmc 2 "leaf2" lid 2 4xNDR
`

// lmcLFTs are the four tables as dump_lfts prints them, out port by LID
// 1..12 (0: the switch itself).
func lmcLFTs() string {
	tables := []struct {
		guid, name string
		out        [12]int
	}{
		// LID:                                      1  2  3  4  5  6  7  8  9 10 11 12
		{"0xa100000000000001", "leaf1", [12]int{0, 3, 3, 1, 1, 1, 1, 3, 3, 3, 4, 4}},
		{"0xa200000000000001", "leaf2", [12]int{3, 0, 3, 3, 3, 3, 4, 1, 1, 1, 1, 4}},
		{"0xb100000000000001", "spine1", [12]int{1, 2, 0, 1, 1, 1, 1, 2, 2, 2, 2, 1}},
		{"0xb200000000000001", "spine2", [12]int{1, 2, 1, 1, 1, 1, 1, 2, 2, 2, 2, 0}},
	}
	var b strings.Builder
	for _, t := range tables {
		fmt.Fprintf(&b, "Unicast lids [0x0-0xc] of switch DR path slid 0; dlid 0; 0 guid %s (%s):\n  Lid  Out   Destination\n       Port     Info \n", t.guid, t.name)
		for i, out := range t.out {
			fmt.Fprintf(&b, "0x%04x %03d : (some node)\n", i+1, out)
		}
		fmt.Fprintf(&b, "%d valid lids dumped \n", len(t.out))
	}
	return b.String()
}

// TestPlan_40_12_Rule2AtLMC2: the paths between a job's hosts are the
// paths to every LID of each host's LMC range, not only to its base LID:
// with LMC 2 the fourth LID (base+3) of each host goes through spine 2,
// so both spine-2 links are on the job's paths, at both ends, and each
// is read by the host whose LIDs it forwards (rule 3 over the whole range
// too).
func TestPlan_40_12_Rule2AtLMC2(t *testing.T) {
	g := ibnet.Parse([]byte(lmcTopo))
	if len(g.Problems) != 0 {
		t.Fatal(g.Problems)
	}
	tables, err := ParseLFTs(strings.NewReader(lmcLFTs()), g)
	if err != nil || len(tables.Problems) != 0 || len(tables.Switches) != 4 {
		t.Fatalf("%v %v %d tables", err, tables.Problems, len(tables.Switches))
	}
	hps, missing := HostPorts(g, []string{"gpua", "gpub"})
	if len(missing) != 0 || len(hps) != 2 || hps[0].LMC != 2 || hps[1].LMC != 2 {
		t.Fatalf("host ports %+v, missing %v", hps, missing)
	}
	p, notes := Make(g, tables, []string{"gpua", "gpub"})
	var got []string
	for _, h := range []string{"gpua", "gpub"} {
		for _, a := range p.Assignments[h] {
			got = append(got, fmt.Sprintf("%s/%d %s", a.SwitchName, a.Port, h))
		}
	}
	slices.Sort(got)
	// Rule 3: each goes to the host whose LIDs it forwards; leaf2 port 4
	// forwards only gpua's fourth LID (7), leaf1 port 4 only gpub's (11).
	want := []string{"leaf1/1 gpua", "leaf1/3 gpub", "leaf1/4 gpub", "leaf2/1 gpub", "leaf2/3 gpua", "leaf2/4 gpua",
		"spine1/1 gpua", "spine1/2 gpub", "spine2/1 gpua", "spine2/2 gpub"}
	if !slices.Equal(got, want) || len(p.Unassigned) != 0 {
		t.Fatalf("planned %v (unassigned %v, notes %v)\nwant    %v", got, p.Unassigned, notes, want)
	}
}
