package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology/sim"
)

// A RoCE port planned while its netdev was absent (moved to another
// network namespace, or not yet created) is monitored again once the
// netdev is back, without a reload: discovery looks again every minute
// while a planned port lacks its netdev. No event announces the return,
// so without the re-probe the port's operstate would go unread until an
// operator reloaded.
func TestRealHost_AbsentNetdevLookedUpAgainEveryMinute(t *testing.T) {
	h, err := sim.Build(t.TempDir(), "dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	const dev, netdev = "mlx5_8", "enp65s0f0np0"
	entry := filepath.Join(h.SysRoot(), "class", "net", netdev)
	target, err := os.Readlink(entry)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(entry); err != nil {
		t.Fatal(err)
	}
	m := simMonitor(t, h, "pollingInterval = \"1s\"\n")
	t0 := time.Unix(1_700_000_000, 0)
	m.Cycle(t0)

	if err := os.Symlink(target, entry); err != nil {
		t.Fatal(err)
	}
	if err := h.SetOperstate(netdev, "down"); err != nil {
		t.Fatal(err)
	}
	operDown := func(specs []event.Spec) bool {
		for _, s := range specs {
			if s.Device == dev && !s.IsHealthy && strings.Contains(s.Message, "operstate down") {
				return true
			}
		}
		return false
	}
	// Within the minute the port is still planned without its netdev:
	// discovery is not re-run on every poll.
	for i := 1; i < 59; i++ {
		if specs, _ := m.Cycle(t0.Add(time.Duration(i) * time.Second)); operDown(specs) {
			t.Fatalf("operstate judged %ds after start, before the 1-minute re-probe", i)
		}
	}
	for i := 59; i <= 63; i++ {
		if specs, _ := m.Cycle(t0.Add(time.Duration(i) * time.Second)); operDown(specs) {
			return
		}
	}
	t.Fatalf("%s's netdev %s came back but its operstate (down) was not judged within the minute's re-probe", dev, netdev)
}
