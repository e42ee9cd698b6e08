package observe

import (
	"testing"

	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/sim/simtest"
)

// The one classification of the product: from the GPU topology by
// default, and pinned by link layer when nicInclusionRegexOverride hand-
// picks the NICs (seed 12.1: no NUMA gate, no topology), which the daemon,
// the offline check and `nichealthctl topology show` all get.
func TestClassify_12_1_OverridePinsRolesByLinkLayer(t *testing.T) {
	h := simtest.Build(t, "dgx-h100")
	paths := topology.Paths{SysfsRoot: h.SysRoot(), ProcfsRoot: h.ProcRoot(), DevRoot: h.DevRoot()}.WithDefaults()

	devs, _, err := topology.Discover(paths, topology.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Classify(devs, ClassifyOptions{Paths: paths, MetadataPath: h.MetadataPath()}, nil)
	if err != nil || c.Pinned || c.Matrix == nil {
		t.Fatalf("by topology: %+v, %v", c, err)
	}
	for _, d := range devs {
		if want, ok := h.Device(d.Name); ok && !d.IsVF && d.Role != want.ExpectedRole {
			t.Errorf("%s: %s (%s), want %s", d.Name, d.Role, d.RoleReason, want.ExpectedRole)
		}
	}

	re, err := topology.CompileList("^mlx5_")
	if err != nil {
		t.Fatal(err)
	}
	filter := topology.Filter{IncludeOverride: re}
	devs, _, err = topology.Discover(paths, filter)
	if err != nil {
		t.Fatal(err)
	}
	c, err = Classify(devs, ClassifyOptions{Paths: paths, Filter: filter, MetadataPath: h.MetadataPath()}, nil)
	if err != nil || !c.Pinned || c.Matrix != nil {
		t.Fatalf("pinned: %+v, %v", c, err)
	}
	pinned := 0
	for _, d := range devs {
		if d.IsVF {
			if d.Role != "" {
				t.Errorf("VF %s got role %s", d.Name, d.Role)
			}
			continue
		}
		want := topology.RoleCompute
		if d.LinkLayer() == topology.LinkLayerEthernet {
			want = topology.RoleStorage
		}
		if d.Role != want || d.RoleReason != string(want)+": pinned by nicInclusionRegexOverride" {
			t.Errorf("%s (%s): %s, %q", d.Name, d.LinkLayer(), d.Role, d.RoleReason)
		}
		pinned++
	}
	if pinned != 13 {
		t.Errorf("%d PFs pinned, want the 13 of dgx-h100", pinned)
	}
}
