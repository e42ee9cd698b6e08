package sim

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// snapshot maps every entry under H (manifest and removal records aside)
// to its kind and content or link target.
func snapshot(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == ManifestName || rel == removedDir || rel == tmpDir {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			tgt, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "L " + tgt
		case d.IsDir():
			out[rel] = "D"
		case d.Type()&fs.ModeNamedPipe != 0:
			out[rel] = "P"
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = "F " + string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// diff lists the paths whose entry differs between two snapshots.
func diff(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if b[k] != v {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// portRel is the real (resolved) path of a port file relative to H.
func portRel(t testing.TB, h *Host, dev string, port int, rel string) string {
	t.Helper()
	p, err := h.PortPath(dev, port, "")
	if err != nil {
		t.Fatal(err)
	}
	res, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := filepath.Rel(h.Root, filepath.Join(res, rel))
	return r
}

// TestSim_Faults_ChangeExactlyTheIntendedFile applies each mutation and
// checks that the tree differs in exactly the intended files and that
// they hold the intended content.
func TestSim_Faults_ChangeExactlyTheIntendedFile(t *testing.T) {
	h := buildShape(t, "minimal")
	nd := filepath.Join("sys/devices/pci0000:10/0000:10:01.0/0000:11:00.0/0000:12:01.0/0000:14:00.0/net", h.Devices()[0].NetDev)
	tests := []struct {
		name  string
		apply func() error
		want  map[string]string // rel path (resolved port paths use "port:") -> entry
	}{
		{"SetPortState short names", func() error { return h.SetPortState("mlx5_0", 1, "DOWN", "Disabled") },
			map[string]string{"port:state": "F 1: DOWN\n", "port:phys_state": "F 3: Disabled\n"}},
		{"SetPortState full form, phys kept", func() error { return h.SetPortState("mlx5_0", 1, "2: INIT", "") },
			map[string]string{"port:state": "F 2: INIT\n"}},
		{"SetPortState lower case", func() error { return h.SetPortState("mlx5_0", 1, "active", "linkup") },
			map[string]string{"port:state": "F 4: ACTIVE\n", "port:phys_state": "F 5: LinkUp\n"}},
		{"SetCounter", func() error { return h.SetCounter("mlx5_0", 1, "counters/link_downed", 255) },
			map[string]string{"port:counters/link_downed": "F 255\n"}},
		{"AddCounter", func() error { return h.AddCounter("mlx5_0", 1, "counters/link_downed", 2) },
			map[string]string{"port:counters/link_downed": "F 257\n"}},
		{"AddCounter hw", func() error { return h.AddCounter("mlx5_0", 1, "hw_counters/rnr_nak_retry_err", 1) },
			map[string]string{"port:hw_counters/rnr_nak_retry_err": "F 1\n"}},
		{"WriteRaw placeholder", func() error { return h.WriteRaw("mlx5_0", 1, "counters/port_xmit_wait", "N/A (no PMA)\n") },
			map[string]string{"port:counters/port_xmit_wait": "F N/A (no PMA)\n"}},
		{"SetRate", func() error { return h.SetRate("mlx5_0", 1, "200 Gb/sec (4X HDR)") },
			map[string]string{"port:rate": "F 200 Gb/sec (4X HDR)\n"}},
		{"SetOperstate", func() error { return h.SetOperstate(h.Devices()[0].NetDev, "down") },
			map[string]string{nd + "/operstate": "F down\n"}},
		{"SetCarrierChanges", func() error { return h.SetCarrierChanges(h.Devices()[0].NetDev, 9) },
			map[string]string{nd + "/carrier_changes": "F 9\n"}},
		{"SetBootID", func() error { return h.SetBootID("0b2e0c56-1b46-4e83-8d44-52c6e0a7e0a1") },
			map[string]string{"proc/sys/kernel/random/boot_id": "F 0b2e0c56-1b46-4e83-8d44-52c6e0a7e0a1\n"}},
		{"MakeFIFO", func() error { return h.MakeFIFO("mlx5_0", 1, "counters/symbol_error") },
			map[string]string{"port:counters/symbol_error": "P"}},
		{"UnmakeFIFO", func() error { return h.UnmakeFIFO("mlx5_0", 1, "counters/symbol_error") },
			map[string]string{"port:counters/symbol_error": "F 0\n"}},
		{"RemoveFile", func() error { return h.RemoveFile("mlx5_0", 1, "hw_counters/roce_slow_restart") },
			map[string]string{"port:hw_counters/roce_slow_restart": ""}},
		{"WriteRaw creates", func() error { return h.WriteRaw("mlx5_0", 1, "hw_counters/roce_slow_restart", "7\n") },
			map[string]string{"port:hw_counters/roce_slow_restart": "F 7\n"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshot(t, h.Root)
			if err := tc.apply(); err != nil {
				t.Fatal(err)
			}
			after := snapshot(t, h.Root)
			want := map[string]string{}
			for k, v := range tc.want {
				if strings.HasPrefix(k, "port:") {
					k = portRel(t, h, "mlx5_0", 1, strings.TrimPrefix(k, "port:"))
				}
				want[k] = v
			}
			var wantPaths []string
			for k, v := range want {
				wantPaths = append(wantPaths, k)
				if after[k] != v {
					t.Errorf("%s = %q, want %q", k, after[k], v)
				}
			}
			sort.Strings(wantPaths)
			got := diff(before, after)
			// A no-op write (same content) is allowed to be absent from the diff.
			for _, g := range got {
				if _, ok := want[g]; !ok {
					t.Errorf("unexpected change to %s (%q -> %q)", g, before[g], after[g])
				}
			}
			if left, _ := os.ReadDir(filepath.Join(h.Root, tmpDir)); len(left) != 0 {
				t.Errorf("temporary files left behind: %v", left)
			}
		})
	}
}

// TestSim_Faults_Atomic hammers a file with writes while readers read it:
// every read sees one whole value, never an empty or torn one.
func TestSim_Faults_Atomic(t *testing.T) {
	h := buildShape(t, "minimal")
	p, _ := h.PortPath("mlx5_0", 1, "state")
	var stop atomic.Bool
	var wg sync.WaitGroup
	var bad atomic.Value
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				b, err := os.ReadFile(p)
				if err != nil {
					bad.Store(fmt.Sprintf("read error %v", err))
					return
				}
				if s := string(b); s != "1: DOWN\n" && s != "4: ACTIVE\n" {
					bad.Store(fmt.Sprintf("torn read %q", s))
					return
				}
			}
		}()
	}
	for i := 0; i < 200; i++ {
		st := "ACTIVE"
		if i%2 == 0 {
			st = "DOWN"
		}
		if err := h.SetPortState("mlx5_0", 1, st, ""); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if v := bad.Load(); v != nil {
		t.Fatal(v)
	}
}

// TestSim_Faults_SharedInodesUnshared: files that start with equal content
// share an inode, and a mutation of one never shows in another.
func TestSim_Faults_SharedInodesUnshared(t *testing.T) {
	h := buildShape(t, "dgx-h100")
	a, _ := h.PortPath("mlx5_0", 1, "counters/link_downed")
	b, _ := h.PortPath("mlx5_1", 1, "counters/link_downed")
	if err := h.SetCounter("mlx5_0", 1, "counters/link_downed", 4); err != nil {
		t.Fatal(err)
	}
	if got := readTrim(t, b); got != "0" {
		t.Errorf("mlx5_1 link_downed = %s after writing mlx5_0's", got)
	}
	if got := readTrim(t, a); got != "4" {
		t.Errorf("mlx5_0 link_downed = %s", got)
	}
}

func TestSim_Faults_Errors(t *testing.T) {
	h := buildShape(t, "minimal")
	nd := h.Devices()[0].NetDev
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"unknown device", h.SetPortState("mlx5_9", 1, "DOWN", ""), "unknown device"},
		{"port 0", h.SetCounter("mlx5_0", 0, "counters/link_downed", 1), "no port 0"},
		{"port 2 of single-port", h.SetCounter("mlx5_0", 2, "counters/link_downed", 1), "no port 2"},
		{"unknown counter", h.SetCounter("mlx5_0", 1, "counters/nope", 1), "no file"},
		{"escape", h.WriteRaw("mlx5_0", 1, "../../../hca_type", "x"), "bad port file"},
		{"absolute", h.SetCounter("mlx5_0", 1, "/etc/passwd", 1), "bad port file"},
		{"bad state", h.SetPortState("mlx5_0", 1, "HAPPY", ""), "unknown port state"},
		{"bad phys", h.SetPortState("mlx5_0", 1, "", "9"), "unknown physical state"},
		{"bad operstate", h.SetOperstate(nd, "sideways"), "unknown operstate"},
		{"unknown netdev", h.SetOperstate("eth9", "up"), "netdev eth9"},
		{"netdev escape", h.SetCarrierChanges("../x", 1), "bad netdev"},
		{"bad boot id", h.SetBootID(" "), "bad boot id"},
		{"bad rate", h.SetRate("mlx5_0", 1, ""), "bad rate"},
		{"default route unknown", h.SetDefaultRoute("eth9"), "netdev eth9"},
		{"restore not removed", h.RestoreDevice("mlx5_0"), "not removed"},
		{"rename to existing", h.RenameDevice("mlx5_0", "mlx5_0"), "already exists"},
		{"rename bad", h.RenameDevice("mlx5_0", "a/b"), "bad device name"},
		{"unfifo regular", h.UnmakeFIFO("mlx5_0", 1, "counters/link_downed"), "not a FIFO"},
	}
	for _, tc := range tests {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, tc.err, tc.want)
		}
	}
	if err := h.WriteRaw("mlx5_0", 1, "counters/link_downed", "N/A (no PMA)\n"); err != nil {
		t.Fatal(err)
	}
	if err := h.AddCounter("mlx5_0", 1, "counters/link_downed", 1); err == nil || !strings.Contains(err.Error(), "not a counter") {
		t.Errorf("AddCounter on a placeholder: %v", err)
	}
	if err := h.SetCounter("mlx5_0", 1, "counters/link_downed", ^uint64(0)); err != nil {
		t.Fatal(err)
	}
	if err := h.AddCounter("mlx5_0", 1, "counters/link_downed", 1); err == nil || !strings.Contains(err.Error(), "overflows") {
		t.Errorf("AddCounter overflow: %v", err)
	}
}

