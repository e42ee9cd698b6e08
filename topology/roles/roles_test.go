package roles

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/gpumeta"
	"github.com/nichealth/nichealthd/topology/sim"
)

const (
	compute    = topology.RoleCompute
	storage    = topology.RoleStorage
	management = topology.RoleManagement
)

type node struct {
	h    *sim.Host
	devs []*topology.Device
	meta *gpumeta.Matrix
}

func build(t *testing.T, shape string, opts sim.BuildOptions) node {
	t.Helper()
	h, err := sim.BuildWith(filepath.Join(t.TempDir(), "h"), shape, opts)
	if err != nil {
		t.Fatal(err)
	}
	return discover(t, h)
}

func discover(t *testing.T, h *sim.Host) node {
	t.Helper()
	devs, probs, err := topology.Discover(h.Paths(), topology.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(probs) > 0 {
		t.Fatalf("discovery problems: %v", probs)
	}
	meta, err := gpumeta.Load(h.MetadataPath())
	if err != nil {
		t.Fatal(err)
	}
	return node{h: h, devs: devs, meta: meta}
}

// classify runs the whole chain as the daemon does and returns role and
// reason per PF.
func (n node) classify(t *testing.T, withRoute bool) map[string][2]string {
	t.Helper()
	var routes []RouteDevice
	if withRoute {
		var err error
		if routes, err = DefaultRouteDevices(n.h.Paths()); err != nil {
			t.Fatal(err)
		}
	}
	if err := Classify(n.devs, n.meta, routes); err != nil {
		t.Fatal(err)
	}
	out := map[string][2]string{}
	for _, d := range n.devs {
		if !d.IsVF {
			out[d.Name] = [2]string{string(d.Role), d.RoleReason}
		}
	}
	return out
}

func counts(got map[string][2]string) map[topology.Role]int {
	c := map[topology.Role]int{}
	for _, rr := range got {
		c[topology.Role(rr[0])]++
	}
	return c
}

// expectRoles checks every PF against the role the simulator built it for,
// the seed's per-platform totals, and specific reasons.
func expectRoles(t *testing.T, n node, got map[string][2]string, total map[topology.Role]int, reasons map[string]string) {
	t.Helper()
	for _, d := range n.h.Devices() {
		if d.IsVF {
			continue
		}
		if g := got[d.Name]; g[0] != string(d.ExpectedRole) {
			t.Errorf("%s: role %s (%s), want %s (%s)", d.Name, g[0], g[1], d.ExpectedRole, d.RoleReason)
		}
	}
	if c := counts(got); !reflect.DeepEqual(c, total) {
		t.Errorf("role totals = %v, want %v", c, total)
	}
	for dev, want := range reasons {
		if g := got[dev][1]; g != want {
			t.Errorf("%s: reason %q, want %q", dev, g, want)
		}
	}
}

// TestRoles_4_2_4_A100OCI: 2 Management by the NUMA gate + 16 Compute.
func TestRoles_4_2_4_A100OCI(t *testing.T) {
	n := build(t, "a100-oci", sim.BuildOptions{})
	got := n.classify(t, true)
	expectRoles(t, n, got, map[topology.Role]int{management: 2, compute: 16}, map[string]string{
		"mlx5_0":  "Management: NUMA 0 has no GPU",
		"mlx5_13": "Management: NUMA 6 has no GPU",
		"mlx5_1":  "Compute: PXB to GPU0",
	})
}

// TestRoles_4_2_4_H100OCI: 16 Compute (PXB) + 2 Storage (NODE).
func TestRoles_4_2_4_H100OCI(t *testing.T) {
	n := build(t, "h100-oci", sim.BuildOptions{})
	got := n.classify(t, true)
	expectRoles(t, n, got, map[topology.Role]int{compute: 16, storage: 2}, map[string]string{
		"mlx5_2":  "Storage: NODE to GPU0",
		"mlx5_11": "Storage: NODE to GPU4",
	})
	for name, rr := range got {
		if rr[0] == string(compute) && !strings.HasPrefix(rr[1], "Compute: PXB to GPU") {
			t.Errorf("%s: %s", name, rr[1])
		}
	}
}

// TestRoles_4_2_4_L40SOCI: all 6 Ethernet NICs Storage, one group.
func TestRoles_4_2_4_L40SOCI(t *testing.T) {
	n := build(t, "l40s-oci", sim.BuildOptions{})
	got := n.classify(t, true)
	expectRoles(t, n, got, map[topology.Role]int{storage: 6}, map[string]string{
		"mlx5_0": "Storage: NODE to GPU0",
		"mlx5_5": "Storage: NODE to GPU2",
	})
}

// TestRoles_4_2_4_OnPremL40S: without the default-route step the Ethernet
// NIC is Storage (0+4+1); with it, Management (1+4+0).
func TestRoles_4_2_4_OnPremL40S(t *testing.T) {
	n := build(t, "l40s-onprem", sim.BuildOptions{})
	without := n.classify(t, false)
	if c := counts(without); !reflect.DeepEqual(c, map[topology.Role]int{compute: 4, storage: 1}) {
		t.Errorf("without default route: %v", c)
	}
	if g := without["mlx5_0"]; g != [2]string{"Storage", "Storage: NODE to GPU0"} {
		t.Errorf("without default route, mlx5_0 = %v", g)
	}
	if g := without["mlx5_1"]; g != [2]string{"Compute", "Compute: InfiniBand link layer, no PCIe switch shared with a GPU"} {
		t.Errorf("mlx5_1 = %v", g)
	}
	with := n.classify(t, true)
	netdev := n.h.DefaultRoute()
	expectRoles(t, n, with, map[topology.Role]int{management: 1, compute: 4}, map[string]string{
		"mlx5_0": fmt.Sprintf("Management: carries the default route (via %s)", netdev),
	})
}

// TestRoles_4_2_4_GB200: all SYS; IB → Compute, BlueField-3 → Management.
func TestRoles_4_2_4_GB200(t *testing.T) {
	n := build(t, "gb200", sim.BuildOptions{})
	got := n.classify(t, true)
	expectRoles(t, n, got, map[topology.Role]int{compute: 4, management: 2}, map[string]string{
		"ibp3s0":      "Compute: InfiniBand link layer, no PCIe switch shared with a GPU",
		"ibP16p3s0":   "Compute: InfiniBand link layer, no PCIe switch shared with a GPU",
		"roceP6p3s0":  "Management: BlueField-3 DPU (MT41692), SYS to every GPU",
		"roceP22p3s0": "Management: BlueField-3 DPU (MT41692), SYS to every GPU",
	})
	// Seed 4.2.4: with the default route on a DPU, step 1 excludes it
	// before the HCA check runs. Same result, different path.
	dpu := n.devs[indexOf(t, n.devs, "roceP6p3s0")]
	if err := n.h.SetDefaultRoute(dpu.NetDev()); err != nil {
		t.Fatal(err)
	}
	got = n.classify(t, true)
	if g := got["roceP6p3s0"]; g[0] != string(management) || !strings.Contains(g[1], "carries the default route") {
		t.Errorf("roceP6p3s0 with the default route = %v", g)
	}
}

// TestRoles_4_2_4_DGXH100: 8 Compute (PIX), 4 Storage functions on two
// dual-function cards, the management NIC by the default route.
func TestRoles_4_2_4_DGXH100(t *testing.T) {
	n := build(t, "dgx-h100", sim.BuildOptions{})
	got := n.classify(t, true)
	expectRoles(t, n, got, map[topology.Role]int{compute: 8, storage: 4, management: 1}, map[string]string{
		"mlx5_0":  "Compute: PIX to GPU0",
		"mlx5_7":  "Compute: PIX to GPU7",
		"mlx5_8":  "Storage: NODE to GPU0",
		"mlx5_11": "Storage: NODE to GPU4",
	})
	for _, d := range n.devs {
		if d.IsVF && (d.Role != topology.RoleUnknown || !strings.Contains(d.RoleReason, "virtual function")) {
			t.Errorf("VF %s: %s %q", d.Name, d.Role, d.RoleReason)
		}
	}
}

// TestRoles_4_2_2_Minimal: the smallest node, classified from a matrix
// derived from sysfs (no collector) as well as from the metadata.
func TestRoles_4_2_2_Minimal(t *testing.T) {
	h, err := sim.BuildWith(filepath.Join(t.TempDir(), "h"), "minimal", sim.BuildOptions{NoMetadata: true})
	if err != nil {
		t.Fatal(err)
	}
	devs, _, err := topology.Discover(h.Paths(), topology.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	n := node{h: h, devs: devs}
	m, notes, err := gpumeta.Select(gpumeta.TopologyAuto, n.h.MetadataPath(), n.h.Paths(), n.devs)
	if err != nil {
		t.Fatal(err)
	}
	if m.Source != gpumeta.SourceSysfs || len(notes) != 1 {
		t.Errorf("source %s, notes %v", m.Source, notes)
	}
	if err := Classify(n.devs, m, nil); err != nil {
		t.Fatal(err)
	}
	if d := n.devs[0]; d.Role != compute || d.RoleReason != "Compute: PIX to GPU0" {
		t.Errorf("%s: %s %q", d.Name, d.Role, d.RoleReason)
	}
}

// TestRoles_DESIGN7_SysfsMatrixClassifiesLikeMetadata: for every
// simulated node, roles from the sysfs-derived matrix equal roles from the
// collector's metadata.
func TestRoles_DESIGN7_SysfsMatrixClassifiesLikeMetadata(t *testing.T) {
	for _, shape := range []string{"a100-oci", "h100-oci", "l40s-oci", "l40s-onprem", "gb200", "dgx-h100", "minimal"} {
		t.Run(shape, func(t *testing.T) {
			t.Parallel()
			n := build(t, shape, sim.BuildOptions{})
			fromMeta := n.classify(t, true)
			derived, err := gpumeta.FromSysfs(n.h.Paths(), n.devs)
			if err != nil {
				t.Fatal(err)
			}
			n.meta = derived
			fromSysfs := n.classify(t, true)
			for dev, rr := range fromMeta {
				if fromSysfs[dev][0] != rr[0] {
					t.Errorf("%s: metadata → %v, sysfs → %v", dev, rr, fromSysfs[dev])
				}
			}
		})
	}
}

// TestRoles_DESIGN_BondDefaultRoute: the default route on bond0 is
// followed through lower_* to the RDMA device (DESIGN.md field facts).
func TestRoles_DESIGN_BondDefaultRoute(t *testing.T) {
	n := build(t, "l40s-onprem", sim.BuildOptions{Bond: true})
	routes, err := DefaultRouteDevices(n.h.Paths())
	if err != nil {
		t.Fatal(err)
	}
	if want := []RouteDevice{{Device: "mlx5_0", Iface: "bond0"}}; !reflect.DeepEqual(routes, want) {
		t.Fatalf("routes = %+v, want %+v", routes, want)
	}
	got := n.classify(t, true)
	if g := got["mlx5_0"]; g != [2]string{"Management", "Management: carries the default route (via bond0)"} {
		t.Errorf("mlx5_0 = %v", g)
	}
}

// TestRoles_DESIGN_VLANOnBond: a VLAN on a bond on the port, two levels of
// lower_* links.
func TestRoles_DESIGN_VLANOnBond(t *testing.T) {
	n := build(t, "l40s-onprem", sim.BuildOptions{Bond: true})
	classNet := n.h.Paths().ClassNet
	vlanDir := filepath.Join(n.h.SysRoot(), "devices", "virtual", "net", "bond0.100")
	if err := os.MkdirAll(vlanDir, 0o755); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, "../bond0", filepath.Join(vlanDir, "lower_bond0"))
	mustSymlink(t, "../../devices/virtual/net/bond0.100", filepath.Join(classNet, "bond0.100"))
	if err := n.h.SetDefaultRoute("bond0.100"); err != nil {
		t.Fatal(err)
	}
	routes, err := DefaultRouteDevices(n.h.Paths())
	if err != nil {
		t.Fatal(err)
	}
	if want := []RouteDevice{{Device: "mlx5_0", Iface: "bond0.100"}}; !reflect.DeepEqual(routes, want) {
		t.Fatalf("routes = %+v, want %+v", routes, want)
	}
}

// TestRoles_DESIGN_IPv6DefaultRoute: on a host whose only default route
// is IPv6, the management NIC is still found; the kernel's unreachable
// default on lo is not a default route.
func TestRoles_DESIGN_IPv6DefaultRoute(t *testing.T) {
	n := build(t, "dgx-h100", sim.BuildOptions{})
	mgmt := n.h.DefaultRoute()
	if err := n.h.SetDefaultRoute(""); err != nil {
		t.Fatal(err)
	}
	routes, err := DefaultRouteDevices(n.h.Paths())
	if err != nil || routes != nil {
		t.Fatalf("no default route: %+v, %v", routes, err)
	}
	if err := n.h.SetDefaultRoute6(mgmt); err != nil {
		t.Fatal(err)
	}
	routes, err = DefaultRouteDevices(n.h.Paths())
	if err != nil {
		t.Fatal(err)
	}
	if len(routes) != 1 || routes[0].Iface != mgmt {
		t.Fatalf("routes = %+v, want the device of %s", routes, mgmt)
	}
	got := n.classify(t, true)
	if g := got[routes[0].Device]; g != [2]string{"Management", "Management: carries the default route (via " + mgmt + ")"} {
		t.Errorf("%s = %v", routes[0].Device, g)
	}
	// Dual stack on the same interface: one device, once.
	if err := n.h.SetDefaultRoute(mgmt); err != nil {
		t.Fatal(err)
	}
	if again, err := DefaultRouteDevices(n.h.Paths()); err != nil || !reflect.DeepEqual(again, routes) {
		t.Errorf("dual stack: %+v, %v; want %+v", again, err, routes)
	}
}

// TestRoles_DESIGN_IPv6RouteTable parses /proc/net/ipv6_route as the
// kernel writes it.
func TestRoles_DESIGN_IPv6RouteTable(t *testing.T) {
	const (
		z      = "00000000000000000000000000000000"
		lo     = z + " 00 " + z + " 00 " + z + " ffffffff 00000001 00000000 00200200       lo\n"
		subnet = "fe800000000000000000000000000000 40 " + z + " 00 " + z + " 00000100 00000001 00000000 00000001     eno1\n"
	)
	def := func(iface, flags string) string {
		return z + " 00 " + z + " 00 fe800000000000000000000000000001 00000400 00000001 00000000 " + flags + " " + iface + "\n"
	}
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"no default, only the kernel's unreachable entry", subnet + lo, nil},
		{"one default", def("eno1", "00000003") + subnet + lo, []string{"eno1"}},
		{"two defaults, one repeated", def("bond0", "00000003") + def("eth1", "00450003") + def("bond0", "00000003") + lo, []string{"bond0", "eth1"}},
		{"default route down", def("eno1", "00000002") + lo, nil},
		{"reject on a real interface", def("eno1", "00000201") + lo, nil},
		{"a /64 is not default", subnet, nil},
		{"malformed lines skipped", "garbage\n\n" + z + " 00\n" + def("ib0", "zz") + def("ib1", "00000003"), []string{"ib1"}},
		{"empty", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ParseIPv6RouteTable([]byte(tc.in)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// FuzzParseIPv6RouteTable: any ipv6_route content parses without panic.
func FuzzParseIPv6RouteTable(f *testing.F) {
	f.Add([]byte("00000000000000000000000000000000 00 00000000000000000000000000000000 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003     eno1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, iface := range ParseIPv6RouteTable(b) {
			if iface == "" || iface == "lo" {
				t.Fatalf("interface %q", iface)
			}
		}
	})
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestRoles_DESIGN_NonMlx5OnDefaultRoute: an irdma device carrying the
// default route is not monitored and changes nobody else's role.
func TestRoles_DESIGN_NonMlx5OnDefaultRoute(t *testing.T) {
	n := build(t, "h100-oci", sim.BuildOptions{})
	before := n.classify(t, true)
	// Give the plain NIC that carries the default route an RDMA device,
	// as an Intel E810 with irdma would have.
	netdev := n.h.DefaultRoute()
	netDir, err := filepath.EvalSymlinks(filepath.Join(n.h.Paths().ClassNet, netdev))
	if err != nil {
		t.Fatal(err)
	}
	pciDir := filepath.Dir(filepath.Dir(netDir)) // <pci>/net/<netdev>
	if _, err := os.Lstat(filepath.Join(netDir, "device")); err != nil {
		mustSymlink(t, "../../../"+filepath.Base(pciDir), filepath.Join(netDir, "device"))
	}
	ibDir := filepath.Join(pciDir, "infiniband", "irdma0")
	if err := os.MkdirAll(filepath.Join(ibDir, "ports", "1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ibDir, "ports", "1", "link_layer"), []byte("Ethernet\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, "../..", filepath.Join(ibDir, "device"))
	rel, err := filepath.Rel(n.h.Paths().ClassInfiniBand, ibDir)
	if err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, rel, filepath.Join(n.h.Paths().ClassInfiniBand, "irdma0"))

	n2 := discover(t, n.h)
	routes, err := DefaultRouteDevices(n2.h.Paths())
	if err != nil {
		t.Fatal(err)
	}
	if want := []RouteDevice{{Device: "irdma0", Iface: netdev}}; !reflect.DeepEqual(routes, want) {
		t.Fatalf("routes = %+v, want %+v", routes, want)
	}
	after := n2.classify(t, true)
	irdma := after["irdma0"]
	delete(after, "irdma0")
	if !reflect.DeepEqual(before, after) {
		t.Errorf("roles changed by a non-mlx5 device on the default route")
	}
	if irdma[0] != "" || !strings.HasPrefix(irdma[1], "not monitored: not an mlx5 device") {
		t.Errorf("irdma0 = %v", irdma)
	}
	for _, d := range n2.devs {
		if d.Name == "irdma0" && d.Monitored() {
			t.Error("irdma0 is monitored")
		}
	}
}

func indexOf(t *testing.T, devs []*topology.Device, name string) int {
	t.Helper()
	for i, d := range devs {
		if d.Name == name {
			return i
		}
	}
	t.Fatalf("no device %s", name)
	return -1
}

// TestRoles_4_2_2_Rules runs the decision order on hand-made devices, for
// the branches no simulated platform reaches.
func TestRoles_4_2_2_Rules(t *testing.T) {
	m := &gpumeta.Matrix{Source: "metadata test.json",
		GPUs: []gpumeta.GPU{{ID: 0, NUMANode: 0}, {ID: 3, NUMANode: 1}},
		NICs: map[string][]string{
			"pix":     {"SYS", "PIX"},
			"pxb":     {"PXB", "SYS"},
			"both":    {"PXB", "PIX"},
			"phb":     {"NODE", "PHB"},
			"node":    {"NODE", "SYS"},
			"sys":     {"SYS", "SYS"},
			"short":   {"SYS"}, // malformed row: missing cells read as SYS
			"nvlinks": {"NV4", "NV4"},
		}}
	dev := func(name string, numa int, ll, hca string) *topology.Device {
		d := &topology.Device{Name: name, Mellanox: true, NUMANode: numa, HCAType: hca}
		if ll != "-" {
			d.Ports = []topology.Port{{Num: 1, LinkLayer: ll}, {Num: 2, LinkLayer: topology.LinkLayerEthernet}}
		}
		return d
	}
	eth, ib := topology.LinkLayerEthernet, topology.LinkLayerInfiniBand
	tests := []struct {
		d      *topology.Device
		route  bool
		role   topology.Role
		reason string
	}{
		{dev("pix", 0, eth, "MT4129"), true, management, "Management: carries the default route (via eth9)"},
		{dev("pix", -1, eth, "MT4129"), false, management, "Management: NUMA node unknown (numa_node -1)"},
		{dev("pix", 2, ib, "MT4129"), false, management, "Management: NUMA 2 has no GPU"},
		{dev("pix", 0, eth, "MT4129"), false, compute, "Compute: PIX to GPU3"},
		{dev("pxb", 1, eth, "MT4129"), false, compute, "Compute: PXB to GPU0"},
		{dev("both", 1, eth, "MT4129"), false, compute, "Compute: PIX to GPU3"},
		{dev("phb", 1, ib, "MT4129"), false, compute, "Compute: InfiniBand link layer, no PCIe switch shared with a GPU"},
		{dev("phb", 1, eth, "MT4129"), false, storage, "Storage: PHB to GPU3"},
		{dev("node", 0, eth, "MT41692"), false, storage, "Storage: NODE to GPU0"},
		{dev("sys", 0, eth, "MT41692"), false, management, "Management: BlueField-3 DPU (MT41692), SYS to every GPU"},
		{dev("sys", 0, eth, "mt41682"), false, management, "Management: BlueField-2 DPU (mt41682), SYS to every GPU"},
		{dev("sys", 0, eth, "MT41686"), false, management, "Management: BlueField-2 DPU (MT41686), SYS to every GPU"},
		{dev("sys", 0, eth, "MT4129"), false, storage, "Storage: Ethernet, SYS to every GPU"},
		{dev("sys", 0, "-", "MT4129"), false, storage, "Storage: unknown link layer, SYS to every GPU"},
		{dev("short", 0, eth, "MT4129"), false, storage, "Storage: Ethernet, SYS to every GPU"},
		{dev("nvlinks", 0, eth, "MT4129"), false, storage, "Storage: Ethernet, SYS to every GPU"},
		{dev("absent", 0, eth, "MT4129"), false, storage,
			"Storage: Ethernet, SYS to every GPU (not in the GPU topology matrix from metadata test.json: treated as SYS to every GPU)"},
		{dev("absent", 1, ib, "MT4129"), false, compute,
			"Compute: InfiniBand link layer, no PCIe switch shared with a GPU (not in the GPU topology matrix from metadata test.json: treated as SYS to every GPU)"},
		{dev("absent", 1, eth, "MT41692"), false, management,
			"Management: BlueField-3 DPU (MT41692), SYS to every GPU (not in the GPU topology matrix from metadata test.json: treated as SYS to every GPU)"},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			var routes []RouteDevice
			if tc.route {
				routes = []RouteDevice{{Device: tc.d.Name, Iface: "eth9"}, {Device: tc.d.Name, Iface: "eth10"}}
			}
			if err := Classify([]*topology.Device{tc.d}, m, routes); err != nil {
				t.Fatal(err)
			}
			if tc.d.Role != tc.role || tc.d.RoleReason != tc.reason {
				t.Errorf("got %s %q, want %s %q", tc.d.Role, tc.d.RoleReason, tc.role, tc.reason)
			}
		})
	}
}

// TestRoles_4_1_2_NoGPUNUMA: with no GPU NUMA known the NUMA gate is
// blind; classification refuses and says how to fix it, and changes
// nothing.
func TestRoles_4_1_2_NoGPUNUMA(t *testing.T) {
	m := &gpumeta.Matrix{Source: "sysfs", GPUs: []gpumeta.GPU{{ID: 0, NUMANode: -1}, {ID: 1, NUMANode: -1}}, NICs: map[string][]string{}}
	d := &topology.Device{Name: "mlx5_0", Mellanox: true, NUMANode: 0, Role: compute, RoleReason: "before"}
	err := Classify([]*topology.Device{d}, m, nil)
	if err == nil {
		t.Fatal("no error")
	}
	for _, s := range []string{"none of the 2 GPUs in sysfs has a known NUMA node", "nicInclusionRegexOverride", "numa_node"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
	if d.Role != compute || d.RoleReason != "before" {
		t.Errorf("device changed: %s %q", d.Role, d.RoleReason)
	}
	if err := Classify([]*topology.Device{d}, nil, nil); err == nil || !strings.Contains(err.Error(), "no GPU topology matrix") {
		t.Errorf("nil matrix: %v", err)
	}
	// Nothing to classify: no reason to refuse.
	other := &topology.Device{Name: "irdma0"}
	if err := Classify([]*topology.Device{other, nil}, m, nil); err != nil {
		t.Errorf("only non-mlx5 devices: %v", err)
	}
}

// TestRoles_4_2_2_RouteTable parses /proc/net/route as the kernel writes
// it, and as a broken file might look.
func TestRoles_4_2_2_RouteTable(t *testing.T) {
	const hdr = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"one default", hdr + "eno1\t00000000\t0100000A\t0003\t0\t0\t100\t00000000\t0\t0\t0\neno1\t0000000A\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0\n", []string{"eno1"}},
		{"two defaults with metrics", hdr + "bond0\t00000000\t0100000A\t0003\t0\t0\t100\t00000000\t0\t0\t0\neth1\t00000000\t0101000A\t0003\t0\t0\t200\t00000000\t0\t0\t0\nbond0\t00000000\t0100000A\t0003\t0\t0\t300\t00000000\t0\t0\t0\n", []string{"bond0", "eth1"}},
		{"default route down", hdr + "eno1\t00000000\t0100000A\t0002\t0\t0\t100\t00000000\t0\t0\t0\n", nil},
		{"host route to 0.0.0.0 with a mask is not default", hdr + "eno1\t00000000\t00000000\t0001\t0\t0\t0\tFFFFFFFF\t0\t0\t0\n", nil},
		{"malformed lines skipped", hdr + "garbage\n\neno1 00000000\nib0\t00000000\t0100000A\tzz\t0\t0\t0\t00000000\t0\t0\t0\nib1\t00000000\t0100000A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n", []string{"ib1"}},
		{"empty", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ParseRouteTable([]byte(tc.in)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRoles_4_2_2_RouteFileMissing: seed 4.2.2 "silently skipped".
func TestRoles_4_2_2_RouteFileMissing(t *testing.T) {
	routes, err := DefaultRouteDevices(topology.Paths{ProcfsRoot: t.TempDir(), SysfsRoot: t.TempDir()})
	if routes != nil || err != nil {
		t.Errorf("got %v, %v", routes, err)
	}
	// A default route on an interface with no RDMA device, or one that
	// does not exist in class/net.
	proc := t.TempDir()
	if err := os.MkdirAll(filepath.Join(proc, "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proc, "net", "route"), []byte("Iface Destination Gateway Flags RefCnt Use Metric Mask MTU Window IRTT\nghost 00000000 0100000A 0003 0 0 0 00000000 0 0 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	routes, err = DefaultRouteDevices(topology.Paths{ProcfsRoot: proc, SysfsRoot: t.TempDir()})
	if routes != nil || err != nil {
		t.Errorf("got %v, %v", routes, err)
	}
}

// TestRoles_DESIGN_LowerLoop: a lower_* cycle in a broken tree ends.
func TestRoles_DESIGN_LowerLoop(t *testing.T) {
	net := t.TempDir()
	for _, n := range []string{"a", "b"} {
		if err := os.MkdirAll(filepath.Join(net, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mustSymlink(t, "../b", filepath.Join(net, "a", "lower_b"))
	mustSymlink(t, "../a", filepath.Join(net, "b", "lower_a"))
	if err := os.MkdirAll(filepath.Join(net, "b", "device", "infiniband", "mlx5_4"), 0o755); err != nil {
		t.Fatal(err)
	}
	got := rdmaBelow(net, "a", map[string]bool{}, 0)
	sort.Strings(got)
	if !reflect.DeepEqual(got, []string{"mlx5_4"}) {
		t.Errorf("got %v", got)
	}
	if got := rdmaBelow(net, "../etc", map[string]bool{}, 0); got != nil {
		t.Errorf("path escape: %v", got)
	}
}

// FuzzParseRouteTable: any route file content parses without panic.
func FuzzParseRouteTable(f *testing.F) {
	f.Add([]byte("Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\neno1\t00000000\t0100000A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, iface := range ParseRouteTable(b) {
			if iface == "" {
				t.Fatal("empty interface name")
			}
		}
	})
}
