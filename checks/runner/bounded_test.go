package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/persist"
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
			// A port stuck in INIT past the hold: card homogeneity's to
			// report (a DOWN port is its own fatal condition, DESIGN.md
			// difference 4).
			if err := h.SetPortState("mlx5_3", 1, "INIT", "LinkUp"); err != nil {
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

// Issue 22 row 7: one dangling or looping entry in class/infiniband was
// taken as a new device at every poll: a full rediscovery and a WARN line
// each time (390 lines in 30 s at 1 s polling). It is warned about once,
// rediscovered when the entry is replaced and once a minute in case its
// target appeared, and the rest of the node is polled as before.
func TestBounded_7_BrokenClassEntryNotNewAtEveryPoll(t *testing.T) {
	h, err := sim.Build(t.TempDir(), "dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	class := filepath.Join(h.SysRoot(), "class", "infiniband")
	if err := os.Symlink("../../devices/pci0000:ff/gone/infiniband/mlx5_98", filepath.Join(class, "mlx5_98")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("mlx5_99", filepath.Join(class, "mlx5_99")); err != nil {
		t.Fatal(err)
	}
	m, lb := aerMonitor(t, h, nil, persist.BootFresh)
	warns := func() int { return strings.Count(lb.String(), "level=WARN msg=\"cannot read device attribute") }
	if w := warns(); w != 2 {
		t.Fatalf("%d warnings at discovery, want one per broken entry:\n%s", w, lb.String())
	}
	now := time.Unix(1_700_000_000, 0)
	for i := 0; i < 30; i++ {
		now = now.Add(time.Second / 2)
		m.Cycle(now)
	}
	if w := warns(); w != 2 {
		t.Fatalf("%d warnings after 30 polls:\n%s", w, lb.String())
	}
	discovered := m.obs.Stats().LastDiscover
	// Replaced (a fixed link is a new inode): rediscovered at once.
	os.Remove(filepath.Join(class, "mlx5_98"))
	if err := os.Symlink("../../devices/pci0000:ff/still-gone/infiniband/mlx5_98", filepath.Join(class, "mlx5_98")); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second / 2)
	m.Cycle(now)
	if !m.obs.Stats().LastDiscover.After(discovered) {
		t.Fatal("a replaced entry was not rediscovered")
	}
	// A minute on: looked at again, quietly.
	discovered = m.obs.Stats().LastDiscover
	now = now.Add(61 * time.Second)
	m.Cycle(now)
	if !m.obs.Stats().LastDiscover.After(discovered) {
		t.Fatal("the broken entries were never looked at again")
	}
	if w := warns(); w != 2 {
		t.Fatalf("%d warnings, want the first two only (the problems did not change):\n%s", w, lb.String())
	}
}
