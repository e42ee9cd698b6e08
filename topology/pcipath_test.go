package topology_test

import (
	"path/filepath"
	"testing"

	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/sim/simtest"
)

// The DGX H100 shape puts each compute NIC behind a PCIe switch (NIC,
// switch downstream port, switch upstream port, root port) and each
// storage card's two functions directly below one root port.
func TestPCIPath_DGXH100(t *testing.T) {
	h := simtest.Build(t, "dgx-h100")
	devs, _, err := topology.Discover(h.Paths(), topology.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	d := byName(devs)
	compute := topology.PCIPath(d["mlx5_0"], h.SysRoot())
	if len(compute) != 4 {
		t.Fatalf("mlx5_0 path %+v: want 4 hops", compute)
	}
	if compute[0].Address != d["mlx5_0"].PCIAddress || compute[0].Dir != d["mlx5_0"].PCIDir || compute[0].RootPort {
		t.Errorf("first hop %+v: want the NIC function %s", compute[0], d["mlx5_0"].PCIAddress)
	}
	for i, hop := range compute {
		if !topology.IsPCIAddress(hop.Address) || filepath.Base(hop.Dir) != hop.Address {
			t.Errorf("hop %d %+v: not a PCI function directory", i, hop)
		}
		if hop.RootPort != (i == 3) {
			t.Errorf("hop %d RootPort %v", i, hop.RootPort)
		}
	}
	if filepath.Dir(compute[0].Dir) != compute[1].Dir {
		t.Errorf("hop 1 %s is not the parent of %s", compute[1].Dir, compute[0].Dir)
	}
	s8, s9 := topology.PCIPath(d["mlx5_8"], h.SysRoot()), topology.PCIPath(d["mlx5_9"], h.SysRoot())
	if len(s8) != 2 || len(s9) != 2 || s8[1] != s9[1] || !s8[1].RootPort {
		t.Errorf("storage paths %+v / %+v: want NIC then one shared root port", s8, s9)
	}
	if topology.PCIPath(&topology.Device{}, h.SysRoot()) != nil || topology.PCIPath(nil, h.SysRoot()) != nil {
		t.Error("a device without a PCI directory has a path")
	}
}

func TestPCIPath_IsPCIAddress(t *testing.T) {
	for s, want := range map[string]bool{"0000:3a:00.0": true, "0000:3a:1f.7": true, "0000:3a:00.8": false,
		"pci0000:3a": false, "0000:3A:00.0": false, "0000:3a:00": false, "": false} {
		if got := topology.IsPCIAddress(s); got != want {
			t.Errorf("IsPCIAddress(%q) = %v", s, got)
		}
	}
}
