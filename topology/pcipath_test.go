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
