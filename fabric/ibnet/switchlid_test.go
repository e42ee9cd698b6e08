package ibnet

import "testing"

// A switch block's header carries its port 0 LID ("base port 0 lid 6
// lmc 0", ibnetdiscover(8)): where its PMA answers, which the plan
// writes into every entry.
func TestDesign_14_SwitchHeaderLID(t *testing.T) {
	for in, want := range map[string]int{
		"Switch  24 \"S-005442ba00003080\"         # \"ISR9024 Voltaire\" base port 0 lid 6 lmc 0\n":                      6,
		"Switch\t36 \"S-0002c90200402b00\"\t\t# \"MF0;sw:IS4\" enhanced port 0 lid 48 lmc 0\n":                            48,
		"Switch  36 \"S-0002c9020046c588\"                     # \"Infiniscale-IV Mellanox Technologies\" base port 0 \n": 0,
	} {
		g := Parse([]byte(in))
		if len(g.Nodes) != 1 || g.Nodes[0].LID != want {
			t.Errorf("%q: LID %+v, want %d", in, g.Nodes, want)
		}
	}
}
