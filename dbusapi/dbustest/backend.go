package dbustest

import (
	"fmt"
	"slices"
	"sync"

	"github.com/nichealth/nichealthd/dbusapi"
)

// Ack records one successful AcknowledgeReset.
type Ack struct {
	Device  string
	Port    int
	Counter string
	UID     uint32
}

// Backend is an in-memory dbusapi.Backend whose state a test mutates with
// Update. It applies AcknowledgeReset the way the daemon does (clear the
// latch, or report why not) so error mapping can be tested end to end.
type Backend struct {
	mu      sync.Mutex
	mgr     dbusapi.ManagerView
	ports   []dbusapi.PortView
	acks    []Ack
	reloads int
	// reloadErr is returned by the next Reload calls until cleared.
	reloadErr error
}

// NewBackend returns a backend holding a copy of mgr and ports.
func NewBackend(mgr dbusapi.ManagerView, ports []dbusapi.PortView) *Backend {
	return &Backend{mgr: cloneManager(mgr), ports: clonePorts(ports)}
}

// Update changes the state under the lock.
func (b *Backend) Update(f func(m *dbusapi.ManagerView, ports *[]dbusapi.PortView)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f(&b.mgr, &b.ports)
}

// SetReloadError makes Reload fail with err (nil: succeed).
func (b *Backend) SetReloadError(err error) {
	b.mu.Lock()
	b.reloadErr = err
	b.mu.Unlock()
}

// Acks returns the acknowledgements so far.
func (b *Backend) Acks() []Ack {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.acks)
}

// Reloads counts successful reloads.
func (b *Backend) Reloads() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reloads
}

func (b *Backend) Manager() dbusapi.ManagerView {
	b.mu.Lock()
	defer b.mu.Unlock()
	m, _ := withVerdict(cloneManager(b.mgr), clonePorts(b.ports))
	return m
}

func (b *Backend) Ports() []dbusapi.PortView {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ports := withVerdict(cloneManager(b.mgr), clonePorts(b.ports))
	return ports
}

func (b *Backend) Reload() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.reloadErr != nil {
		b.mgr.LastReloadError = b.reloadErr.Error()
		return b.reloadErr
	}
	b.reloads++
	b.mgr.ConfigGeneration++
	b.mgr.LastReloadError = ""
	return nil
}

// RetryRejected reports the manager view's RejectedEvents; nothing is parked here.
func (b *Backend) RetryRejected(uint32) (uint32, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mgr.RejectedEvents, nil
}

func (b *Backend) AcknowledgeReset(device string, port int, counter string, uid uint32) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range b.ports {
		p := &b.ports[i]
		if p.Device != device || int(p.Port) != port {
			continue
		}
		cleared := 0
		found := counter == ""
		for j := range p.Counters {
			c := &p.Counters[j]
			if counter != "" && c.Name != counter {
				continue
			}
			found = true
			if c.Breached {
				c.Breached, c.BreachedSinceUSec = false, 0
				cleared++
			}
		}
		switch {
		case !found:
			return fmt.Errorf("%s port %d has no monitored counter %q: %w", device, port, counter, dbusapi.ErrInvalidArgument)
		case cleared == 0 && counter == "":
			return fmt.Errorf("%s port %d has no latched breach to acknowledge: %w", device, port, dbusapi.ErrNotLatched)
		case cleared == 0:
			return fmt.Errorf("counter %s on %s port %d is not latched: %w", counter, device, port, dbusapi.ErrNotLatched)
		}
		b.acks = append(b.acks, Ack{device, port, counter, uid})
		return nil
	}
	return fmt.Errorf("%s port %d is not monitored: %w", device, port, dbusapi.ErrNoSuchPort)
}

func cloneManager(m dbusapi.ManagerView) dbusapi.ManagerView {
	m.FatalPorts = slices.Clone(m.FatalPorts)
	return m
}

func clonePorts(ps []dbusapi.PortView) []dbusapi.PortView {
	out := slices.Clone(ps)
	for i := range out {
		out[i].Counters = slices.Clone(out[i].Counters)
		out[i].Sanity = slices.Clone(out[i].Sanity)
	}
	return out
}

// SampleManager is a plausible daemon state for a small GPU node.
func SampleManager() dbusapi.ManagerView {
	return dbusapi.ManagerView{
		Version: "0.0.0-test", NodeName: "gpu-node-1", BootID: "5b1c3a4e-0000-4000-8000-000000000001",
		PollIntervalUSec: 1_000_000, LastPollUSec: 1_700_000_000_000_000, Healthy: true,
		FatalPorts: []string{}, ConfigPath: "/etc/nichealthd/config.toml", ConfigGeneration: 1,
		MonitoredPorts: 3, MonitoredNICs: 3, Ready: true,
	}
}

// SamplePorts are two InfiniBand compute ports and one RoCE storage port,
// all healthy, each with a couple of counters.
func SamplePorts() []dbusapi.PortView {
	counters := func() []dbusapi.CounterView {
		return []dbusapi.CounterView{
			{Name: "link_downed", Value: 0, Unit: "", ThresholdType: "delta", Threshold: 1, Fatal: true},
			{Name: "symbol_error", Value: 3, Rate: 0.5, Unit: "second", ThresholdType: "velocity", Threshold: 10},
			{Name: "port_xmit_wait", Value: 1000, Rate: 10, Unit: "second", ThresholdType: "velocity", Threshold: 1e6},
		}
	}
	return []dbusapi.PortView{
		{Device: "mlx5_0", Port: 1, LinkLayer: "InfiniBand", Role: "Compute", RoleReason: "NUMA 0 shared with GPU 0",
			NetDev: "ibp12s0", PCIAddress: "0000:0c:00.0", NUMANode: 0, Rate: "400 Gb/sec (4X NDR)", RateGbps: 400,
			NodeGUID: "0xb83fd20300a0b010", PortGUID: "0xb83fd20300a0b010",
			State: "ACTIVE", PhysState: "LinkUp", Up: true, Healthy: true, Counters: counters(), Sanity: []string{}, CableDirection: "none", CableEvidence: []string{}},
		{Device: "mlx5_1", Port: 1, LinkLayer: "InfiniBand", Role: "Compute", RoleReason: "NUMA 1 shared with GPU 4",
			NetDev: "ibp140s0", PCIAddress: "0000:8c:00.0", NUMANode: 1, Rate: "400 Gb/sec (4X NDR)", RateGbps: 400,
			State: "ACTIVE", PhysState: "LinkUp", Up: true, Healthy: true, Counters: counters(), Sanity: []string{}, CableDirection: "none", CableEvidence: []string{}},
		{Device: "mlx5_bond_0", Port: 1, LinkLayer: "Ethernet", Role: "Storage", RoleReason: "no GPU on its PCIe switch",
			NetDev: "bond0", PCIAddress: "0016:03:00.0", NUMANode: -1, Rate: "200 Gb/sec (4X HDR)", RateGbps: 200,
			State: "ACTIVE", PhysState: "LinkUp", Up: true, Healthy: true, Counters: counters()[:1], Sanity: []string{}, CableDirection: "none", CableEvidence: []string{},
			RoCEClass: "roce-congested", RoCEEvidence: "roce-congested: ECN marks and CNPs 4000.0/s (np_ecn_marked_roce_packets 2000.0/s, rp_cnp_handled 2000.0/s), loss 0.0/s",
			RoCEPauseLostGbps: 4, RoCEPauseLostPercent: 2},
	}
}
