package runner

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks/counters"
	"github.com/nichealth/nichealthd/config"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
	"github.com/nichealth/nichealthd/topology/sim/simtest"
)

func specsOfKind(specs []event.Spec, k event.Kind) []event.Spec {
	var out []event.Spec
	for _, s := range specs {
		if s.Kind == k {
			out = append(out, s)
		}
	}
	return out
}

// A counter file of a restricted function (EACCES) is reported once as
// parked on its port, is not reported again when a reload rebuilds the
// plan, and clears when it reads again at a re-probe.
func TestParking_MonitorReportsOnceAndClears(t *testing.T) {
	h := simtest.Build(t, "minimal")
	m := simMonitorWith(t, h, "parkReprobeInterval = \"20ms\"\n", simSeams(h))
	const rel = "counters/symbol_error"
	path, _ := h.PortPath("mlx5_0", 1, rel)
	now := time.Unix(1_700_000_000, 0)
	m.Cycle(now)
	now = now.Add(time.Second)
	key := counters.Key("mlx5_0", 1, "symbol_error")
	snap, ok := m.set.counters.Memory().CounterSnapshots[key]
	if !ok {
		t.Fatalf("no symbol_error snapshot after the first tick")
	}
	if err := h.FailFile("mlx5_0", 1, rel, "EACCES"); err != nil {
		t.Fatal(err)
	}
	var parked []event.Spec
	for i := 0; i < 6; i++ {
		ss, _ := m.Cycle(now)
		parked = append(parked, specsOfKind(ss, event.KindReadParked)...)
		now = now.Add(time.Second)
	}
	if len(parked) != 1 {
		t.Fatalf("%d read-parked events, want 1: %+v", len(parked), parked)
	}
	p := parked[0]
	if p.IsFatal || p.IsHealthy || p.Device != "mlx5_0" || p.Port != 1 || p.Metadata["file"] != path || p.Metadata["errno"] != "EACCES" ||
		p.CheckName != event.InfiniBandDegradationCheck {
		t.Fatalf("parked spec %+v", p)
	}
	for _, want := range []string{"mlx5_0", "port 1", path, "EACCES", "restricted", "nicExclusionRegex"} {
		if !strings.Contains(p.Message, want) {
			t.Errorf("message lacks %q: %s", want, p.Message)
		}
	}
	ev := event.New(p, event.Stamp{NodeName: "t"})
	if k, ok := event.KeyOf(&ev); !ok || k.Entity.Kind != condition.File || k.Entity.Name != path || k.Entity.Port != 1 {
		t.Fatalf("entity %+v %v", k, ok)
	}
	// Not judged while parked (fail open), and its memory is kept.
	if got, ok := m.set.counters.Memory().CounterSnapshots[key]; !ok || got != snap {
		t.Fatalf("symbol_error snapshot %+v %v while parked, want %+v kept", got, ok, snap)
	}
	m.Reconfigure(m.cfg, now)
	ss, _ := m.Cycle(now)
	if n := len(specsOfKind(ss, event.KindReadParked)); n != 0 {
		t.Fatalf("a rebuilt plan re-announced the parked file %d times", n)
	}
	if err := h.FailFile("mlx5_0", 1, rel, "off"); err != nil {
		t.Fatal(err)
	}
	var resumed []event.Spec
	for i := 0; i < 2000 && len(resumed) == 0; i++ {
		time.Sleep(2 * time.Millisecond) // the re-probe interval is on the real clock
		now = now.Add(time.Second)
		ss, _ := m.Cycle(now)
		resumed = specsOfKind(ss, event.KindReadResumed)
	}
	if len(resumed) != 1 || !resumed[0].IsHealthy || resumed[0].Metadata["file"] != path || resumed[0].Device != "mlx5_0" || resumed[0].Port != 1 {
		t.Fatalf("resumed %+v", resumed)
	}
}

// parkedPerfMonitor is a warmed dgx-h100 monitor with one counter file
// parked (EACCES, as a restricted function's).
func parkedPerfMonitor(tb testing.TB) (*Runner, time.Time) {
	tb.Helper()
	m, h := perfMonitor(tb, "dgx-h100", false)
	if err := h.FailFile("mlx5_0", 1, "counters/symbol_error", "EACCES"); err != nil {
		tb.Fatal(err)
	}
	now := perfWarm(m, time.Unix(1_700_000_000, 0), perfWarmCycles)
	if n := m.obs.Stats().Parked; n != 1 {
		tb.Fatalf("%d files parked after %d cycles, want 1", n, perfWarmCycles)
	}
	return m, now
}

