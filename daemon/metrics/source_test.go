package metrics

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/config/countertable"

	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/event/condition"
	"github.com/nichealth/nichealthd/topology/sim"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

// fakeSource is a Source built from fixed D-Bus-shaped views (test input
// only: the endpoint itself reads the health snapshot). block, when set,
// makes Snapshot wait on it (a slow source); panicMsg makes it panic.
type fakeSource struct {
	mu       sync.Mutex
	mgr      dbusapi.ManagerView
	ports    []dbusapi.PortView
	ob       OutboxStats
	sinks    []SinkStats
	stalled  bool
	undeliv  string
	block    chan struct{}
	entered  chan struct{} // receives once per Manager call when block is set
	calls    int
	panicMsg string
	// episodes are the link-down episode totals by "<device>/<port>".
	episodes map[string]uint64
	// peers are the far ends by "<device>/<port>".
	peers map[string]*health.Peer
	// farEndInterval is the node's [farEnd] interval (0: the far end off).
	farEndInterval time.Duration
}

// Snapshot turns the fixed views into the verdict the daemon would
// publish: a Fatal view is a fatal condition on its port, an unhealthy one
// a non-fatal condition, every sanity line a finding.
func (f *fakeSource) Snapshot() *health.Snapshot {
	mgr := f.manager()
	ports := f.Ports()
	node := health.Node{Version: mgr.Version, NodeName: mgr.NodeName, BootID: mgr.BootID,
		PollInterval: time.Duration(mgr.PollIntervalUSec) * time.Microsecond, ConfigPath: mgr.ConfigPath,
		ConfigGeneration: mgr.ConfigGeneration, LastReloadError: mgr.LastReloadError, Ready: mgr.Ready,
		FarEndInterval: f.farEndInterval}
	var infos []health.PortInfo
	var conds []health.Condition
	for _, pv := range ports {
		pi := health.PortInfo{Device: pv.Device, Port: int(pv.Port), LinkLayer: pv.LinkLayer, Role: pv.Role,
			RoleReason: pv.RoleReason, NetDev: pv.NetDev, PCIAddress: pv.PCIAddress, NUMANode: int(pv.NUMANode),
			Rate: pv.Rate, State: pv.State, PhysState: pv.PhysState, NodeGUID: pv.NodeGUID, PortGUID: pv.PortGUID}
		// The daemon's snapshot carries the reading typed; the fixed views
		// give it as the names sysfs prints.
		if st, err := sysfs.ParseState([]byte(pv.State)); err == nil {
			pi.Link.State = st
		}
		if ph, err := sysfs.ParsePhysState([]byte(pv.PhysState)); err == nil {
			pi.Link.Phys = ph
		}
		if r, err := sysfs.ParseRate([]byte(pv.Rate)); err == nil {
			pi.RateGbps = r.Gbps
		}
		if pv.LastChangeUSec != 0 {
			pi.LastChange = time.UnixMicro(int64(pv.LastChangeUSec))
		}
		for _, c := range pv.Counters {
			pi.Counters = append(pi.Counters, health.Counter{Name: c.Name, Value: c.Value, Rate: c.Rate, Unit: c.Unit,
				ThresholdType: c.ThresholdType, Threshold: c.Threshold, Fatal: c.Fatal, Breached: c.Breached,
				Saturated: c.Saturated, LostGbps: c.LostGbps, LostPercent: c.LostPercent})
		}
		pi.LinkDownEpisodes = f.episodes[fmt.Sprintf("%s/%d", pv.Device, pv.Port)]
		pi.Cable = health.Cable{Direction: pv.CableDirection, Suspect: pv.CableSuspect}
		f.mu.Lock()
		pi.Peer = f.peers[fmt.Sprintf("%s/%d", pv.Device, pv.Port)]
		f.mu.Unlock()
		infos = append(infos, pi)
		port := condition.Entity{Kind: condition.Port, Device: pv.Device, Port: int(pv.Port)}
		switch {
		case pv.Fatal:
			conds = append(conds, health.Condition{Check: "InfiniBandStateCheck", Entity: port, Severity: health.Fatal, Message: "fatal"})
		case !pv.Healthy:
			conds = append(conds, health.Condition{Check: "InfiniBandStateCheck", Entity: port, Severity: health.NonFatal, Message: "degraded"})
		}
		for _, msg := range pv.Sanity {
			conds = append(conds, health.Condition{Check: "InfiniBandDegradationCheck", Severity: health.NonFatal, Message: msg,
				Entity: condition.Entity{Kind: condition.Finding, Device: pv.Device, Port: int(pv.Port), Name: msg}})
		}
	}
	return health.Build(node, infos, conds)
}

func (f *fakeSource) LastPoll() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mgr.LastPollUSec == 0 {
		return time.Time{}
	}
	return time.UnixMicro(int64(f.mgr.LastPollUSec))
}

func (f *fakeSource) manager() dbusapi.ManagerView {
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
func (f *fakeSource) Outbox() OutboxStats { return f.ob }
func (f *fakeSource) Sinks() []SinkStats  { return f.sinks }
func (f *fakeSource) Stalled() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stalled
}

func (f *fakeSource) Undeliverable() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.undeliv
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
	for i, d := range countertable.Defaults() {
		if linkLayer == "InfiniBand" && (d.Name == "roce_slow_restart" || d.Name == "carrier_changes") {
			continue
		}
		unit := "/sec"
		switch d.VelocityUnit {
		case countertable.UnitMinute:
			unit = "/min"
		case countertable.UnitHour:
			unit = "/hour"
		}
		cv := dbusapi.CounterView{
			Name: d.Name, Value: seed*100 + uint64(i), Unit: unit, ThresholdType: d.ThresholdType,
			Threshold: d.Threshold, Fatal: d.IsFatal,
		}
		if d.ThresholdType == countertable.TypeVelocity {
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
		ob: OutboxStats{LastSeq: 42, Records: 7, Bytes: 4096, Segments: 1,
			Sinks: map[string]OutboxSink{"journal": {}, "connector": {Depth: 7}}},
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
