package runner

// Poll-cycle cost against the floors of the syscalls it cannot avoid.
//
// A steady poll reads every file of the read plan (m.files) and judges it.
// Two floors bound what any implementation could do with the same files:
//
//	(a) open + read + close per file, what a reopen-every-cycle reader pays;
//	(b) pread at offset 0 on descriptors kept open, what the reader pays on
//	    real sysfs, where the attribute is regenerated on every such read.
//
// Measured on real mlx5 sysfs: about 9 µs per file for (a), 2 µs for (b)
// and 23 µs for os.ReadFile. The goals: no allocation in a steady cycle, a
// cycle within 1.3x floor (b) and at least 3x faster than floor (a), cost
// linear in monitored ports, and nothing at all for VFs, excluded and
// management devices once discovery is done. The link sanity pass, which
// runs once a minute and not on every poll, is timed on its own.
//
// Reproduce with:
//
//	go test -run '^$' -bench 'Cycle|Floor' -benchmem ./checks/runner/ ./topology/reader/

import (
	"io"
	"log/slog"
	"sort"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/nichealth/nichealthd/config"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/observe"
	"github.com/nichealth/nichealthd/persist"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/reader"
	"github.com/nichealth/nichealthd/topology/sim"
)

// perfWarmCycles lets the first-poll baseline, the counter snapshots and
// the first velocity windows settle before anything is measured.
const perfWarmCycles = 5

// perfConfig points every path of the configuration at a simulated host.
func perfConfig(tb testing.TB, h *sim.Host) *config.Config {
	tb.Helper()
	return simConfig(tb, h, "")
}

// perfMonitor builds shape in a temporary directory and returns a
// discovered runner on it. keepOpen forces the kept-descriptor reader that
// real sysfs gets; otherwise the reader is the one the observer picks for
// the tree (a regular file system: reopen every cycle). The host's seams
// stand in for the driver statistics (one statistics file per RoCE
// netdev, as the ioctl would be one call), so the cycle includes them.
// The link sanity pass and the PCI inventory's scan, which run once a
// minute rather than every poll, are off (BenchmarkCycleSanityPass and
// BenchmarkInventoryScan_dgxH100 time them on their own): left in, they
// would land in some runs and not others depending on how many iterations
// fit in a minute of simulated time.
func perfMonitor(tb testing.TB, shape string, keepOpen bool) (*Runner, *sim.Host) {
	tb.Helper()
	h, err := sim.Build(tb.TempDir(), shape)
	if err != nil {
		tb.Fatalf("build %s: %v", shape, err)
	}
	return perfMonitorOn(tb, h, keepOpen), h
}

func perfMonitorOn(tb testing.TB, h *sim.Host, keepOpen bool) *Runner {
	tb.Helper()
	return perfMonitorWith(tb, h, keepOpen, "[linkSanity]\nenabled = false\n[inventory]\nenabled = false\n")
}

// perfMonitorWith is perfMonitorOn with extra configuration.
func perfMonitorWith(tb testing.TB, h *sim.Host, keepOpen bool, extra string) *Runner {
	tb.Helper()
	seams := simSeams(h)
	seams.KeepOpen = keepOpen
	return startRunner(tb, simConfig(tb, h, extra), nil, persist.BootFresh, slog.New(slog.NewTextHandler(io.Discard, nil)), seams)
}

// perfWarm runs the warm-up cycles and returns the clock to continue from.
func perfWarm(m *Runner, now time.Time, n int) time.Time {
	for i := 0; i < n; i++ {
		now = now.Add(time.Second)
		m.Cycle(now)
	}
	return now
}

// perfReport adds the per-file and per-port cost of one op that covers
// every file of the plan once.
func perfReport(b *testing.B, m *Runner) {
	b.Helper()
	st := m.obs.Stats()
	if b.N == 0 || st.Files == 0 || st.Ports == 0 {
		return
	}
	ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(ns/float64(st.Files), "ns/file")
	b.ReportMetric(ns/float64(st.Ports), "ns/port")
	b.ReportMetric(float64(st.Files), "files/cycle")
	b.ReportMetric(float64(st.Ports), "ports")
}

// benchCycle times the steady poll: every planned file read and judged,
// velocity windows rolling (one second per cycle, as in production).
func benchCycle(b *testing.B, shape string, keepOpen bool) {
	m, _ := perfMonitor(b, shape, keepOpen)
	now := perfWarm(m, time.Unix(1_700_000_000, 0), perfWarmCycles)
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Second)
		m.Cycle(now)
	}
	perfReport(b, m)
}

