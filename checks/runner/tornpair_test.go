package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology/sim"
)

// portEvents keeps the port state events of one port.
func portEvents(specs []event.Spec, dev string, port int) []event.Spec {
	var out []event.Spec
	for _, s := range specs {
		if s.Device == dev && s.Port == port && (s.Kind == event.KindPortFatal || s.Kind == event.KindPortNonFatal || s.Kind == event.KindPortRecovered) {
			out = append(out, s)
		}
	}
	return out
}

// TestMonitor_TornPairHeldOnePoll: the poll loop skips a port whose files
// did not change, so a torn state/phys_state pair that persists must still
// be judged on the next poll, and a settled pair after a torn one must be
// reported with the settled message.
func TestMonitor_TornPairHeldOnePoll(t *testing.T) {
	h, err := sim.Build(t.TempDir(), "dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	m := perfMonitorOn(t, h, false)
	now := perfWarm(m, time.Date(2025, 6, 15, 10, 0, 0, 0, time.UTC), 3)
	cycle := func() []event.Spec {
		now = now.Add(time.Second)
		specs, _ := m.Cycle(now)
		return portEvents(specs, "mlx5_0", 1)
	}
	// The poll lands between the two writes of "DOWN Disabled".
	if err := h.SetPortState("mlx5_0", 1, "DOWN", ""); err != nil {
		t.Fatal(err)
	}
	if got := cycle(); len(got) != 0 {
		t.Fatalf("torn pair judged at once: %+v", got)
	}
	if err := h.SetPortState("mlx5_0", 1, "", "Disabled"); err != nil {
		t.Fatal(err)
	}
	got := cycle()
	if len(got) != 1 || !got[0].IsFatal || !strings.HasSuffix(got[0].Message, "state DOWN, phys_state Disabled") {
		t.Fatalf("settled pair: %+v", got)
	}
	// Recovery written the other way round, then a torn pair that stays.
	if err := h.SetPortState("mlx5_0", 1, "ACTIVE", "LinkUp"); err != nil {
		t.Fatal(err)
	}
	if got := cycle(); len(got) != 1 || got[0].Kind != event.KindPortRecovered {
		t.Fatalf("recovery: %+v", got)
	}
	if err := h.SetPortState("mlx5_0", 1, "DOWN", ""); err != nil {
		t.Fatal(err)
	}
	if got := cycle(); len(got) != 0 {
		t.Fatalf("first sight of the torn pair: %+v", got)
	}
	got = cycle()
	if len(got) != 1 || !got[0].IsFatal || !strings.HasSuffix(got[0].Message, "state DOWN, phys_state LinkUp") {
		t.Fatalf("torn pair seen twice: %+v", got)
	}
	if got := cycle(); len(got) != 0 {
		t.Fatalf("reported twice: %+v", got)
	}
}
