package runner

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/sim"
)

// memGrowthLimit is how much the live heap may grow between cycle 100 and
// the last cycle. A daemon that polls every second for a year runs 31
// million cycles: any per-cycle leak, however small, ends in the OOM
// killer, so the bound is far below one allocation per cycle kept.
const memGrowthLimit = 1 << 20

// memBudget bounds the wall time one shape may use, so the test stays fast
// under -race on a loaded CI machine; it limits how much work is done and
// is never asserted on.
const memBudget = 4 * time.Second

// memScaleShape is xxl, or xl under the race detector, which makes
// building xxl's 5,000-device tree take longer than the whole test may.
// The per-cycle state the test is about is the same code on both.
func memScaleShape() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" && s.Value == "true" {
				return "xl"
			}
		}
	}
	return "xxl"
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC() // the second pass frees what finalizers released in the first
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// memFaultPort picks a monitored compute port to flap, so the run also
// crosses health boundaries and emits events rather than only idling.
func memFaultPort(t *testing.T, h *sim.Host) (string, int) {
	t.Helper()
	for _, d := range h.Devices() {
		if !d.IsVF && d.ExpectedRole == topology.RoleCompute && d.Ports > 0 {
			return d.Name, 1
		}
	}
	t.Fatalf("%s has no compute port", h.Shape())
	return "", 0
}

// TestMemory_SteadyHeapBounded runs thousands of poll cycles, with a port
// flapping and a counter moving now and then, and checks that the live heap
// after cycle 100 stays flat: per-cycle state (velocity windows, latches,
// last-change times, the stuck-read bookkeeping) is bounded by the number of
// ports, never by the number of cycles.
func TestMemory_SteadyHeapBounded(t *testing.T) {
	cases := []struct {
		shape  string
		cycles int
		// settle is the cycle the reference heap is taken at: by then
		// every map has met every port and every window is full.
		settle int
	}{
		{"dgx-h100", 3000, 100},
		// 3,840 files per cycle: fewer cycles, same per-cycle state.
		{memScaleShape(), 300, 20},
	}
	for _, c := range cases {
		t.Run(c.shape, func(t *testing.T) {
			cycles, settle := c.cycles, c.settle
			if testing.Short() {
				if c.shape != "dgx-h100" {
					t.Skip("the scale shapes take seconds to build; -short runs dgx-h100 only")
				}
				cycles /= 10
			}
			m, h := perfMonitor(t, c.shape, false)
			dev, port := memFaultPort(t, h)
			now := time.Unix(1_700_000_000, 0)
			var base uint64
			start := time.Now()
			ran, events := 0, 0
			down := false
			for i := 0; i < cycles; i++ {
				if i == settle {
					base = liveHeap()
					start = time.Now()
				}
				if i > settle && time.Since(start) > memBudget {
					break
				}
				if i%50 == 25 {
					// A flap and a counter step: events, latches and
					// velocity windows all get exercised.
					state, phys := "DOWN", "Disabled"
					if down {
						state, phys = "ACTIVE", "LinkUp"
					}
					if err := h.SetPortState(dev, port, state, phys); err != nil {
						t.Fatal(err)
					}
					down = !down
					if err := h.AddCounter(dev, port, "counters/symbol_error", 3); err != nil {
						t.Fatal(err)
					}
				}
				now = now.Add(time.Second)
				specs, _ := m.Cycle(now)
				if i >= settle {
					events += len(specs)
				}
				ran++
			}
			end := liveHeap()
			growth := int64(end) - int64(base)
			t.Logf("%s: %d cycles (%d after the first %d, with %d events); live heap %d KiB at cycle %d, %d KiB at the end (%+d KiB)",
				c.shape, ran, ran-settle, settle, events, base>>10, settle, end>>10, growth>>10)
			if ran-settle < settle/2 {
				t.Skipf("only %d cycles ran after cycle %d within %v: too few to judge growth on this machine", ran-settle, settle, memBudget)
			}
			if events == 0 {
				t.Errorf("no event in cycles %d..%d: the port flaps on %s port %d were not seen", settle, ran, dev, port)
			}
			if growth > memGrowthLimit {
				t.Errorf("live heap grew by %d KiB between cycle %d and cycle %d (limit %d KiB): something is kept per cycle",
					growth>>10, settle, ran, memGrowthLimit>>10)
			}
		})
	}
}
