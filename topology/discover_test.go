package topology_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/reader"
	"github.com/nichealth/nichealthd/topology/sim"
	"github.com/nichealth/nichealthd/topology/sim/simtest"
	"golang.org/x/sys/unix"
)

func byName(devs []*topology.Device) map[string]*topology.Device {
	m := map[string]*topology.Device{}
	for _, d := range devs {
		m[d.Name] = d
	}
	return m
}

// Seed 5.1-5.3: every device of class/infiniband with its identity, PCI
// address, card, NUMA node, netdev and ports.
func TestLinkState_5_1_DiscoveryMatchesTheTree(t *testing.T) {
	for _, shape := range []string{"dgx-h100", "gb200", "l40s-onprem", "minimal"} {
		t.Run(shape, func(t *testing.T) {
			h := simtest.Build(t, shape)
			devs, probs, err := topology.Discover(h.Paths(), topology.Filter{})
			if err != nil || len(probs) != 0 {
				t.Fatalf("err %v problems %v", err, probs)
			}
			got := byName(devs)
			for _, want := range h.Devices() {
				if want.Removed {
					continue
				}
				d := got[want.Name]
				if d == nil {
					t.Fatalf("%s not discovered", want.Name)
				}
				if d.PCIAddress != want.PCIAddress || d.Card != want.Card || d.NUMANode != want.NUMANode ||
					d.IsVF != want.IsVF || d.HCAType != want.HCAType || len(d.Ports) != want.Ports || !d.Mellanox {
					t.Errorf("%s: got %+v, want %+v", want.Name, d, want)
				}
				if want.NetDev != "" && d.NetDev() != want.NetDev {
					t.Errorf("%s netdev %q want %q", want.Name, d.NetDev(), want.NetDev)
				}
				// The simulator writes an mlx5-style port GUID: port 1's is
				// the node GUID (gids/0 of an IB port), so the fabric view
				// can join the port by it.
				if d.NodeGUID != want.NodeGUID {
					t.Errorf("%s node GUID %q want %q", want.Name, d.NodeGUID, want.NodeGUID)
				}
				if want.LinkLayer == topology.LinkLayerInfiniBand && d.Ports[0].GUID != "0x"+strings.ReplaceAll(want.NodeGUID, ":", "") {
					t.Errorf("%s port 1 GUID %q, node GUID %q", want.Name, d.Ports[0].GUID, want.NodeGUID)
				}
				if d.LinkLayer() != want.LinkLayer {
					t.Errorf("%s link layer %q want %q", want.Name, d.LinkLayer(), want.LinkLayer)
				}
			}
		})
	}
}

// Seed 5.3 and DESIGN.md field facts: names are not uniform (ibp3s0,
// roceP6p3s0); the driver or PCI vendor says mlx5, and PCI domains are
// kept in the card key.
func TestLinkState_5_3_VendorByDriverAndDomainKept(t *testing.T) {
	h := simtest.Build(t, "gb200")
	devs, _, _ := topology.Discover(h.Paths(), topology.Filter{})
	d := byName(devs)["ibP16p3s0"]
	if d == nil || !d.Mellanox || d.Driver != "mlx5_core" {
		t.Fatalf("ibP16p3s0: %+v", d)
	}
	if d.Card[:4] == "0000" || d.Card != topology.CardOf(d.PCIAddress) {
		t.Fatalf("card %q of %q lost its domain", d.Card, d.PCIAddress)
	}
}

// Seed 8.7: physfn marks a VF; the absence of sriov_totalvfs proves nothing.
func TestLinkState_8_5_VFByPhysfnOnly(t *testing.T) {
	h := simtest.Build(t, "dgx-h100")
	var pf sim.DeviceInfo
	for _, d := range h.Devices() {
		if !d.IsVF && d.ExpectedRole == topology.RoleCompute {
			pf = d
			break
		}
	}
	// A PF whose sriov_totalvfs vanished (SR-IOV off in firmware) is still a PF.
	os.Remove(filepath.Join(h.SysRoot(), pf.PCIPath, "sriov_totalvfs"))
	devs, _, _ := topology.Discover(h.Paths(), topology.Filter{})
	got := byName(devs)
	if got[pf.Name].IsVF {
		t.Fatal("PF without sriov_totalvfs taken for a VF")
	}
	vfs := 0
	for _, d := range devs {
		if d.IsVF {
			vfs++
			if d.Monitored() {
				t.Fatalf("VF %s would be monitored", d.Name)
			}
		}
	}
	if vfs == 0 {
		t.Fatal("no VF found")
	}
}

