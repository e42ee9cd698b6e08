package daemon

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks/event"
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
	m := NewMonitor(perfConfig(t, h), NewMemory(), persist.BootFresh, slog.New(slog.NewTextHandler(lb, nil)))
	t.Cleanup(m.Close)
	if err := m.Discover(); err != nil {
		t.Fatal(err)
	}
	eth := map[string]bool{}
	for _, p := range m.ports {
		if p.port.LinkLayer != topology.LinkLayerEthernet {
			continue
		}
		eth[p.netdev] = true
		for _, cr := range p.counters {
			if cr.phy != nil {
				t.Fatalf("%s port %d plans driver statistics of the absent netdev %s", p.dev.Name, p.port.Num, p.netdev)
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
		m.buildPlan() // a reload or rediscovery finds them absent again
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
