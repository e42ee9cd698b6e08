package inventory_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/gpumeta"
	"github.com/nichealth/nichealthd/topology/inventory"
	"github.com/nichealth/nichealthd/topology/roles"
	"github.com/nichealth/nichealthd/topology/sim"
	"github.com/nichealth/nichealthd/topology/sim/simtest"
)

func byAddr(fns []inventory.Function) map[string]inventory.Function {
	m := map[string]inventory.Function{}
	for _, f := range fns {
		m[f.Address] = f
	}
	return m
}

func dev(t *testing.T, h *sim.Host, name string) sim.DeviceInfo {
	t.Helper()
	d, ok := h.Device(name)
	if !ok {
		t.Fatalf("no %s", name)
	}
	return d
}

// Seed 5.3 (vendor detection by PCI vendor) over bus/pci/devices rather
// than class/infiniband: every Mellanox network function is listed,
// whatever the RDMA stack made of it; GPUs, bridges and the Broadcom NIC
// are not.
func TestLinkState_5_3_InventoryListsEveryMellanoxFunction(t *testing.T) {
	h := simtest.Build(t, "dgx-h100")
	fns, probs, err := inventory.Scan(h.SysRoot(), nil)
	if err != nil || len(probs) != 0 {
		t.Fatalf("err %v problems %v", err, probs)
	}
	want := map[string]sim.DeviceInfo{}
	for _, d := range h.Devices() {
		want[d.PCIAddress] = d
	}
	if len(fns) != len(want) {
		t.Fatalf("%d functions, want %d (every PF and VF of the shape)", len(fns), len(want))
	}
	for _, f := range fns {
		d, ok := want[f.Address]
		if !ok {
			t.Fatalf("%s listed, not a Mellanox function of the shape", f.Address)
		}
		if f.IsVF != d.IsVF || f.Card != d.Card {
			t.Errorf("%s: %+v, want %+v", f.Address, f, d)
		}
		if f.IsVF {
			continue
		}
		if f.State() != inventory.Healthy || !slices.Equal(f.RDMA, []string{d.Name}) || f.NUMANode != d.NUMANode ||
			f.Serial != d.Serial || f.Serial == "" || f.LinkLayer() != d.LinkLayer || f.LimitedPF {
			t.Errorf("%s (%s): %+v, want bound with its RDMA device, serial %s", f.Address, d.Name, f, d.Serial)
		}
	}
}

// A card that failed to probe, one whose mlx5_ib is missing, one handed
// to vfio-pci, each as the scan sees it, and each undone by a restore.
func TestInventory_ScanSeesFunctionsDiscoveryCannot(t *testing.T) {
	h := simtest.Build(t, "dgx-h100")
	for name, mode := range map[string]string{"mlx5_3": sim.DetachUnbound, "mlx5_9": sim.DetachNoRDMA, "mlx5_1": sim.DetachDriverPrefix + "vfio-pci", "mlx5_2": sim.DetachNoRDMA} {
		if err := h.DetachFunction(name, mode); err != nil {
			t.Fatal(err)
		}
	}
	devs, _, err := topology.Discover(h.Paths(), topology.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		if slices.Contains([]string{"mlx5_1", "mlx5_2", "mlx5_3", "mlx5_9"}, d.Name) {
			t.Fatalf("discovery still lists %s", d.Name)
		}
	}
	fns, probs, err := inventory.Scan(h.SysRoot(), nil)
	if err != nil || len(probs) != 0 {
		t.Fatalf("err %v problems %v", err, probs)
	}
	got := byAddr(fns)
	for _, tc := range []struct {
		dev    string
		state  inventory.State
		driver string
		net    bool
	}{
		{"mlx5_3", inventory.Unbound, "", false},
		{"mlx5_1", inventory.OtherDriver, "vfio-pci", false},
		{"mlx5_2", inventory.NoRDMA, "mlx5_core", false}, // IB: no IPoIB without the RDMA device
		{"mlx5_9", inventory.NoRDMA, "mlx5_core", true},  // RoCE: mlx5_core keeps the netdev
	} {
		d := dev(t, h, tc.dev)
		f, ok := got[d.PCIAddress]
		if !ok {
			t.Fatalf("%s (%s) not listed", tc.dev, d.PCIAddress)
		}
		if f.State() != tc.state || f.Driver != tc.driver || len(f.RDMA) != 0 || (len(f.NetDevs) > 0) != tc.net || f.Serial != d.Serial {
			t.Errorf("%s: state %s driver %q rdma %v netdevs %v serial %q", tc.dev, f.State(), f.Driver, f.RDMA, f.NetDevs, f.Serial)
		}
	}
	// The VFs of a detached PF left the bus with it.
	vfs := 0
	for _, f := range fns {
		if f.IsVF {
			vfs++
		}
	}
	if vfs != 16-6 {
		t.Fatalf("%d VFs listed, want 10 (three detached PFs took 2 each)", vfs)
	}
	for _, name := range []string{"mlx5_1", "mlx5_2", "mlx5_3", "mlx5_9"} {
		if err := h.RestoreDevice(name); err != nil {
			t.Fatal(err)
		}
	}
	fns, _, _ = inventory.Scan(h.SysRoot(), nil)
	for _, f := range fns {
		if !f.IsVF && f.State() != inventory.Healthy {
			t.Fatalf("%s after restore: %s", f.Address, f.State())
		}
	}
	if devs, _, _ := topology.Discover(h.Paths(), topology.Filter{}); len(devs) != 29 {
		t.Fatalf("%d devices discovered after restore, want 29", len(devs))
	}
}

