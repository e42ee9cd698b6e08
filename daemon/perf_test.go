package daemon

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
//	go test -run '^$' -bench 'Cycle|Floor' -benchmem ./daemon/ ./topology/reader/

import (
	"io"
	"log/slog"
	"sort"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/nichealth/nichealthd/checks/event"
	"github.com/nichealth/nichealthd/daemon/config"
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
// discovered monitor on it. keepOpen forces the kept-descriptor reader that
// real sysfs gets; otherwise the reader is the one NewMonitor picks for the
// tree (a regular file system: reopen every cycle). The host's seams stand
// in for the driver statistics (one statistics file per RoCE netdev, as
// the ioctl would be one call), so the cycle includes them.
func perfMonitor(tb testing.TB, shape string, keepOpen bool) (*Monitor, *sim.Host) {
	tb.Helper()
	h, err := sim.Build(tb.TempDir(), shape)
	if err != nil {
		tb.Fatalf("build %s: %v", shape, err)
	}
	return perfMonitorOn(tb, h, keepOpen), h
}

func perfMonitorOn(tb testing.TB, h *sim.Host, keepOpen bool) *Monitor {
	tb.Helper()
	cfg := perfConfig(tb, h)
	seams := simSeams(h)
	m := newMonitor(cfg, NewMemory(), persist.BootFresh,
		slog.New(slog.NewTextHandler(io.Discard, nil)), seams)
	if keepOpen {
		m.rd = reader.New(reader.Options{Timeout: cfg.ReadTimeout, MaxStuck: cfg.MaxStuckReads, KeepOpen: true, Faults: seams.ReadFaults})
	}
	if err := m.Discover(); err != nil {
		tb.Fatalf("discover %s: %v", h.Root, err)
	}
	tb.Cleanup(m.Close)
	return m
}

// perfWarm runs the warm-up cycles and returns the clock to continue from.
func perfWarm(m *Monitor, now time.Time, n int) time.Time {
	for i := 0; i < n; i++ {
		now = now.Add(time.Second)
		m.Cycle(now)
	}
	return now
}

// perfReport adds the per-file and per-port cost of one op that covers
// every file of the plan once.
func perfReport(b *testing.B, m *Monitor) {
	b.Helper()
	if b.N == 0 || len(m.files) == 0 || len(m.ports) == 0 {
		return
	}
	ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(ns/float64(len(m.files)), "ns/file")
	b.ReportMetric(ns/float64(len(m.ports)), "ns/port")
	b.ReportMetric(float64(len(m.files)), "files/cycle")
	b.ReportMetric(float64(len(m.ports)), "ports")
}

// benchCycle times the steady poll: every planned file read and judged,
// velocity windows rolling (one second per cycle, as in production). The
// link sanity pass, which runs once a minute rather than every poll (see
// sanityEvery), is held off here and timed on its own by
// BenchmarkCycleSanityPass: left in, it would land in some runs and not
// others depending on how many iterations fit in a minute of simulated time.
func benchCycle(b *testing.B, shape string, keepOpen bool) {
	m, _ := perfMonitor(b, shape, keepOpen)
	now := perfWarm(m, time.Unix(1_700_000_000, 0), perfWarmCycles)
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Second)
		m.lastSanity = now
		m.inventory().next = now.Add(inventoryInterval) // timed on its own (BenchmarkInventoryScan)
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
	var stuck []*reader.File
	b.ReportAllocs()
	for b.Loop() {
		stuck = m.rd.Read(m.files, stuck[:0])
	}
	perfReport(b, m)
}