// TestSim_6_2_RemoveRestoreRoundTrip: a PF falls off the bus with its VFs
// (link-state seed section 7 device disappearance) and comes back as the
// very same tree.
func TestSim_6_2_RemoveRestoreRoundTrip(t *testing.T) {
	h := buildShape(t, "dgx-h100")
	if err := h.SetCounter("mlx5_3", 1, "counters/symbol_error", 42); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, h.Root)
	d, _ := h.Device("mlx5_3")
	if err := h.RemoveDevice("mlx5_3"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"sys/class/infiniband/mlx5_3", "sys/bus/pci/devices/" + d.PCIAddress, "sys/" + d.PCIPath, "sys/class/net/" + d.NetDev} {
		if _, err := os.Lstat(filepath.Join(h.Root, p)); !os.IsNotExist(err) {
			t.Errorf("%s still exists after RemoveDevice: %v", p, err)
		}
	}
	var vfs int
	for _, x := range h.Devices() {
		if x.PhysFn == d.PCIAddress {
			vfs++
			if !x.Removed {
				t.Errorf("VF %s of removed PF still present", x.Name)
			}
			if _, err := os.Lstat(filepath.Join(h.Paths().ClassInfiniBand, x.Name)); !os.IsNotExist(err) {
				t.Errorf("VF %s class link survives", x.Name)
			}
		}
	}
	if vfs != 2 {
		t.Errorf("mlx5_3 has %d VFs, want 2", vfs)
	}
	checkSymlinksDangleOnlyIntoRemoved(t, h)
	if err := h.SetPortState("mlx5_3", 1, "DOWN", ""); err == nil {
		t.Error("SetPortState on a removed device succeeded")
	}
	if err := h.RemoveDevice("mlx5_3"); err == nil {
		t.Error("second RemoveDevice succeeded")
	}
	o, err := Open(h.Root)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.RestoreDevice("mlx5_3"); err != nil { // another process restores
		t.Fatal(err)
	}
	if got := diff(before, snapshot(t, h.Root)); len(got) != 0 {
		t.Errorf("tree differs after Remove+Restore: %v", got)
	}
	if _, err := os.Lstat(filepath.Join(h.Root, removedDir, "mlx5_3")); !os.IsNotExist(err) {
		t.Errorf("removal record left: %v", err)
	}
	o2, _ := Open(h.Root)
	for _, x := range o2.Devices() {
		if x.Removed {
			t.Errorf("%s still marked removed", x.Name)
		}
	}
}

