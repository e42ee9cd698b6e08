package daemon

import (
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks/event"
	"github.com/nichealth/nichealthd/topology/sim"
)

// Issue 22 row 11: card homogeneity raised a fatal REPLACE_VM card
// anomaly under InfiniBandStateCheck although the checks list switched
// that check off. A switched-off check says nothing, on its ports or its
// cards.
func TestBounded_11_CardEventsFollowTheChecksSwitch(t *testing.T) {
	for _, c := range []struct {
		name   string
		extra  string
		anomly bool
	}{
		{"every check on", "", true},
		{"InfiniBand state check off", "checks = [\"EthernetStateCheck\", \"InfiniBandDegradationCheck\"]\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, err := sim.Build(t.TempDir(), "dgx-h100")
			if err != nil {
				t.Fatal(err)
			}
			m := simMonitor(t, h, c.extra)
			now := time.Unix(1_700_000_000, 0)
			m.Cycle(now)
			if err := h.SetPortState("mlx5_3", 1, "DOWN", "Disabled"); err != nil {
				t.Fatal(err)
			}
			var got []event.Spec
			for i := 1; i <= 3; i++ {
				specs, _ := m.Cycle(now.Add(time.Duration(i) * time.Minute))
				got = append(got, specs...)
			}
			n := 0
			for _, s := range got {
				if s.Kind == event.KindCardAnomaly {
					n++
					if !m.cfg.Checks[s.CheckName] {
						t.Fatalf("card anomaly from the switched-off %s: %+v", s.CheckName, s)
					}
				}
			}
			if (n > 0) != c.anomly {
				t.Fatalf("%d card anomalies, want any: %v", n, c.anomly)
			}
		})
	}
}
