package sim

import (
	"bufio"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/topology"
)

// seedRoles is the expected PF role count per shape: the seed's field
// validation tables (link-state seed 4.1.3 and 4.2.4, with the default-route
// step) and the design's shapes.
var seedRoles = map[string]map[topology.Role]int{
	"dgx-h100":    {topology.RoleCompute: 8, topology.RoleStorage: 4, topology.RoleManagement: 1},
	"dgx-h100-ib": {topology.RoleCompute: 12, topology.RoleManagement: 1},
	"gb200":       {topology.RoleCompute: 4, topology.RoleManagement: 2},
	"l40s-onprem": {topology.RoleCompute: 4, topology.RoleManagement: 1},
	"minimal":     {topology.RoleCompute: 1},
	"a100-oci":    {topology.RoleCompute: 16, topology.RoleManagement: 2},
	"h100-oci":    {topology.RoleCompute: 16, topology.RoleStorage: 2},
	"l40s-oci":    {topology.RoleStorage: 6},
	"xl":          {topology.RoleCompute: 32},
	"xxl":         {topology.RoleCompute: 128},
}

// tempRoot is a fresh directory from MkdirTemp (RAM-backed when possible),
// removed at cleanup.
func tempRoot(tb testing.TB) string {
	tb.Helper()
	dir, err := MkdirTemp("nichealth-sim-test-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func buildShape(t testing.TB, shape string) *Host {
	t.Helper()
	h, err := Build(tempRoot(t), shape)
	if err != nil {
		t.Fatalf("Build(%s): %v", shape, err)
	}
	return h
}

func readTrim(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return strings.TrimSpace(string(b))
}

// shapesUnderTest leaves xxl to TestSim_ScaleShapes (in memory) and
// BenchmarkBuild_xxl, keeping the suite fast where no tmpfs is at hand; set
// NICHEALTH_SIM_SCALE=1 to build it on disk here too.
func shapesUnderTest(t *testing.T) []string {
	var out []string
	for _, s := range Shapes() {
		if s == "xxl" && os.Getenv("NICHEALTH_SIM_SCALE") == "" {
			continue
		}
		out = append(out, s)
	}
	return out
}

// TestSim_ScaleShapes checks xl and xxl without writing them: device and
// VF counts, roles, and the relation matrix.
func TestSim_ScaleShapes(t *testing.T) {
	for _, tc := range []struct {
		shape    string
		pfs, vfs int
	}{{"xl", 32, 256}, {"xxl", 128, 1024}} {
		def := shapeTable()[tc.shape]
		h, err := buildLayout(tempRoot(t), tc.shape, def.build(), BuildOptions{NodeName: "n", BootID: "b"}, false)
		if err != nil {
			t.Fatal(err)
		}
		var pfs, vfs int
		for _, d := range h.Devices() {
			if d.IsVF {
				vfs++
			} else {
				pfs++
				if d.Ports != 2 || len(d.NetDevs) != 2 {
					t.Errorf("%s %s: %d ports, netdevs %v", tc.shape, d.Name, d.Ports, d.NetDevs)
				}
			}
		}
		if pfs != tc.pfs || vfs != tc.vfs {
			t.Errorf("%s: %d PFs %d VFs, want %d and %d", tc.shape, pfs, vfs, tc.pfs, tc.vfs)
		}
		if got := h.ExpectedRoles(); !reflect.DeepEqual(got, seedRoles[tc.shape]) {
			t.Errorf("%s roles %v", tc.shape, got)
		}
		for name, row := range TopoMatrix(h.Devices(), h.GPUs()) {
			pix := 0
			for _, r := range row {
				if r == RelPIX {
					pix++
				}
			}
			if pix != 1 {
				t.Errorf("%s %s: %v, want PIX to exactly one GPU", tc.shape, name, row)
			}
		}
	}
}

// TestSim_DualPortOnDisk writes a small scale layout (dual-port PFs with
// VFs, as xl/xxl have) and runs the on-disk checks over it.
func TestSim_DualPortOnDisk(t *testing.T) {
	h, err := buildLayout(tempRoot(t), "xl", scale(2, 1, 2), BuildOptions{NodeName: "n", BootID: "b"}, true)
	if err != nil {
		t.Fatal(err)
	}
	checkSymlinksRelativeInside(t, h.Root)
	checkClassInfiniband(t, h)
	checkMetadata(t, h)
	checkClassificationFromTree(t, h)
	d, _ := h.Device("mlx5_0")
	if d.NetDevs[1] != d.NetDevs[0]+"d1" {
		t.Errorf("port 2 netdev %q", d.NetDevs[1])
	}
	if err := h.SetPortState("mlx5_0", 2, "DOWN", "Polling"); err != nil {
		t.Fatal(err)
	}
	if got := readTrim(t, filepath.Join(h.Paths().ClassInfiniBand, "mlx5_0/ports/1/state")); got != "4: ACTIVE" {
		t.Errorf("port 1 changed with port 2: %s", got)
	}
}

// TestSim_8_DesignTestContract_AllShapes builds every shape and checks the
// tree is laid out as DESIGN.md section 8 requires.
func TestSim_8_DesignTestContract_AllShapes(t *testing.T) {
	for _, shape := range shapesUnderTest(t) {
		t.Run(shape, func(t *testing.T) {
			h := buildShape(t, shape)
			big := shape == "xl" || shape == "xxl"
			if !big {
				checkSymlinksRelativeInside(t, h.Root)
			}
			checkClassInfiniband(t, h)
			checkMetadata(t, h)
			if got := h.ExpectedRoles(); !reflect.DeepEqual(got, seedRoles[shape]) {
				t.Errorf("expected roles = %v, seed tables say %v", got, seedRoles[shape])
			}
			checkClassificationFromTree(t, h)
			for _, p := range []string{"proc/net/route", "proc/net/ipv6_route", "proc/sys/kernel/random/boot_id", "dev/infiniband/rdma_cm", "dev/infiniband/uverbs0", "dev/infiniband/umad0", "sys/class/net/lo/operstate"} {
				if _, err := os.Stat(filepath.Join(h.Root, p)); err != nil {
					t.Errorf("missing %s: %v", p, err)
				}
			}
		})
	}
}

func checkSymlinksRelativeInside(t *testing.T, root string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		n++
		target, err := os.Readlink(p)
		if err != nil {
			return err
		}
		if filepath.IsAbs(target) {
			t.Errorf("%s -> %s is absolute", p, target)
		}
		res, err := filepath.EvalSymlinks(p)
		if err != nil {
			t.Errorf("%s -> %s does not resolve: %v", p, target, err)
			return nil
		}
		if !strings.HasPrefix(res, root+"/") {
			t.Errorf("%s resolves to %s, outside %s", p, res, root)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no symlinks in the tree")
	}
}

func checkClassInfiniband(t *testing.T, h *Host) {
	t.Helper()
	cls := h.Paths().ClassInfiniBand
	ents, err := os.ReadDir(cls)
	if err != nil {
		t.Fatal(err)
	}
	devs := map[string]DeviceInfo{}
	for _, d := range h.Devices() {
		devs[d.Name] = d
	}
	if len(ents) != len(devs) {
		t.Errorf("class/infiniband has %d entries, manifest %d devices", len(ents), len(devs))
	}
	for _, e := range ents {
		name := e.Name()
		d, ok := devs[name]
		if !ok {
			t.Errorf("class/infiniband/%s not in Devices()", name)
			continue
		}
		dev := filepath.Join(cls, name, "device")
		if v := readTrim(t, dev+"/vendor"); v != d.Vendor || d.Driver == "mlx5_core" && v != "0x15b3" {
			t.Errorf("%s: vendor %s, want %s", name, v, d.Vendor)
		}
		target, _ := os.Readlink(dev)
		if filepath.Base(target) != d.PCIAddress {
			t.Errorf("%s/device -> %s, want it to name %s", name, target, d.PCIAddress)
		}
		if !strings.Contains(readTrim(t, dev+"/uevent"), "PCI_SLOT_NAME="+d.PCIAddress) {
			t.Errorf("%s: uevent lacks PCI_SLOT_NAME=%s", name, d.PCIAddress)
		}
		drv, _ := os.Readlink(dev + "/driver")
		if filepath.Base(drv) != d.Driver {
			t.Errorf("%s: driver -> %s", name, drv)
		}
		_, physErr := os.Lstat(dev + "/physfn")
		if d.IsVF != (physErr == nil) {
			t.Errorf("%s: IsVF=%v but physfn present=%v (seed 8.5)", name, d.IsVF, physErr == nil)
		}
		if d.IsVF {
			pf, _ := os.Readlink(dev + "/physfn")
			if pf != "../"+d.PhysFn {
				t.Errorf("%s: physfn -> %s, want ../%s", name, pf, d.PhysFn)
			}
		}
		for p := 1; p <= d.Ports; p++ {
			pd, _ := h.PortPath(name, p, "")
			if ll := readTrim(t, pd+"/link_layer"); ll != d.LinkLayer {
				t.Errorf("%s/%d link_layer %s, manifest %s", name, p, ll, d.LinkLayer)
			}
			cs, hw := CounterNames()
			for _, c := range cs {
				if _, err := os.Stat(pd + "/counters/" + c); err != nil {
					t.Errorf("%s/%d: %v", name, p, err)
				}
			}
			for _, c := range hw {
				if _, err := os.Stat(pd + "/hw_counters/" + c); err != nil {
					t.Errorf("%s/%d: %v", name, p, err)
				}
			}
		}
		nd := filepath.Join(h.Paths().ClassNet, d.NetDev, "device")
		if res, err := filepath.EvalSymlinks(nd); err != nil || filepath.Base(res) != d.PCIAddress {
			t.Errorf("%s: class/net/%s/device resolves to %s (%v)", name, d.NetDev, res, err)
		}
	}
}

func loadMetadata(t testing.TB, h *Host) Metadata {
	t.Helper()
	b, err := os.ReadFile(h.MetadataPath())
	if err != nil {
		t.Fatal(err)
	}
	var md Metadata
	if err := json.Unmarshal(b, &md); err != nil {
		t.Fatalf("metadata is not JSON: %v", err)
	}
	return md
}

// checkMetadata proves gpu_metadata.json agrees with the tree (seed 12.2)
// and that nic_topology follows from the PCI hierarchy as sysfs shows it.
func checkMetadata(t *testing.T, h *Host) {
	t.Helper()
	md := loadMetadata(t, h)
	if md.Version != "1.0" || md.NodeName == "" || len(md.GPUs) == 0 {
		t.Fatalf("metadata header: %+v", md)
	}
	sys := h.SysRoot()
	gpuPath := map[int]string{}
	for i, g := range md.GPUs {
		if g.GPUID != i {
			t.Errorf("gpus[%d].gpu_id = %d", i, g.GPUID)
		}
		dir := filepath.Join(sys, "bus/pci/devices", g.PCIAddress)
		if v := readTrim(t, dir+"/vendor"); v != "0x10de" {
			t.Errorf("GPU %s vendor %s", g.PCIAddress, v)
		}
		res, err := filepath.EvalSymlinks(dir)
		if err != nil {
			t.Fatal(err)
		}
		gpuPath[i], _ = filepath.Rel(sys, res)
	}
	var pfs []string
	for _, d := range h.Devices() {
		if !d.IsVF {
			pfs = append(pfs, d.Name)
		}
	}
	var keys []string
	for k, row := range md.NICTopology {
		keys = append(keys, k)
		if len(row) != len(md.GPUs) {
			t.Errorf("nic_topology[%s] has %d entries, want %d", k, len(row), len(md.GPUs))
		}
	}
	sort.Strings(pfs)
	sort.Strings(keys)
	if !reflect.DeepEqual(pfs, keys) {
		t.Errorf("nic_topology keys %v, want the PF devices %v", keys, pfs)
	}
	gpus := h.GPUs()
	for _, name := range pfs {
		dev := filepath.Join(h.Paths().ClassInfiniBand, name, "device")
		res, err := filepath.EvalSymlinks(dev)
		if err != nil {
			t.Fatal(err)
		}
		nicPath, _ := filepath.Rel(sys, res)
		nicNUMA := atoi(t, readTrim(t, dev+"/numa_node"))
		for i, g := range md.GPUs {
			if gpus[i].C2C {
				continue
			}
			want := Relation(nicPath, nicNUMA, gpuPath[i], g.NUMANode)
			if got := md.NICTopology[name][i]; got != want {
				t.Errorf("nic_topology[%s][%d] = %s, the sysfs PCI tree says %s", name, i, got, want)
			}
		}
	}
}

func atoi(t testing.TB, s string) int {
	t.Helper()
	n := 0
	neg := strings.HasPrefix(s, "-")
	for _, c := range strings.TrimPrefix(s, "-") {
		if c < '0' || c > '9' {
			t.Fatalf("not a number: %q", s)
		}
		n = n*10 + int(c-'0')
	}
	if neg {
		n = -n
	}
	return n
}

// checkClassificationFromTree runs the seed's classify_nic (section 4.2.2,
// with the NUMA gate of 4.1.2 and the BlueField rule of 4.2.3) over what
// the tree and metadata say, and compares it with ExpectedRole: the tree
// really supports the roles the shape claims.
func checkClassificationFromTree(t *testing.T, h *Host) {
	t.Helper()
	md := loadMetadata(t, h)
	gpuNUMA := map[int]bool{}
	for _, g := range md.GPUs {
		if g.NUMANode >= 0 {
			gpuNUMA[g.NUMANode] = true
		}
	}
	routeDevs := map[string]bool{}
	if iface := defaultRouteIface(t, h.ProcRoot()); iface != "" {
		ifaces := []string{iface}
		lowers, _ := filepath.Glob(filepath.Join(h.Paths().ClassNet, iface, "lower_*"))
		for _, l := range lowers {
			ifaces = append(ifaces, strings.TrimPrefix(filepath.Base(l), "lower_"))
		}
		for _, i := range ifaces {
			ibs, _ := os.ReadDir(filepath.Join(h.Paths().ClassNet, i, "device", "infiniband"))
			for _, e := range ibs {
				routeDevs[e.Name()] = true
			}
		}
	}
	for _, d := range h.Devices() {
		if d.IsVF {
			continue
		}
		dir := filepath.Join(h.Paths().ClassInfiniBand, d.Name)
		if readTrim(t, dir+"/device/vendor") != "0x15b3" {
			if d.ExpectedRole != topology.RoleUnknown {
				t.Errorf("non-mlx5 %s expects role %s", d.Name, d.ExpectedRole)
			}
			continue
		}
		var got topology.Role
		row := md.NICTopology[d.Name]
		has := func(levels ...string) bool {
			for _, r := range row {
				for _, l := range levels {
					if r == l {
						return true
					}
				}
			}
			return false
		}
		switch {
		case routeDevs[d.Name]:
			got = topology.RoleManagement
		case !gpuNUMA[atoi(t, readTrim(t, dir+"/device/numa_node"))]:
			got = topology.RoleManagement
		case has(RelPIX, RelPXB):
			got = topology.RoleCompute
		case readTrim(t, dir+"/ports/1/link_layer") == topology.LinkLayerInfiniBand:
			got = topology.RoleCompute
		case has(RelNODE, RelPHB):
			got = topology.RoleStorage
		default:
			switch readTrim(t, dir+"/hca_type") {
			case "MT41682", "MT41686", "MT41692":
				got = topology.RoleManagement
			default:
				got = topology.RoleStorage
			}
		}
		if got != d.ExpectedRole {
			t.Errorf("%s: the seed's classification of the tree gives %s, shape expects %s (%s)", d.Name, got, d.ExpectedRole, d.RoleReason)
		}
	}
}

func defaultRouteIface(t testing.TB, proc string) string {
	t.Helper()
	f, err := os.Open(filepath.Join(proc, "net/route"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 8 && fields[1] == "00000000" && fields[7] == "00000000" {
			return fields[0]
		}
	}
	return ""
}

func TestSim_4_2_2_RelationLevels(t *testing.T) {
	const (
		hb  = "devices/pci0000:15"
		rp  = hb + "/0000:15:01.0"
		up  = rp + "/0000:16:00.0"
		dn0 = up + "/0000:17:00.0"
		dn1 = up + "/0000:17:01.0"
	)
	tests := []struct {
		name       string
		a, b       string
		numaA, nmB int
		want       string
	}{
		{"same switch, two downstream ports", dn0 + "/0000:18:00.0", dn1 + "/0000:19:00.0", 0, 0, RelPIX},
		{"same downstream port", dn0 + "/0000:18:00.0", dn0 + "/0000:18:00.1", 0, 0, RelPIX},
		{"two switches below one", dn0 + "/0000:18:00.0/0000:19:00.0/0000:1a:00.0", dn1 + "/0000:1b:00.0/0000:1c:00.0/0000:1d:00.0", 0, 0, RelPXB},
		{"host bridge only", hb + "/0000:15:01.0/0000:16:00.0", hb + "/0000:15:02.0/0000:20:00.0", 0, 0, RelPHB},
		{"other host bridge same NUMA", dn0 + "/0000:18:00.0", "devices/pci0000:26/0000:26:01.0/0000:27:00.0", 0, 0, RelNODE},
		{"other NUMA", dn0 + "/0000:18:00.0", dn1 + "/0000:19:00.0", 0, 1, RelSYS},
		{"empty path", "", dn1 + "/0000:19:00.0", 0, 0, RelSYS},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Relation(tc.a, tc.numaA, tc.b, tc.nmB); got != tc.want {
				t.Errorf("Relation = %s, want %s", got, tc.want)
			}
			if got := Relation(tc.b, tc.nmB, tc.a, tc.numaA); got != tc.want {
				t.Errorf("Relation (swapped) = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestSim_4_2_4_GB200AllSYS(t *testing.T) {
	h := buildShape(t, "gb200")
	for name, row := range loadMetadata(t, h).NICTopology {
		for i, r := range row {
			if r != RelSYS {
				t.Errorf("%s GPU %d: %s, want SYS (NVLink-C2C GPUs)", name, i, r)
			}
		}
	}
	for _, d := range h.Devices() {
		if !strings.HasPrefix(d.Name, "ib") && !strings.HasPrefix(d.Name, "roce") {
			t.Errorf("gb200 device %s: want ib*/roce* names", d.Name)
		}
	}
	if r := h.DefaultRoute(); r != "enP5p1s0" {
		t.Errorf("default route on %s", r)
	}
	if _, err := os.Stat(filepath.Join(h.Paths().ClassNet, "enP5p1s0", "device", "infiniband")); !os.IsNotExist(err) {
		t.Errorf("default-route NIC must have no RDMA device: %v", err)
	}
}

func TestSim_8_6_DGXVFsNumberedAfterPFs(t *testing.T) {
	h := buildShape(t, "dgx-h100")
	var pfs, vfs int
	for _, d := range h.Devices() {
		if d.IsVF {
			vfs++
			if st := readTrim(t, filepath.Join(h.Paths().ClassInfiniBand, d.Name, "ports/1/state")); st != "1: DOWN" {
				t.Errorf("VF %s state %q", d.Name, st)
			}
			if n := atoi(t, strings.TrimPrefix(d.Name, "mlx5_")); n < 13 {
				t.Errorf("VF %s numbered among PFs", d.Name)
			}
			continue
		}
		pfs++
	}
	if pfs != 13 || vfs != 16 {
		t.Errorf("dgx-h100: %d PFs, %d VFs; want 13 and 16", pfs, vfs)
	}
	dev := filepath.Join(h.Paths().ClassInfiniBand, "mlx5_0", "device")
	if readTrim(t, dev+"/sriov_totalvfs") != "16" || readTrim(t, dev+"/sriov_numvfs") != "2" {
		t.Error("mlx5_0 sriov files")
	}
}

func TestSim_Options_NoMetadataAndBond(t *testing.T) {
	h, err := BuildWith(tempRoot(t), "dgx-h100", BuildOptions{NoMetadata: true, Bond: true, NodeName: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(h.MetadataPath()); !os.IsNotExist(err) {
		t.Errorf("metadata exists with NoMetadata: %v", err)
	}
	if got := defaultRouteIface(t, h.ProcRoot()); got != "bond0" {
		t.Errorf("default route on %q, want bond0", got)
	}
	lower := filepath.Join(h.Paths().ClassNet, "bond0", "lower_enp13s0np0")
	res, err := filepath.EvalSymlinks(filepath.Join(lower, "device", "infiniband", "mlx5_12"))
	if err != nil || !strings.HasPrefix(res, h.Root) {
		t.Errorf("bond0 lower link does not lead to mlx5_12: %v", err)
	}
	checkSymlinksRelativeInside(t, h.Root)
}

func TestSim_Options_ForeignRDMA(t *testing.T) {
	h, err := BuildWith(tempRoot(t), "l40s-oci", BuildOptions{ForeignRDMA: true})
	if err != nil {
		t.Fatal(err)
	}
	d, ok := h.Device("irdma0")
	if !ok || d.Vendor != "0x8086" || d.Driver != "ice" || d.ExpectedRole != topology.RoleUnknown {
		t.Fatalf("irdma0: %+v", d)
	}
	checkSymlinksRelativeInside(t, h.Root)
	checkClassInfiniband(t, h)
	checkClassificationFromTree(t, h)
	if err := h.RemoveDevice("irdma0"); err != nil {
		t.Fatal(err)
	}
	if err := h.RestoreDevice("irdma0"); err != nil {
		t.Fatal(err)
	}
	checkSymlinksRelativeInside(t, h.Root)
}

func TestSim_BuildErrors(t *testing.T) {
	if _, err := Build(tempRoot(t), "no-such-shape"); err == nil || !strings.Contains(err.Error(), "dgx-h100") {
		t.Errorf("unknown shape: %v", err)
	}
	root := tempRoot(t)
	if _, err := Build(root, "minimal"); err != nil {
		t.Fatal(err)
	}
	if _, err := Build(root, "minimal"); err == nil {
		t.Error("second Build into the same root succeeded")
	}
	if _, err := Open(tempRoot(t)); err == nil {
		t.Error("Open of an empty dir succeeded")
	}
	bad := tempRoot(t)
	os.WriteFile(filepath.Join(bad, ManifestName), []byte("{not json"), 0o644)
	if _, err := Open(bad); err == nil {
		t.Error("Open of a corrupt manifest succeeded")
	}
}

func TestSim_OpenSeesSameHost(t *testing.T) {
	h := buildShape(t, "h100-oci")
	o, err := Open(h.Root)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(h.Devices(), o.Devices()) || !reflect.DeepEqual(h.GPUs(), o.GPUs()) || o.Shape() != "h100-oci" {
		t.Error("Open sees a different host than Build made")
	}
	if o.Paths() != h.Paths() {
		t.Errorf("paths differ: %+v vs %+v", o.Paths(), h.Paths())
	}
}
