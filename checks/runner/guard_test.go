package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology/ethtool"
	"github.com/nichealth/nichealthd/topology/sim/simtest"
)

// panicSource is a driver-statistics source whose Read panics on the
// reader's worker goroutine.
type panicSource struct{}

func (panicSource) Read() error              { panic("driver wrapper bug") }
func (panicSource) Value(int) (uint64, bool) { return 0, false }
func (panicSource) Has(int) bool             { return true }
func (panicSource) Close()                   {}

// A driver call that panics on the reader's worker (where nothing could
// recover it before) fails the counter check of its port's link layer
// alone, once; the plan is rebuilt without its reads, and port state is
// still judged.
func TestGuard_DriverCallPanicOnTheWorker(t *testing.T) {
	h := simtest.Build(t, "dgx-h100")
	m := simMonitorWith(t, h, "", Seams{OpenStats: func(string, []string) (ethtool.Source, error) { return panicSource{}, nil }})
	now := time.Unix(1_700_000_000, 0)
	var failed []event.Spec
	for i := 0; i < 5; i++ {
		specs, _ := m.Cycle(now)
		failed = append(failed, specsOfKind(specs, event.KindCheckFailed)...)
		now = now.Add(time.Second)
	}
	if len(failed) != 1 || failed[0].Check != event.EthernetDegradationCheck || !strings.Contains(failed[0].Message, "driver wrapper bug") ||
		!strings.Contains(failed[0].Message, "ethtool:") {
		t.Fatalf("check-failed specs %+v", failed)
	}
	for _, f := range m.obs.PlanFiles() {
		if strings.HasPrefix(f, "ethtool:") {
			t.Fatalf("the disabled check's driver call %s is still planned", f)
		}
	}
	if err := h.SetPortState("mlx5_8", 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	specs, _ := m.Cycle(now)
	if pe := portEvents(specs, "mlx5_8", 1); len(pe) != 1 || pe[0].Kind != event.KindPortFatal {
		t.Fatalf("the RoCE port's state after its counter check failed: %+v", pe)
	}
}