// Steady poll cycle, reader as NewMonitor picks it for the tree (reopen).
func BenchmarkCycle_dgxH100(b *testing.B) { benchCycle(b, "dgx-h100", false) }
func BenchmarkCycle_xl(b *testing.B)      { benchCycle(b, "xl", false) }
func BenchmarkCycle_xxl(b *testing.B)     { benchCycle(b, "xxl", false) }

// Steady poll cycle with descriptors kept open, as on real sysfs.
func BenchmarkCycle_dgxH100_KeepOpen(b *testing.B) { benchCycle(b, "dgx-h100", true) }
func BenchmarkCycle_xl_KeepOpen(b *testing.B)      { benchCycle(b, "xl", true) }
func BenchmarkCycle_xxl_KeepOpen(b *testing.B)     { benchCycle(b, "xxl", true) }

// benchCycleReadOnly is the reader alone over the plan: the difference to
// BenchmarkCycle is what parsing and judging cost.
func benchCycleReadOnly(b *testing.B, shape string, keepOpen bool) {
	m, _ := perfMonitor(b, shape, keepOpen)
	perfWarm(m, time.Unix(1_700_000_000, 0), perfWarmCycles)
	b.ReportAllocs()
	for b.Loop() {
		m.obs.ReadPlan()
	}
	perfReport(b, m)
}

// benchSanityPass times the once-a-minute link sanity pass (PCIe link
// state, SM LIDs, rate against peers, /dev/infiniband nodes) that rides on
// one poll in sixty at the default 1 s interval.
func benchSanityPass(b *testing.B, shape string) {
	h, err := sim.Build(b.TempDir(), shape)
	if err != nil {
		b.Fatal(err)
	}
	m := perfMonitorWith(b, h, false, "")
	now := perfWarm(m, time.Unix(1_700_000_000, 0), perfWarmCycles)
	obs := *m.last
	obs.SanityDue = true
	var specs []event.Spec
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(sanityEvery)
		obs.Now = now
		specs = specs[:0]
		m.cy.Reset(&obs, &specs)
		m.set.sanity.Run(m.cy)
	}
	if b.N > 0 {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(m.obs.Stats().Ports), "ns/port")
	}
}

// sanityEvery is how often the link sanity pass runs (observe).
const sanityEvery = time.Minute

func BenchmarkCycleSanityPass_dgxH100(b *testing.B) { benchSanityPass(b, "dgx-h100") }
func BenchmarkCycleSanityPass_xxl(b *testing.B)     { benchSanityPass(b, "xxl") }

func BenchmarkCycleReadOnly_dgxH100(b *testing.B)          { benchCycleReadOnly(b, "dgx-h100", false) }
func BenchmarkCycleReadOnly_dgxH100_KeepOpen(b *testing.B) { benchCycleReadOnly(b, "dgx-h100", true) }
func BenchmarkCycleReadOnly_xxl(b *testing.B)              { benchCycleReadOnly(b, "xxl", false) }
func BenchmarkCycleReadOnly_xxl_KeepOpen(b *testing.B)     { benchCycleReadOnly(b, "xxl", true) }

// perfCPaths converts the plan's paths once, so the floors time syscalls and
// not Go's string-to-C conversion (unix.Open allocates one per call).
// perfCPaths are the plan's files as NUL-terminated paths; driver calls
// (the PHY statistics) have no file to open and are left out of the floors.
func perfCPaths(m *Runner) [][]byte {
	files := m.obs.PlanFiles()
	out := make([][]byte, 0, len(files))
	for _, f := range files {
		if !strings.HasPrefix(f, "ethtool:") {
			out = append(out, append([]byte(f), 0))
		}
	}
	return out
}

func perfOpen(cpath []byte) (int, error) {
	dirfd := unix.AT_FDCWD
	fd, _, e := unix.Syscall6(unix.SYS_OPENAT, uintptr(dirfd), uintptr(unsafe.Pointer(&cpath[0])),
		uintptr(unix.O_RDONLY|unix.O_CLOEXEC), 0, 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}

// benchFloorOpenReadClose is floor (a) over exactly the plan's files.
func benchFloorOpenReadClose(b *testing.B, shape string) {
	m, _ := perfMonitor(b, shape, false)
	paths := perfCPaths(m)
	var buf [reader.MaxValue]byte
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range paths {
			fd, err := perfOpen(p)
			if err != nil {
				b.Fatalf("open %s: %v", p[:len(p)-1], err)
			}
			if _, err := unix.Read(fd, buf[:]); err != nil {
				b.Fatalf("read %s: %v", p[:len(p)-1], err)
			}
			unix.Close(fd)
		}
	}
	perfReport(b, m)
}