// benchSanityPass times the once-a-minute link sanity pass (PCIe link
// state, SM LIDs, rate against peers, /dev/infiniband nodes) that rides on
// one poll in sixty at the default 1 s interval.
func benchSanityPass(b *testing.B, shape string) {
	m, _ := perfMonitor(b, shape, false)
	now := perfWarm(m, time.Unix(1_700_000_000, 0), perfWarmCycles)
	var specs []event.Spec
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(sanityEvery)
		changed := false
		specs = specs[:0]
		m.runSanity(now, &specs, &changed)
	}
	if b.N > 0 {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(m.ports)), "ns/port")
	}
}

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
func perfCPaths(m *Monitor) [][]byte {
	out := make([][]byte, 0, len(m.files))
	for _, f := range m.files {
		if !f.IsSource() {
			out = append(out, append([]byte(f.Path), 0))
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
	fds := make([]int, 0, len(m.files))
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
			m.lastSanity = now
			m.Cycle(now)
		})
		if allocs != 0 {
			t.Errorf("keepOpen=%v: a steady dgx-h100 poll allocates %.1f objects; profile with go test -run '^$' -bench 'Cycle_dgxH100$' -memprofile mem.out ./daemon/",
				keepOpen, allocs)
		}
	}
}

// perfPortOf maps a planned file to the monitored port it belongs to: a
// file under the port's sysfs directory or under the class/net entry of
// the port's netdev.
func perfPortOf(m *Monitor, path string) (*portPlan, bool) {
	for _, p := range m.ports {
		if strings.HasPrefix(path, p.port.Dir+"/") {
			return p, true
		}
		if p.netdev != "" && strings.HasPrefix(path, m.cfg.Paths.ClassNet+"/"+p.netdev+"/") {
			return p, true
		}
		if p.netdev != "" && path == "ethtool:"+p.netdev { // the port's driver statistics (phy.go)
			return p, true
		}
	}
	return nil, false
}

// perfPlanShape summarises a read plan: files per port for each link layer
// (it must be one number per link layer), and the plan's paths.
func perfPlanShape(t *testing.T, m *Monitor) (perLL map[string]int, portsLL map[string]int, paths []string) {
	t.Helper()
	perPort := map[*portPlan]int{}
	for _, f := range m.files {
		p, ok := perfPortOf(m, f.Path)
		if !ok {
			t.Fatalf("planned file %s belongs to no monitored port", f.Path)
		}
		perPort[p]++
		paths = append(paths, f.Path)
	}
	perLL, portsLL = map[string]int{}, map[string]int{}
	for _, p := range m.ports {
		ll := p.port.LinkLayer
		n := perPort[p]
		if prev, ok := perLL[ll]; ok && prev != n {
			t.Errorf("%s port %d reads %d files, other %s ports read %d: the per-port cost must be one constant per link layer",
				p.dev.Name, p.port.Num, n, ll, prev)
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
			if len(m.files) != want {
				t.Errorf("plan has %d files, want monitored ports x files per port = %d (%v ports, %v files/port)",
					len(m.files), want, portsLL, perLL)
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
			if len(m.ports) != wantPorts {
				t.Errorf("plan monitors %d ports, the %s node has %d compute/storage PF ports", len(m.ports), shape, wantPorts)
			}
			for _, d := range h.Devices() {
				if d.IsVF || d.ExpectedRole == topology.RoleManagement {
					for _, f := range m.files {
						if strings.Contains(f.Path, "/infiniband/"+d.Name+"/") {
							t.Errorf("%s (%s, VF=%v) is read every cycle: %s", d.Name, d.ExpectedRole, d.IsVF, f.Path)
						}
					}
				}
			}
			t.Logf("%s: %d monitored ports, files/port %v, %d files per cycle", shape, len(m.ports), perLL, len(m.files))
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
		m.lastSanity = now
		m.Cycle(now)
	}
	perfReport(b, m)
	b.ReportMetric(float64(vfs), "VFs-removed")
}

func BenchmarkCycle_xl_WithVFs(b *testing.B)    { benchCycleVFs(b, false) }
func BenchmarkCycle_xl_VFsRemoved(b *testing.B) { benchCycleVFs(b, true) }

// BenchmarkInventoryScan_dgxH100 times the once-a-minute PCI inventory
// scan and its judgement (every function on the bus: one vendor read each,
// the Mellanox ones described; the judgement of functions and drift).
func BenchmarkInventoryScan_dgxH100(b *testing.B) {
	m, _ := perfMonitor(b, "dgx-h100", false)
	now := perfWarm(m, time.Unix(1_700_000_000, 0), perfWarmCycles)
	var specs []event.Spec
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(inventoryInterval)
		changed := false
		specs = specs[:0]
		m.inventoryCycle(now, &specs, &changed)
	}
}
