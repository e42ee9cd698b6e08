package topology_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/sim/simtest"
)

// TestPCIePath_Hops walks real-shaped sysfs trees: a NIC behind one PCIe
// switch (DGX H100), behind two stacked switches (OCI H100, the PXB
// layout), and a VM-style NIC on the root bus with no root port.
func TestPCIePath_Hops(t *testing.T) {
	cases := []struct {
		shape, dev string
		want       []string // addresses, NIC first; "*" marks the root port
	}{
		{"dgx-h100", "mlx5_0", []string{"0000:19:00.0", "0000:17:01.0", "0000:16:00.0", "0000:15:01.0*"}},
		{"dgx-h100", "mlx5_9", []string{"0000:41:00.1", "0000:40:01.0*"}},
		{"h100-oci", "mlx5_1", []string{"0000:18:00.1", "0000:17:00.0", "0000:14:00.0", "0000:12:01.0", "0000:11:00.0", "0000:10:01.0*"}},
		{"gb200", "ibP2p3s0", []string{"0002:03:00.0", "0002:02:00.0", "0002:01:00.0", "0002:00:00.0*"}},
	}
	for _, c := range cases {
		t.Run(c.shape+"/"+c.dev, func(t *testing.T) {
			t.Parallel()
			h := simtest.Build(t, c.shape)
			info, ok := h.Device(c.dev)
			if !ok {
				t.Fatalf("no %s", c.dev)
			}
			dir, err := filepath.EvalSymlinks(filepath.Join(h.SysRoot(), info.PCIPath))
			if err != nil {
				t.Fatal(err)
			}
			byDir := topology.PCIPath(&topology.Device{Name: c.dev, PCIDir: dir}, h.SysRoot())
			byAddr := topology.PCIPath(&topology.Device{Name: c.dev, PCIAddress: info.PCIAddress}, h.SysRoot())
			for _, hops := range [][]topology.PCIHop{byDir, byAddr} {
				var got []string
				for i, hop := range hops {
					s := hop.Address
					if hop.RootPort {
						s += "*"
					}
					got = append(got, s)
					if filepath.Base(hop.Dir) != hop.Address || (i > 0 && !strings.HasPrefix(hops[i-1].Dir, hop.Dir+"/")) {
						t.Fatalf("hop %d dir %s does not contain the one below", i, hop.Dir)
					}
				}
				if strings.Join(got, " ") != strings.Join(c.want, " ") {
					t.Fatalf("path %v, want %v", got, c.want)
				}
			}
		})
	}
}

func TestPCIePath_NoDirNoAddress(t *testing.T) {
	if p := topology.PCIPath(nil, "/sys"); p != nil {
		t.Fatalf("nil device: %v", p)
	}
	if p := topology.PCIPath(&topology.Device{Name: "mlx5_0"}, "/sys"); p != nil {
		t.Fatalf("no PCI dir or address: %v", p)
	}
	if p := topology.PCIPath(&topology.Device{Name: "x", PCIAddress: "0000:99:00.0"}, t.TempDir()); p != nil {
		t.Fatalf("unresolvable address: %v", p)
	}
	// An endpoint on the root bus (a VM) has no root port above it.
	p := topology.PCIPath(&topology.Device{Name: "vm", PCIDir: "/sys/devices/pci0000:00/0000:00:05.0"}, "/sys")
	if len(p) != 1 || p[0].Address != "0000:00:05.0" || p[0].RootPort {
		t.Fatalf("root-bus endpoint: %+v", p)
	}
}

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