// benchFloorPread is floor (b): the plan's files opened once, then pread at
// offset 0 each op.
func benchFloorPread(b *testing.B, shape string) {
	m, _ := perfMonitor(b, shape, false)
	fds := make([]int, 0, m.obs.Stats().Files)
	b.Cleanup(func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	})
	paths := perfCPaths(m)
	for _, p := range paths {
		fd, err := perfOpen(p)
		if err != nil {
			b.Fatalf("open %s: %v", p[:len(p)-1], err)
		}
		fds = append(fds, fd)
	}
	var buf [reader.MaxValue]byte
	b.ReportAllocs()
	for b.Loop() {
		for i, fd := range fds {
			if _, err := unix.Pread(fd, buf[:], 0); err != nil {
				b.Fatalf("pread %s: %v", paths[i][:len(paths[i])-1], err)
			}
		}
	}
	perfReport(b, m)
}

func BenchmarkFloor_OpenReadClose_dgxH100(b *testing.B) { benchFloorOpenReadClose(b, "dgx-h100") }
func BenchmarkFloor_OpenReadClose_xl(b *testing.B)      { benchFloorOpenReadClose(b, "xl") }
func BenchmarkFloor_OpenReadClose_xxl(b *testing.B)     { benchFloorOpenReadClose(b, "xxl") }
func BenchmarkFloor_Pread_dgxH100(b *testing.B)         { benchFloorPread(b, "dgx-h100") }
func BenchmarkFloor_Pread_xl(b *testing.B)              { benchFloorPread(b, "xl") }
func BenchmarkFloor_Pread_xxl(b *testing.B)             { benchFloorPread(b, "xxl") }

// TestPerf_SteadyCycleAllocatesNothing: a steady poll allocates nothing, so
// a daemon polling every second for months never makes the garbage
// collector work on its behalf and its heap cannot creep. Both reader modes
// are held to it. The minute-ly link sanity pass is not a steady poll and
// is held off (BenchmarkCycleSanityPass measures it).
func TestPerf_SteadyCycleAllocatesNothing(t *testing.T) {
	for _, keepOpen := range []bool{false, true} {
		m, _ := perfMonitor(t, "dgx-h100", keepOpen)
		now := perfWarm(m, time.Unix(1_700_000_000, 0), perfWarmCycles)
		allocs := testing.AllocsPerRun(50, func() {
			now = now.Add(time.Second)
			m.Cycle(now)
		})
		if allocs != 0 {
			t.Errorf("keepOpen=%v: a steady dgx-h100 poll allocates %.1f objects; profile with go test -run '^$' -bench 'Cycle_dgxH100$' -memprofile mem.out ./checks/runner/",
				keepOpen, allocs)
		}
	}
}

// perfPortOf maps a planned file to the monitored port it belongs to: a
// file under the port's sysfs directory or under the class/net entry of
// the port's netdev.
func perfPortOf(m *Runner, path string) (*observe.Port, bool) {
	for _, p := range m.obs.Ports() {
		if strings.HasPrefix(path, p.Port.Dir+"/") {
			return p, true
		}
		if p.NetDev != "" && strings.HasPrefix(path, m.cfg.Paths.ClassNet+"/"+p.NetDev+"/") {
			return p, true
		}
		if p.NetDev != "" && path == "ethtool:"+p.NetDev { // the port's driver statistics (observe/phy.go)
			return p, true
		}
	}
	return nil, false
}

// perfPlanShape summarises a read plan: files per port for each link layer
// (it must be one number per link layer), and the plan's paths.
func perfPlanShape(t *testing.T, m *Runner) (perLL map[string]int, portsLL map[string]int, paths []string) {
	t.Helper()
	perPort := map[*observe.Port]int{}
	for _, f := range m.obs.PlanFiles() {
		p, ok := perfPortOf(m, f)
		if !ok {
			t.Fatalf("planned file %s belongs to no monitored port", f)
		}
		perPort[p]++
		paths = append(paths, f)
	}
	perLL, portsLL = map[string]int{}, map[string]int{}
	for _, p := range m.obs.Ports() {
		ll := p.Port.LinkLayer
		n := perPort[p]
		if prev, ok := perLL[ll]; ok && prev != n {
			t.Errorf("%s port %d reads %d files, other %s ports read %d: the per-port cost must be one constant per link layer",
				p.Device.Name, p.Port.Num, n, ll, prev)
		}
		perLL[ll] = n
		portsLL[ll]++
	}
	sort.Strings(paths)
	return perLL, portsLL, paths
}

