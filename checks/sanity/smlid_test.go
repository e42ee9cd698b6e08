package sanity

import (
	"testing"

	"github.com/nichealth/nichealthd/topology"
)

// TestSanity_Slides_SMLIDSet proves the slides' "SM lid is set": an ACTIVE
// InfiniBand port must know its subnet manager.
func TestSanity_Slides_SMLIDSet(t *testing.T) {
	const ib, eth = topology.LinkLayerInfiniBand, topology.LinkLayerEthernet
	cases := []struct {
		name, ll, state, smlid string
		want                   bool
	}{
		{"IB active, SM known", ib, "4: ACTIVE", "0x1", false},
		{"IB active, no SM", ib, "4: ACTIVE", "0x0", true},
		{"IB active, no SM, bare state name", ib, "ACTIVE", "0x0", true},
		{"IB active, no SM, decimal", ib, "4: ACTIVE", "0", true},
		{"IB active, no SM, padded", ib, "4: ACTIVE", " 0x0000\n", true},
		{"IB active, high LID", ib, "4: ACTIVE", "0xbfff", false},
		{"IB down: no SM expected yet", ib, "1: DOWN", "0x0", false},
		{"IB init: the SM has not swept yet", ib, "2: INIT", "0x0", false},
		{"IB armed", ib, "3: ARMED", "0x0", false},
		{"RoCE has no SM", eth, "4: ACTIVE", "0x0", false},
		{"unknown link layer", "", "4: ACTIVE", "0x0", false},
		{"sm_lid missing", ib, "4: ACTIVE", "", false},
		{"sm_lid garbage", ib, "4: ACTIVE", "N/A", false},
		{"sm_lid over 16 bits", ib, "4: ACTIVE", "0x10000", false},
		{"sm_lid negative", ib, "4: ACTIVE", "-0", false},
		{"state garbage", ib, "active-ish", "0x0", false},
		{"state empty", ib, "", "0x0", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := SMLID("mlx5_0", 1, c.ll, linkOf(c.state), c.smlid)
			if (f != nil) != c.want {
				t.Fatalf("SMLID(%q, %q, %q) = %+v, want finding %v", c.ll, c.state, c.smlid, f, c.want)
			}
			if f == nil {
				return
			}
			if f.Kind != KindSMLID || f.Device != "mlx5_0" || f.Port != 1 {
				t.Errorf("finding %+v", f)
			}
		})
	}
	f := SMLID("mlx5_0", 1, ib, linkOf("4: ACTIVE"), "0x0\n")
	const want = "Port mlx5_0 port 1 is ACTIVE but has no subnet manager (sm_lid 0x0): check the SM"
	if f == nil || f.Message != want || f.Metadata["smLid"] != "0x0" {
		t.Errorf("got %+v\nwant message %q", f, want)
	}
}

// The same rule end to end: sm_lid read by discovery from a simulated tree.
func TestSanity_Slides_SMLIDSetOnTree(t *testing.T) {
	n := buildHost(t, "dgx-h100")
	opts := Options{SMLID: true}
	if got := Run(n.h.Paths(), n.devs, nil, opts); len(got) != 0 {
		t.Fatalf("healthy node: %+v", got)
	}
	if err := n.h.WriteRaw("mlx5_3", 1, "sm_lid", "0x0\n"); err != nil {
		t.Fatal(err)
	}
	// A RoCE storage port has sm_lid 0x0 by nature: never a finding.
	n.rediscover(t)
	got := Run(n.h.Paths(), n.devs, nil, opts)
	if len(got) != 1 || got[0].Device != "mlx5_3" || got[0].Port != 1 || got[0].Kind != KindSMLID {
		t.Fatalf("got %+v", got)
	}
	// A down port with no SM is the state check's business, not this one's.
	if err := n.h.SetPortState("mlx5_3", 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	n.rediscover(t)
	if got := Run(n.h.Paths(), n.devs, nil, opts); len(got) != 0 {
		t.Fatalf("down port: %+v", got)
	}
}