func checkSymlinksDangleOnlyIntoRemoved(t *testing.T, h *Host) {
	t.Helper()
	filepath.WalkDir(filepath.Join(h.Root, "sys/class"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type()&fs.ModeSymlink != 0 {
			if _, err := filepath.EvalSymlinks(p); err != nil {
				t.Errorf("dangling class link %s", p)
			}
		}
		return nil
	})
}

func TestSim_Faults_RemoveVFAlone(t *testing.T) {
	h := buildShape(t, "dgx-h100")
	before := snapshot(t, h.Root)
	if err := h.RemoveDevice("mlx5_13"); err != nil {
		t.Fatal(err)
	}
	pf, _ := h.Device("mlx5_0")
	if _, err := os.Lstat(filepath.Join(h.SysRoot(), pf.PCIPath, "virtfn0")); !os.IsNotExist(err) {
		t.Errorf("PF virtfn0 survives its VF: %v", err)
	}
	if err := h.RestoreDevice("mlx5_13"); err != nil {
		t.Fatal(err)
	}
	if got := diff(before, snapshot(t, h.Root)); len(got) != 0 {
		t.Errorf("tree differs after Remove+Restore of a VF: %v", got)
	}
}

// TestSim_RenameDevice: same PCI address and GUID, new name (names are not
// stable across boots).
func TestSim_RenameDevice(t *testing.T) {
	h := buildShape(t, "minimal")
	d, _ := h.Device("mlx5_0")
	if err := h.RenameDevice("mlx5_0", "ibp20s0"); err != nil {
		t.Fatal(err)
	}
	cls := h.Paths().ClassInfiniBand
	if _, err := os.Lstat(filepath.Join(cls, "mlx5_0")); !os.IsNotExist(err) {
		t.Errorf("old class link remains: %v", err)
	}
	res, err := filepath.EvalSymlinks(filepath.Join(cls, "ibp20s0", "device"))
	if err != nil || filepath.Base(res) != d.PCIAddress {
		t.Fatalf("new name resolves to %s (%v)", res, err)
	}
	if g := readTrim(t, filepath.Join(cls, "ibp20s0", "node_guid")); g != d.NodeGUID {
		t.Errorf("GUID changed: %s vs %s", g, d.NodeGUID)
	}
	if got := readTrim(t, filepath.Join(h.SysRoot(), "class/infiniband_verbs/uverbs0/ibdev")); got != "ibp20s0" {
		t.Errorf("uverbs0 ibdev = %s", got)
	}
	o, _ := Open(h.Root)
	if _, ok := o.Device("ibp20s0"); !ok {
		t.Error("Open does not see the new name")
	}
	if err := o.SetPortState("ibp20s0", 1, "DOWN", ""); err != nil {
		t.Error(err)
	}
	if err := o.WriteMetadata(); err != nil {
		t.Fatal(err)
	}
	if _, ok := loadMetadata(t, o).NICTopology["ibp20s0"]; !ok {
		t.Error("WriteMetadata does not use the new name")
	}
	checkSymlinksRelativeInside(t, h.Root)
}

