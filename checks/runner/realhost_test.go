package runner

import (
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/persist"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/sim/simtest"
)

// A tree the simulator did not mark, read as a real host reads: the RoCE
// ports' netdevs do not exist in this network namespace, so the ethtool
// ioctl answers ENODEV at plan build. The monitor starts (it used to panic
// closing a nil *Stats held in a non-nil Source), skips those rows, says so
// once per netdev however often the plan is rebuilt, and keeps judging
// port state.
func TestRealHost_AbsentNetdevsStartAndSkipDriverStats(t *testing.T) {
	h := simtest.Build(t, "dgx-h100")
	lb := &logBuf{}
	m := startRunner(t, perfConfig(t, h), nil, persist.BootFresh, slog.New(slog.NewTextHandler(lb, nil)), Seams{})
	eth := map[string]bool{}
	for _, p := range m.obs.Ports() {
		if p.Port.LinkLayer != topology.LinkLayerEthernet {
			continue
		}
		eth[p.NetDev] = true
		for _, s := range p.Samples {
			if strings.HasPrefix(s.Path, "ethtool:") {
				t.Fatalf("%s port %d plans driver statistics of the absent netdev %s", p.Device.Name, p.Port.Num, p.NetDev)
			}
		}
	}
	if len(eth) == 0 {
		t.Fatal("dgx-h100 has no monitored RoCE port")
	}
	now := time.Unix(1_700_000_000, 0)
	for i := 0; i < 3; i++ {
		m.Cycle(now)
		now = now.Add(time.Second)
		m.Reconfigure(m.cfg, now) // a reload or rediscovery finds them absent again
	}
	logs := lb.String()
	for nd := range eth {
		line := "netdev=" + nd + " "
		if n := strings.Count(logs, line); n != 1 {
			t.Errorf("netdev %s named in %d log lines, want 1 (its statistics unavailable, once)", nd, n)
		}
	}
	if !strings.Contains(logs, "no such device") || strings.Contains(logs, "ethtool enp65s0f0np0: ethtool enp65s0f0np0:") {
		t.Errorf("the reason is missing or wrapped twice:\n%s", logs)
	}
	if err := h.SetPortState("mlx5_8", 1, "1: DOWN", "3: Disabled"); err != nil {
		t.Fatal(err)
	}
	specs, _ := m.Cycle(now)
	if fatal := portEvents(specs, "mlx5_8", 1); len(fatal) != 1 || fatal[0].Kind != event.KindPortFatal {
		t.Fatalf("RoCE port DOWN without driver statistics: %+v", fatal)
	}
}

// readCounter is a reader.Faults that injects nothing and counts every
// read attempt per path, failed opens included: the reader asks it after
// each attempt, so it sees what inotify cannot (an open of a file that does
// not exist).
type readCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *readCounter) Refresh() {}

func (c *readCounter) Lookup(path string) (unix.Errno, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[path]++
	return 0, false
}

func (c *readCounter) take(path string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n[path]
	delete(c.n, path)
	return n
}

// Seed 7.1: a counter file the NIC lacks is logged once as skipped at the
// plan build and then really skipped: not opened at every counter tick
// (it was: one failing openat per port and tick, 16 a second on a 16-port
// tree for roce_slow_restart), until a reload or rediscovery builds the
// plan again and looks for it.
func TestCounters_7_1_MissingCounterFileNotReopened(t *testing.T) {
	h := simtest.Build(t, "dgx-h100")
	missing, err := h.PortPath("mlx5_8", 1, "hw_counters/roce_slow_restart")
	if err != nil {
		t.Fatal(err)
	}
	present, _ := h.PortPath("mlx5_8", 1, "counters/symbol_error")
	b, err := os.ReadFile(missing)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(missing); err != nil {
		t.Fatal(err)
	}
	reads := &readCounter{}
	m := simMonitorWith(t, h, "", Seams{ReadFaults: reads})
	now := time.Unix(1_700_000_000, 0)
	const ticks = 10
	for i := 0; i < ticks; i++ {
		m.Cycle(now)
		now = now.Add(time.Second)
	}
	if n := reads.take(missing); n != 0 {
		t.Fatalf("the missing roce_slow_restart was read %d times in %d counter ticks; want 0 after the plan build found it missing", n, ticks)
	}
	if n := reads.take(present); n != ticks {
		t.Fatalf("symbol_error read %d times in %d ticks; the count itself is wrong", n, ticks)
	}
	// A firmware update brings it back: the next plan build finds it.
	if err := os.WriteFile(missing, b, 0o644); err != nil {
		t.Fatal(err)
	}
	m.Reconfigure(m.cfg, now)
	for i := 0; i < ticks; i++ {
		m.Cycle(now)
		now = now.Add(time.Second)
	}
	if n := reads.take(missing); n != ticks {
		t.Fatalf("after the reload roce_slow_restart was read %d times in %d ticks, want every tick", n, ticks)
	}
}
