package runner

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/persist"
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
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	for i := 0; i <= 5; i++ {
		m.Cycle(at(i)) // the first readings' events
	}
	// While the netdev stays absent the re-probes, one a minute, are
	// quiet: no event, no repeated warning.
	for i := 6; i <= 125; i++ {
		if specs, _ := m.Cycle(at(i)); len(specs) > 0 {
			t.Fatalf("%d events at +%ds while the netdev stays absent: %+v", len(specs), i, specs)
		}
	}
	if last := m.obs.Stats().LastDiscover; !last.Equal(at(120)) {
		t.Fatalf("last discovery at +%v, want the second re-probe at +120s", last.Sub(t0))
	}

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
	// Until the next re-probe the port is still planned without its
	// netdev: discovery is not re-run on every poll.
	for i := 126; i < 180; i++ {
		if specs, _ := m.Cycle(at(i)); operDown(specs) {
			t.Fatalf("operstate judged at +%ds, before the re-probe at +180s", i)
		}
	}
	for i := 180; i <= 183; i++ {
		if specs, _ := m.Cycle(at(i)); operDown(specs) {
			return
		}
	}
	t.Fatalf("%s's netdev %s came back but its operstate (down) was not judged at the re-probe a minute later", dev, netdev)
}

// BenchmarkRediscover_dgxH100 is the cost of one rediscovery (discovery,
// classification, the read plan rebuilt): what a re-probe costs once a
// minute while a RoCE port's netdev is absent.
func BenchmarkRediscover_dgxH100(b *testing.B) {
	h, err := sim.Build(b.TempDir(), "dgx-h100")
	if err != nil {
		b.Fatal(err)
	}
	m := simMonitor(b, h, "")
	m.Cycle(time.Unix(1_700_000_000, 0))
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Discover(); err != nil {
			b.Fatal(err)
		}
	}
}

// A rediscovery that keeps failing (here the GPU metadata the roles come
// from is gone) while the once-a-minute re-probe keeps asking is said
// once, not at every re-probe; the previous device list stays.
func TestRealHost_FailingRediscoveryIsSaidOnce(t *testing.T) {
	h, err := sim.Build(t.TempDir(), "dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(h.SysRoot(), "class", "net", "enp65s0f0np0")); err != nil {
		t.Fatal(err)
	}
	var logs logBuf
	cfg := simConfig(t, h, "topologySource = \"metadata\"\npollingInterval = \"1s\"\n")
	m := startRunner(t, cfg, nil, persist.BootFresh, slog.New(slog.NewTextHandler(&logs, nil)), Seams{})
	t0 := time.Unix(1_700_000_000, 0)
	m.Cycle(t0)
	if err := os.Remove(h.MetadataPath()); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 185; i++ {
		m.Cycle(t0.Add(time.Duration(i) * time.Second))
	}
	if last := m.obs.Stats().LastDiscover; !last.Equal(t0.Add(180 * time.Second)) {
		t.Fatalf("last discovery at +%v, want the third re-probe at +180s", last.Sub(t0))
	}
	if k := strings.Count(logs.String(), "rediscovery failed"); k != 1 {
		t.Fatalf("a failing rediscovery said %d times over three re-probes, want once:\n%s", k, logs.String())
	}
	if got := m.obs.Stats().Ports; got == 0 {
		t.Fatal("the previous device list was not kept")
	}
}