// An unbound compute function gets the role it would have had and the
// GPUs behind it, from the PCIe tree, numbered as the metadata numbers
// them; an excluded address is left alone; VFs and a limited PF are left
// alone with their reason.
func TestInventory_RoleAndGPUsOfAFunctionWithoutRDMA(t *testing.T) {
	h := simtest.Build(t, "dgx-h100")
	if err := h.DetachFunction("mlx5_3", sim.DetachUnbound); err != nil {
		t.Fatal(err)
	}
	if err := h.DetachFunction("mlx5_9", sim.DetachNoRDMA); err != nil {
		t.Fatal(err)
	}
	if err := h.SetLimitedPF("mlx5_7", true); err != nil {
		t.Fatal(err)
	}
	devs, _, err := topology.Discover(h.Paths(), topology.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	mx, err := gpumeta.Load(h.MetadataPath())
	if err != nil {
		t.Fatal(err)
	}
	if err := roles.Classify(devs, mx, nil); err != nil {
		t.Fatal(err)
	}
	fns, _, _ := inventory.Scan(h.SysRoot(), nil)
	mlx3, mlx9, mlx7 := dev(t, h, "mlx5_3"), dev(t, h, "mlx5_9"), dev(t, h, "mlx5_7")
	exclude := topology.Filter{Exclude: []*regexp.Regexp{regexp.MustCompile("^" + regexp.QuoteMeta(mlx9.PCIAddress) + "$")}}
	inventory.Attach(fns, devs, exclude, nil)
	inventory.Classify(fns, mx, false, h.Paths(), nil, nil)
	got := byAddr(fns)
	f3 := got[mlx3.PCIAddress]
	if f3.LeftAlone != "" || f3.Device != "" || f3.Role != topology.RoleCompute || len(f3.GPUs) != 1 || f3.GPUs[0].ID != 3 || f3.GPUs[0].UUID == "" {
		t.Fatalf("unbound mlx5_3: role %s (%s), GPUs %+v, left alone %q", f3.Role, f3.RoleReason, f3.GPUs, f3.LeftAlone)
	}
	if f := got[mlx9.PCIAddress]; !strings.Contains(f.LeftAlone, "excluded") {
		t.Fatalf("excluded mlx5_9: %+v", f)
	}
	if f := got[mlx7.PCIAddress]; !f.LimitedPF || f.LeftAlone != roles.LimitedPFReason {
		t.Fatalf("limited PF mlx5_7: %+v", f)
	}
	if d := byName(devs)["mlx5_7"]; d == nil || !d.LimitedPF || d.Monitored() || d.RoleReason != roles.LimitedPFReason {
		t.Fatalf("discovery of the limited PF: %+v", d)
	}
	for _, f := range fns {
		if f.IsVF && f.LeftAlone == "" {
			t.Fatalf("VF %s not left alone", f.Address)
		}
		if f.Device == "mlx5_0" && (!f.Monitored || f.FWVer == "" || f.BoardID == "" || f.NodeGUID == "" || f.Role != topology.RoleCompute) {
			t.Fatalf("mlx5_0 attached: %+v", f)
		}
	}
	// Without the metadata the same row comes from the PCIe tree.
	sysMx, err := gpumeta.FromSysfs(h.Paths(), devs)
	if err != nil {
		t.Fatal(err)
	}
	fns, _, _ = inventory.Scan(h.SysRoot(), nil)
	inventory.Attach(fns, devs, topology.Filter{}, nil)
	inventory.Classify(fns, sysMx, false, h.Paths(), nil, nil)
	if f := byAddr(fns)[mlx3.PCIAddress]; f.Role != topology.RoleCompute || len(f.GPUs) != 1 || f.GPUs[0].ID != 3 {
		t.Fatalf("unbound mlx5_3 over the sysfs matrix: %+v", f)
	}
	if f := byAddr(fns)[mlx9.PCIAddress]; f.Role != topology.RoleStorage {
		t.Fatalf("mlx5_9 without RDMA: %s (%s)", f.Role, f.RoleReason)
	}
}

func byName(devs []*topology.Device) map[string]*topology.Device {
	m := map[string]*topology.Device{}
	for _, d := range devs {
		m[d.Name] = d
	}
	return m
}

// A function whose netdev carries the default route is management even
// without an RDMA device.
func TestInventory_DefaultRouteOnANetdevWithoutRDMAIsManagement(t *testing.T) {
	h := simtest.Build(t, "dgx-h100")
	if err := h.DetachFunction("mlx5_12", sim.DetachNoRDMA); err != nil {
		t.Fatal(err)
	}
	devs, _, _ := topology.Discover(h.Paths(), topology.Filter{})
	mx, _ := gpumeta.Load(h.MetadataPath())
	roles.Classify(devs, mx, nil)
	routes, err := roles.DefaultRouteNetdevs(h.Paths())
	if err != nil || len(routes) == 0 {
		t.Fatalf("routes %v %v", routes, err)
	}
	fns, _, _ := inventory.Scan(h.SysRoot(), nil)
	inventory.Attach(fns, devs, topology.Filter{}, nil)
	inventory.Classify(fns, mx, false, h.Paths(), routes, nil)
	f := byAddr(fns)[dev(t, h, "mlx5_12").PCIAddress]
	if f.Role != topology.RoleManagement || !strings.Contains(f.RoleReason, "default route") {
		t.Fatalf("mlx5_12 without RDMA: %s (%s)", f.Role, f.RoleReason)
	}
}

// A function whose class file is garbage is a problem and left out; one
// whose vendor is unreadable is a problem too; neither stops the scan.
func TestInventory_ScanSurvivesGarbage(t *testing.T) {
	h := simtest.BuildWith(t, "minimal", sim.BuildOptions{PrivateFiles: true})
	d := dev(t, h, "mlx5_0")
	if err := os.WriteFile(filepath.Join(h.SysRoot(), d.PCIPath, "class"), []byte("zz\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fns, probs, err := inventory.Scan(h.SysRoot(), nil)
	if err != nil || len(probs) != 1 || !strings.Contains(probs[0].Error(), "class") || len(fns) != 0 {
		t.Fatalf("fns %v probs %v err %v", fns, probs, err)
	}
	if _, _, err := inventory.Scan(filepath.Join(h.Root, "nowhere"), nil); err == nil {
		t.Fatal("a missing bus/pci/devices is not an error")
	}
}

func TestInventory_ParseClass(t *testing.T) {
	for _, tc := range []struct {
		in  string
		v   uint32
		net bool
		ok  bool
	}{
		{"0x020700\n", 0x020700, true, true}, {"0x020000", 0x020000, true, true}, {"0x0c0600", 0x0c0600, true, true},
		{"0x030200", 0x030200, false, true}, {"0x060400", 0x060400, false, true},
		{"", 0, false, false}, {"0x1000000", 0, false, false}, {"nope", 0, false, false},
	} {
		v, err := inventory.ParseClass([]byte(tc.in))
		if (err == nil) != tc.ok || v != tc.v || (tc.ok && inventory.IsNetworkClass(v) != tc.net) {
			t.Errorf("%q: %#x %v", tc.in, v, err)
		}
	}
}