// A steady poll with a parked file allocates nothing either: the parked
// file is skipped with its kept error and reported only once.
func TestParking_SteadyCycleWithParkedFileAllocatesNothing(t *testing.T) {
	m, now := parkedPerfMonitor(t)
	allocs := testing.AllocsPerRun(50, func() {
		now = now.Add(time.Second)
		m.Cycle(now)
	})
	if allocs != 0 {
		t.Fatalf("a steady dgx-h100 poll with a parked file allocates %.1f objects", allocs)
	}
}

// BenchmarkCycle_dgxH100ParkedFile is BenchmarkCycle_dgxH100 with one
// counter file parked.
func BenchmarkCycle_dgxH100ParkedFile(b *testing.B) {
	m, now := parkedPerfMonitor(b)
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Second)
		m.Cycle(now)
	}
	perfReport(b, m)
}

// A reload that stops reading a parked file (both counters reading it
// disabled) clears
// its condition with the next cycle: nothing would read it to clear it.
func TestParking_FileLeavingThePlanIsCleared(t *testing.T) {
	h := simtest.Build(t, "minimal")
	base := ""
	m := simMonitorWith(t, h, base, simSeams(h))
	const rel = "counters/symbol_error"
	path, _ := h.PortPath("mlx5_0", 1, rel)
	if err := h.FailFile("mlx5_0", 1, rel, "EIO"); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 0)
	parked := 0
	for i := 0; i < 4; i++ {
		ss, _ := m.Cycle(now)
		parked += len(specsOfKind(ss, event.KindReadParked))
		now = now.Add(time.Second)
	}
	if parked != 1 {
		t.Fatalf("%d read-parked events", parked)
	}
	clearedWhenLeavingThePlan(t, m, simConfig(t, h, base+symbolErrorOff), now, path, event.KindReadResumed)
}

// TestStuckRead_FileLeavingThePlanIsCleared: a hung read reported as
// read-stuck whose file then leaves the plan (a reload disabled its
// counters) is cleared with the next cycle, naming the same port and
// file; nothing would read the file again to clear it otherwise.
func TestStuckRead_FileLeavingThePlanIsCleared(t *testing.T) {
	h := simtest.Build(t, "minimal")
	base := "readTimeout = \"50ms\"\n"
	m := simMonitorWith(t, h, base, simSeams(h))
	const rel = "counters/symbol_error"
	path, _ := h.PortPath("mlx5_0", 1, rel)
	if err := h.MakeFIFO("mlx5_0", 1, rel); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Release the reader still blocked opening the FIFO.
		if w, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
	})
	now := time.Unix(1_700_000_000, 0)
	stuck := 0
	for i := 0; i < 3 && stuck == 0; i++ {
		ss, _ := m.Cycle(now)
		stuck += len(specsOfKind(ss, event.KindReadStuck))
		now = now.Add(time.Second)
	}
	if stuck != 1 {
		t.Fatalf("%d read-stuck events", stuck)
	}
	clearedWhenLeavingThePlan(t, m, simConfig(t, h, base+symbolErrorOff), now, path, event.KindReadRecovered)
}

// symbolErrorOff disables both rows that read counters/symbol_error, so
// the file leaves the plan.
const symbolErrorOff = "[[counterDetection.counters]]\nname = \"symbol_error\"\nenabled = false\n" +
	"[[counterDetection.counters]]\nname = \"symbol_error_fatal\"\nenabled = false\n"

// clearedWhenLeavingThePlan reloads m with off, which no longer reads
// path, and wants one clear of kind for mlx5_0 port 1 and path with the
// next cycle.
func clearedWhenLeavingThePlan(t *testing.T, m *Runner, off *config.Config, now time.Time, path string, kind event.Kind) {
	t.Helper()
	m.Reconfigure(off, now)
	ss, _ := m.Cycle(now)
	r := specsOfKind(ss, kind)
	if len(r) != 1 || !r[0].IsHealthy || r[0].Device != "mlx5_0" || r[0].Port != 1 || r[0].Metadata["file"] != path ||
		r[0].CheckName != event.InfiniBandDegradationCheck || !strings.Contains(r[0].Message, "no longer read") {
		t.Fatalf("clear after the counter left the plan: %+v", r)
	}
}
