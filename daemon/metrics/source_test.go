package metrics

import (
	"fmt"
	"sync"
	"testing"

	"github.com/nichealth/nichealthd/checks/counters"
	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/persist/outbox"
	"github.com/nichealth/nichealthd/topology/sim"
)

// fakeSource is a Source with fixed views. block, when set, makes Manager
// wait on it (a poll cycle holding the daemon's lock); panicMsg makes
// Ports panic.
type fakeSource struct {
	mu       sync.Mutex
	mgr      dbusapi.ManagerView
	ports    []dbusapi.PortView
	ob       outbox.Stats
	sinks    []SinkStats
	stalled  bool
	block    chan struct{}
	entered  chan struct{} // receives once per Manager call when block is set
	calls    int
	panicMsg string
}

func (f *fakeSource) Manager() dbusapi.ManagerView {
	f.mu.Lock()
	f.calls++
	block, entered := f.block, f.entered
	f.mu.Unlock()
	if block != nil {
		if entered != nil {
			entered <- struct{}{}
		}
		<-block
	}
	return f.mgr
}

func (f *fakeSource) Ports() []dbusapi.PortView {
	if f.panicMsg != "" {
		panic(f.panicMsg)
	}
	return f.ports
}
func (f *fakeSource) Outbox() outbox.Stats { return f.ob }
func (f *fakeSource) Sinks() []SinkStats   { return f.sinks }
func (f *fakeSource) Stalled() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stalled
}

func (f *fakeSource) setStalled(v bool) {
	f.mu.Lock()
	f.stalled = v
	f.mu.Unlock()
}

// counterViews builds one port's counter list from the default counter
// table, so names, threshold types and units are the daemon's own.
func counterViews(linkLayer string, seed uint64) []dbusapi.CounterView {
	var out []dbusapi.CounterView
	for i, d := range counters.Defaults() {
		if linkLayer == "InfiniBand" && (d.Name == "roce_slow_restart" || d.Name == "carrier_changes") {
			continue
		}
		unit := "/sec"
		switch d.VelocityUnit {
		case counters.UnitMinute:
			unit = "/min"
		case counters.UnitHour:
			unit = "/hour"
		}
		cv := dbusapi.CounterView{
			Name: d.Name, Value: seed*100 + uint64(i), Unit: unit, ThresholdType: d.ThresholdType,
			Threshold: d.Threshold, Fatal: d.IsFatal,
		}
		if d.ThresholdType == counters.TypeVelocity {
			cv.Rate = float64(i) / 4
		}
		if d.Name == "port_xmit_wait" {
			cv.LostGbps, cv.LostPercent = 12.5, 3.125
		}
		out = append(out, cv)
	}
	return out
}

// simSource builds the views of a simulator host shape: one healthy
// ACTIVE/LinkUp port per PF port, with every default counter that applies
// to its link layer (all 14 for RoCE, as on the DGX H100's Ethernet NICs;
// IB ports lack the two Ethernet-only ones).
func simSource(tb testing.TB, shape string, allCounters bool) *fakeSource {
	tb.Helper()
	h, err := sim.Build(tb.TempDir(), shape)
	if err != nil {
		tb.Fatalf("sim.Build %s: %v", shape, err)
	}
	src := &fakeSource{
		mgr: dbusapi.ManagerView{
			Version: "1.2.3", NodeName: "node-a", PollIntervalUSec: 1_000_000, LastPollUSec: 1_700_000_000_000_000,
			Healthy: true, FatalPorts: []string{}, ConfigGeneration: 1, Ready: true,
		},
		ob: outbox.Stats{LastSeq: 42, Records: 7, Bytes: 4096, Segments: 1,
			Sinks: map[string]outbox.SinkStats{"journal": {Cursor: 42}, "connector": {Cursor: 35, Depth: 7}}},
		sinks: []SinkStats{{Name: "journal", Sent: 42}, {Name: "connector", Sent: 35, Failed: 3}},
	}
	nics := map[string]bool{}
	for _, d := range h.Devices() {
		if d.IsVF {
			continue
		}
		nics[d.Name] = true
		for p := 1; p <= d.Ports; p++ {
			ll := d.LinkLayer
			if allCounters {
				ll = "Ethernet"
			}
			src.ports = append(src.ports, dbusapi.PortView{
				Device: d.Name, Port: int32(p), LinkLayer: d.LinkLayer, Role: string(d.ExpectedRole),
				RoleReason: d.RoleReason, NetDev: d.NetDev, PCIAddress: d.PCIAddress, NUMANode: int32(d.NUMANode),
				Rate: "400 Gb/sec (4X NDR)", State: "ACTIVE", PhysState: "LinkUp", Healthy: true,
				Counters: counterViews(ll, uint64(len(src.ports))), Sanity: []string{},
			})
		}
	}
	src.mgr.MonitoredPorts = uint32(len(src.ports))
	src.mgr.MonitoredNICs = uint32(len(nics))
	return src
}

func portName(p dbusapi.PortView) string { return fmt.Sprintf("%s/%d", p.Device, p.Port) }