func TestSim_6_5_BootID(t *testing.T) {
	h := buildShape(t, "minimal")
	old, err := h.BootID()
	if err != nil {
		t.Fatal(err)
	}
	id, err := h.NewBootID()
	if err != nil {
		t.Fatal(err)
	}
	if id == old || len(id) != 36 || strings.Count(id, "-") != 4 {
		t.Errorf("NewBootID = %q (old %q)", id, old)
	}
	if got, _ := h.BootID(); got != id {
		t.Errorf("boot_id = %q, want %q", got, id)
	}
}

func TestSim_4_2_2_SetDefaultRoute(t *testing.T) {
	h := buildShape(t, "l40s-onprem")
	if got := defaultRouteIface(t, h.ProcRoot()); got != h.DefaultRoute() || got == "" {
		t.Fatalf("route file says %q, manifest %q", got, h.DefaultRoute())
	}
	d, _ := h.Device("mlx5_1")
	if err := h.SetDefaultRoute(d.NetDev); err != nil {
		t.Fatal(err)
	}
	if got := defaultRouteIface(t, h.ProcRoot()); got != d.NetDev {
		t.Errorf("default route on %q, want %q", got, d.NetDev)
	}
	if err := h.SetDefaultRoute(""); err != nil {
		t.Fatal(err)
	}
	if got := defaultRouteIface(t, h.ProcRoot()); got != "" {
		t.Errorf("default route on %q after removal", got)
	}
	if o, _ := Open(h.Root); o.DefaultRoute() != "" {
		t.Error("manifest keeps the old default route")
	}
}