// TestPerf_PlanLinearInPorts: the read plan is exactly monitored ports x
// files per port. VFs, management and excluded devices add no file, so the
// steady cost of a node grows with its monitored ports and nothing else.
func TestPerf_PlanLinearInPorts(t *testing.T) {
	shapes := []string{"dgx-h100", "h100-oci", "gb200", "a100-oci"}
	if testing.Short() {
		shapes = shapes[:3]
	}
	for _, shape := range shapes {
		t.Run(shape, func(t *testing.T) {
			m, h := perfMonitor(t, shape, false)
			perLL, portsLL, _ := perfPlanShape(t, m)
			want := 0
			for ll, n := range portsLL {
				want += n * perLL[ll]
			}
			if n := m.obs.Stats().Files; n != want {
				t.Errorf("plan has %d files, want monitored ports x files per port = %d (%v ports, %v files/port)",
					n, want, portsLL, perLL)
			}
			// Cross-check the monitored set against the simulator's own
			// description of the node: only PFs in compute or storage
			// roles are read.
			wantPorts := 0
			for _, d := range h.Devices() {
				if !d.IsVF && (d.ExpectedRole == topology.RoleCompute || d.ExpectedRole == topology.RoleStorage) {
					wantPorts += d.Ports
				}
			}
			if n := m.obs.Stats().Ports; n != wantPorts {
				t.Errorf("plan monitors %d ports, the %s node has %d compute/storage PF ports", n, shape, wantPorts)
			}
			for _, d := range h.Devices() {
				if d.IsVF || d.ExpectedRole == topology.RoleManagement {
					for _, f := range m.obs.PlanFiles() {
						if strings.Contains(f, "/infiniband/"+d.Name+"/") {
							t.Errorf("%s (%s, VF=%v) is read every cycle: %s", d.Name, d.ExpectedRole, d.IsVF, f)
						}
					}
				}
			}
			t.Logf("%s: %d monitored ports, files/port %v, %d files per cycle", shape, m.obs.Stats().Ports, perLL, m.obs.Stats().Files)
		})
	}
}

// TestPerf_PlanIndependentOfVFs removes every VF of a node and rediscovers:
// the read plan must not change by a single file.
func TestPerf_PlanIndependentOfVFs(t *testing.T) {
	m, h := perfMonitor(t, "dgx-h100", false)
	_, _, before := perfPlanShape(t, m)
	vfs := 0
	for _, d := range h.Devices() {
		if d.IsVF {
			if err := h.RemoveDevice(d.Name); err != nil {
				t.Fatalf("remove VF %s: %v", d.Name, err)
			}
			vfs++
		}
	}
	if vfs == 0 {
		t.Fatal("dgx-h100 has no VFs; the test proves nothing")
	}
	if err := m.Discover(); err != nil {
		t.Fatalf("rediscover without VFs: %v", err)
	}
	_, _, after := perfPlanShape(t, m)
	if strings.Join(before, "\n") != strings.Join(after, "\n") {
		t.Errorf("read plan changed when %d VFs were removed: %d files before, %d after", vfs, len(before), len(after))
	}
}

// benchCycleVFs measures the xl node's steady cycle with its 256 VFs and
// with every VF removed: the two must cost the same, since the plan is the
// same; what differs is only what enumeration lists each cycle.
func benchCycleVFs(b *testing.B, removeVFs bool) {
	h, err := sim.Build(b.TempDir(), "xl")
	if err != nil {
		b.Fatal(err)
	}
	vfs := 0
	if removeVFs {
		for _, d := range h.Devices() {
			if d.IsVF {
				if err := h.RemoveDevice(d.Name); err != nil {
					b.Fatalf("remove VF %s: %v", d.Name, err)
				}
				vfs++
			}
		}
	}
	m := perfMonitorOn(b, h, false)
	now := perfWarm(m, time.Unix(1_700_000_000, 0), perfWarmCycles)
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Second)
		m.Cycle(now)
	}
	perfReport(b, m)
	b.ReportMetric(float64(vfs), "VFs-removed")
}

func BenchmarkCycle_xl_WithVFs(b *testing.B)    { benchCycleVFs(b, false) }
func BenchmarkCycle_xl_VFsRemoved(b *testing.B) { benchCycleVFs(b, true) }

// BenchmarkInventoryScan_dgxH100 times a state poll that carries the
// once-a-minute PCI inventory scan and its judgement (every function on
// the bus: one vendor read each, the Mellanox ones described; the
// judgement of functions and drift). BenchmarkCycle_dgxH100 is the same
// poll without the scan.
func BenchmarkInventoryScan_dgxH100(b *testing.B) {
	h, err := sim.Build(b.TempDir(), "dgx-h100")
	if err != nil {
		b.Fatal(err)
	}
	m := perfMonitorWith(b, h, false, "[linkSanity]\nenabled = false\n")
	now := perfWarm(m, time.Unix(1_700_000_000, 0), perfWarmCycles)
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(observe.InventoryEvery)
		m.Cycle(now)
	}
}