// Seed 12.1: nicExclusionRegex is applied before a device's files are
// read. An excluded device whose file hangs (a FIFO) must not hang
// discovery; the inclusion override replaces all filtering.
func TestLinkState_12_1_ExclusionBeforeAnyRead(t *testing.T) {
	h := simtest.Build(t, "dgx-h100")
	if err := h.MakeFIFO("mlx5_3", 1, "state"); err != nil {
		t.Fatal(err)
	}
	done := make(chan []*topology.Device, 1)
	go func() {
		devs, _, _ := topology.Discover(h.Paths(), topology.Filter{Exclude: []*regexp.Regexp{regexp.MustCompile("^mlx5_3$")}})
		done <- devs
	}()
	select {
	case devs := <-done:
		if byName(devs)["mlx5_3"] != nil {
			t.Fatal("excluded device discovered")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("discovery read a file of an excluded device")
	}
	// Release the FIFO so the tree can be removed.
	if p, err := h.PortPath("mlx5_3", 1, "state"); err == nil {
		if f, err := os.OpenFile(p, os.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	}
	f := topology.Filter{IncludeOverride: []*regexp.Regexp{regexp.MustCompile("^mlx5_[01]$")},
		Exclude: []*regexp.Regexp{regexp.MustCompile(".*")}}
	names, err := topology.ListNames(h.Paths().WithDefaults().ClassInfiniBand, f)
	if err != nil || len(names) != 2 {
		t.Fatalf("override: %v %v", names, err)
	}
}

// DESIGN.md difference 3 and "one unreadable or malformed file affects
// only what depends on it".
func TestLinkState_5_1_MalformedFileAffectsOnlyItsField(t *testing.T) {
	h := simtest.Build(t, "minimal")
	pci := filepath.Join(h.SysRoot(), h.Devices()[0].PCIPath)
	os.WriteFile(filepath.Join(pci, "numa_node"), []byte("garbage\n"), 0o644)
	os.Remove(filepath.Join(h.SysRoot(), "class", "infiniband", "mlx5_0", "fw_ver"))
	devs, probs, err := topology.Discover(h.Paths(), topology.Filter{})
	if err != nil || len(devs) != 1 {
		t.Fatalf("%v %v", devs, err)
	}
	d := devs[0]
	if d.NUMANode != -1 || d.FWVer != "" || d.HCAType == "" || len(d.Ports) != 1 || d.Ports[0].State == "" {
		t.Fatalf("%+v", d)
	}
	if len(probs) != 1 {
		t.Fatalf("problems: %v", probs)
	}
}

func TestLister_ChangedOnlyWhenTheSetChanges(t *testing.T) {
	h := simtest.Build(t, "dgx-h100")
	p := h.Paths().WithDefaults()
	names, _ := topology.ListNames(p.ClassInfiniBand, topology.Filter{})
	l := topology.NewLister(p.ClassInfiniBand)
	defer l.Close()
	l.SetKnown(names)
	for i := 0; i < 3; i++ {
		if ch, err := l.Changed(topology.Filter{}); ch || err != nil {
			t.Fatalf("steady: %v %v", ch, err)
		}
	}
	h.RemoveDevice("mlx5_5")
	if ch, _ := l.Changed(topology.Filter{}); !ch {
		t.Fatal("removal not seen")
	}
	h.RestoreDevice("mlx5_5")
	if ch, _ := l.Changed(topology.Filter{}); ch {
		t.Fatal("restored set reported changed")
	}
	h.RenameDevice("mlx5_5", "mlx5_99")
	if ch, _ := l.Changed(topology.Filter{}); !ch {
		t.Fatal("rename not seen")
	}
	// An excluded newcomer is not a change.
	if ch, _ := l.Changed(topology.Filter{Exclude: []*regexp.Regexp{regexp.MustCompile("^mlx5_99$")}}); !ch {
		t.Fatal("missing mlx5_5 must still count")
	}
}

func BenchmarkListerChanged_dgxH100(b *testing.B) {
	h := simtest.Build(b, "dgx-h100")
	p := h.Paths().WithDefaults()
	names, _ := topology.ListNames(p.ClassInfiniBand, topology.Filter{})
	l := topology.NewLister(p.ClassInfiniBand)
	l.SetKnown(names)
	b.ReportAllocs()
	for b.Loop() {
		l.Changed(topology.Filter{})
	}
}

// Seed 5.1 under a hung attribute: discovery through the bounded reader
// pays one deadline for a port's state file that never answers (a FIFO),
// leaves only that field unknown with a problem naming the file, and
// describes every other device; reading the path again fails at once.
func TestLinkState_5_1_DiscoveryBoundedByTheReadDeadline(t *testing.T) {
	h := simtest.Build(t, "dgx-h100")
	fifo, err := h.PortPath("mlx5_1", 1, "state")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.MakeFIFO("mlx5_1", 1, "state"); err != nil {
		t.Fatal(err)
	}
	r := reader.New(reader.Options{Timeout: 50 * time.Millisecond})
	defer func() {
		// Let the blocked read return so the test leaves no goroutine.
		if w, err := os.OpenFile(fifo, os.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		r.Close()
	}()
	read := func(p string) ([]byte, error) { return r.ReadFile(p, 0) }
	devs, probs, err := topology.DiscoverWith(h.Paths(), topology.Filter{}, read)
	if err != nil {
		t.Fatal(err)
	}
	by := byName(devs)
	if d := by["mlx5_1"]; d == nil || d.Ports[0].State != "" || d.Ports[0].PhysState == "" || d.HCAType == "" {
		t.Fatalf("mlx5_1 %+v", d)
	}
	if d := by["mlx5_2"]; d == nil || d.Ports[0].State != "4: ACTIVE" {
		t.Fatalf("mlx5_2 %+v", d)
	}
	stuck := 0
	for _, p := range probs {
		if errors.Is(p.Err, reader.ErrStuck) {
			stuck++
			if p.Device != "mlx5_1" || p.File != fifo {
				t.Fatalf("stuck problem %+v", p)
			}
		}
	}
	if stuck != 1 {
		t.Fatalf("%d stuck problems, want 1: %v", stuck, probs)
	}
	if _, err := read(fifo); !errors.Is(err, reader.ErrStuck) || r.StuckCount() != 1 {
		t.Fatalf("second read of the hung path: %v (stuck count %d)", err, r.StuckCount())
	}
}