func TestSim_FIFOBlocksReaders(t *testing.T) {
	h := buildShape(t, "minimal")
	if err := h.SetCounter("mlx5_0", 1, "counters/symbol_error", 5); err != nil {
		t.Fatal(err)
	}
	if err := h.MakeFIFO("mlx5_0", 1, "counters/symbol_error"); err != nil {
		t.Fatal(err)
	}
	p, _ := h.PortPath("mlx5_0", 1, "counters/symbol_error")
	fi, err := os.Lstat(p)
	if err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("not a FIFO: %v %v", fi, err)
	}
	// ResetCounters leaves the FIFO alone (opening it would block).
	if err := h.ResetCounters("mlx5_0", 1); err != nil {
		t.Fatal(err)
	}
	o, _ := Open(h.Root) // the saved content survives a process boundary
	if err := o.UnmakeFIFO("mlx5_0", 1, "counters/symbol_error"); err != nil {
		t.Fatal(err)
	}
	if got := readTrim(t, p); got != "5" {
		t.Errorf("restored content %q, want 5", got)
	}
}

// TestCounters_6_4_ResetCounters: an admin reset zeroes every counter of the
// port and nothing else.
func TestCounters_6_4_ResetCounters(t *testing.T) {
	h := buildShape(t, "minimal")
	if err := h.SetCounter("mlx5_0", 1, "counters/symbol_error", 9); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, h.Root)
	if err := h.ResetCounters("mlx5_0", 1); err != nil {
		t.Fatal(err)
	}
	after := snapshot(t, h.Root)
	cs, hw := CounterNames()
	for _, c := range cs {
		if v := after[portRel(t, h, "mlx5_0", 1, "counters/"+c)]; v != "F 0\n" {
			t.Errorf("counters/%s = %q", c, v)
		}
	}
	for _, c := range hw {
		if v := after[portRel(t, h, "mlx5_0", 1, "hw_counters/"+c)]; v != "F 0\n" {
			t.Errorf("hw_counters/%s = %q", c, v)
		}
	}
	for _, p := range diff(before, after) {
		if !strings.Contains(p, "/counters/") && !strings.Contains(p, "/hw_counters/") {
			t.Errorf("ResetCounters changed %s", p)
		}
	}
}

func TestSim_NormalizeState(t *testing.T) {
	tests := []struct{ in, want string }{
		{"DOWN", "1: DOWN"}, {"down", "1: DOWN"}, {"1", "1: DOWN"}, {"1: DOWN", "1: DOWN"},
		{"ACTIVE_DEFER", "5: ACTIVE_DEFER"}, {" 4: ACTIVE \n", "4: ACTIVE"},
	}
	for _, tc := range tests {
		if got, err := normalizeState(tc.in, stateNames, "state"); err != nil || got != tc.want {
			t.Errorf("state %q = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	phys := []struct{ in, want string }{
		{"Disabled", "3: Disabled"}, {"linkup", "5: LinkUp"}, {"Phy Test", "7: Phy Test"}, {"phytest", "7: Phy Test"},
		{"6", "6: LinkErrorRecovery"}, {"4: PortConfigurationTraining", "4: PortConfigurationTraining"},
	}
	for _, tc := range phys {
		if got, err := normalizeState(tc.in, physNames, "phys"); err != nil || got != tc.want {
			t.Errorf("phys %q = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "0", "8", "-1", "UP", ":"} {
		if _, err := normalizeState(bad, physNames, "phys"); err == nil {
			t.Errorf("phys %q accepted", bad)
		}
	}
}

func FuzzNormalizeState(f *testing.F) {
	for _, s := range []string{"DOWN", "1: DOWN", "5", "LinkUp", "Phy Test", ": x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := normalizeState(s, physNames, "phys")
		if err != nil {
			return
		}
		// Whatever was accepted is written in the kernel's form and reads back.
		again, err := normalizeState(got, physNames, "phys")
		if err != nil || again != got {
			t.Fatalf("%q -> %q -> %q, %v", s, got, again, err)
		}
	})
}

func FuzzRelation(f *testing.F) {
	f.Add("devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/0000:18:00.0", "devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:01.0/0000:19:00.0", 0, 0)
	f.Add("", "/", -1, 3)
	f.Fuzz(func(t *testing.T, a, b string, na, nb int) {
		r := Relation(a, na, b, nb)
		switch r {
		case RelPIX, RelPXB, RelPHB, RelNODE, RelSYS:
		default:
			t.Fatalf("Relation(%q, %q) = %q", a, b, r)
		}
		if r2 := Relation(b, nb, a, na); r2 != r {
			t.Fatalf("not symmetric: %s vs %s", r, r2)
		}
	})
}
