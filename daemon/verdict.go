package daemon

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/checks/counters"
	"github.com/nichealth/nichealthd/checks/event"
	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/persist"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/gpumeta"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

// The health model is the fold of the event stream (checks/health): the
// daemon applies every event it makes durable, stores the model's
// conditions with the state they belong to, and publishes one snapshot per
// change that every view reads.

// restoreModel loads the model from the state file. A state file from
// before the model has no conditions recorded, and one whose conditions
// are unreadable cannot say them: they are rebuilt from what the checks
// remember, so an upgrade does not turn a latched breach or a missing NIC
// into "healthy" in the views. note says when the recorded conditions
// were unreadable.
func restoreModel(st *persist.State, mem *Memory) (m *health.Model, note string) {
	m = health.NewModel()
	if len(st.Health) > 0 {
		var cs []health.Condition
		err := json.Unmarshal(st.Health, &cs)
		if err == nil {
			m.Restore(cs)
			adoptReported(mem, cs)
			return m, ""
		}
		note = fmt.Sprintf("health conditions in the state file are unreadable (%v); rebuilt from the checks' state", err)
	}
	for _, e := range eventsFromMemory(mem) {
		m.Apply(&e)
	}
	return m, note
}

// adoptReported fills in what the port check last reported from the
// model, for a state file written before the port check remembered it:
// card homogeneity must know which ports are already fatal on their own.
func adoptReported(mem *Memory, cs []health.Condition) {
	for _, c := range cs {
		if c.Entity.Kind != health.EntityPort || c.Check != checks.StateCheckFor(topology.LinkLayerEthernet) && c.Check != checks.StateCheckFor(topology.LinkLayerInfiniBand) {
			continue
		}
		k := checks.PortKey(c.Entity.Device, c.Entity.Port)
		ps, ok := mem.Ports.PortStates[k]
		if !ok || ps.Reported != "" {
			continue
		}
		ps.Reported = checks.ReportedNonFatal
		if c.Severity == health.Fatal {
			ps.Reported = checks.ReportedFatal
		}
		mem.Ports.PortStates[k] = ps
	}
}

// eventsFromMemory restates, as events, the conditions the checks'
// memory implies (a state file from before the health model).
func eventsFromMemory(mem *Memory) []event.Event {
	var out []event.Event
	add := func(s event.Spec, since time.Time) {
		out = append(out, event.New(s, event.Stamp{Now: since}))
	}
	for _, ps := range mem.Ports.PortStates {
		o, ok := checks.ObservationOf(ps)
		if !ok {
			continue
		}
		if v := checks.Judge(o); v == checks.Fatal || v == checks.NonFatal {
			add(event.Spec{Kind: event.KindPortNonFatal, CheckName: checks.StateCheckFor(o.LinkLayer), IsFatal: v == checks.Fatal,
				Message: checks.Message(o, v), Device: o.Device, Port: o.Port}, time.Time{})
		}
	}
	for k, fl := range mem.Counters.BreachFlags {
		dev, port, name, ok := counters.ParseKey(k)
		if !ok || !fl.Breached {
			continue
		}
		add(event.Spec{Kind: event.KindCounterBreach, CheckName: fl.CheckName, IsFatal: fl.IsFatal, Device: dev, Port: port,
			ErrorCode: []string{name}, Metadata: map[string]string{"counter": name},
			Message: fmt.Sprintf("Port %s port %d: %s breach latched", dev, port, name)}, fl.Since)
	}
	for card, a := range mem.Cards.Anomalies {
		add(event.Spec{Kind: event.KindCardAnomaly, CheckName: event.InfiniBandStateCheck, IsFatal: true, Card: card,
			Message: fmt.Sprintf("Card %s (%s) has %d active ports, expected %d", card, a.Role, a.Active, a.Expected)}, a.Since)
	}
	for _, dev := range mem.Ports.Disappeared {
		add(event.Spec{Kind: event.KindDeviceDisappeared, CheckName: event.InfiniBandStateCheck, IsFatal: true, Device: dev,
			Message: fmt.Sprintf("NIC %s disappeared - hardware failure", dev)}, time.Time{})
	}
	return out
}

// storeModel writes the model's conditions into the state about to be
// saved.
func storeModel(st *persist.State, m *health.Model) {
	b, err := json.Marshal(m.Conditions())
	if err != nil {
		return // a plain struct of strings and numbers always encodes
	}
	st.Health = b
}

// portInfos is what the monitor observed of every port, plus the last
// known ports of NICs missing from the enumeration: a NIC that fell off the
// bus stays visible (as MISSING) until it returns or the host reboots.
func (m *Monitor) portInfos() []health.PortInfo {
	out := make([]health.PortInfo, 0, len(m.ports))
	seen := map[string]bool{}
	for _, p := range m.ports {
		seen[p.dev.Name] = true
		pi := health.PortInfo{
			Device: event.Clean(p.dev.Name), Port: p.port.Num, Card: p.dev.Card, LinkLayer: p.port.LinkLayer,
			Role: string(p.dev.Role), RoleReason: event.Clean(p.dev.RoleReason), NetDev: event.Clean(p.netdev),
			PCIAddress: p.dev.PCIAddress, NUMANode: p.dev.NUMANode, Rate: event.Clean(p.port.Rate),
			LastChange: m.lastChange[checks.PortKey(p.dev.Name, p.port.Num)],
			FWVer:      event.Clean(p.dev.FWVer), BoardID: event.Clean(p.dev.BoardID),
		}
		if p.rate.Err == nil && len(p.rate.Value()) > 0 {
			pi.Rate = event.Clean(string(sysfs.TrimValue(p.rate.Value())))
		}
		if p.observed {
			pi.State, pi.PhysState = event.Clean(p.obs.State.Name), event.Clean(p.obs.Phys.Name)
			pi.HealthyMessage = event.Clean(healthyMessage(p.obs))
		}
		if g, err := sysfs.ParseNodeGUID([]byte(p.dev.NodeGUID)); err == nil {
			pi.NodeGUID = sysfs.FormatGUID(g)
		}
		pi.PortGUID = p.port.GUID
		pi.GPUs = m.gpusOf[p.dev.Name]
		pi.Counters = m.counterInfos(p)
		out = append(out, pi)
	}
	for _, dev := range m.mem.Ports.KnownDevices {
		if seen[dev] {
			continue
		}
		for _, ps := range m.missingPorts(dev) {
			out = append(out, health.PortInfo{
				Device: event.Clean(dev), Port: ps.Port, LinkLayer: ps.LinkLayer, State: "MISSING", Missing: true,
				PCIAddress: m.mem.Ports.DeviceAddrs[dev], Card: cardOfAddress(m.mem.Ports.DeviceAddrs[dev]),
				HealthyMessage: fmt.Sprintf("NIC %s is not in the last enumeration of %s/", event.Clean(dev), m.cfg.Paths.ClassInfiniBand),
			})
		}
	}
	slices.SortStableFunc(out, func(a, b health.PortInfo) int {
		if c := health.CompareDevices(a.Device, b.Device); c != 0 {
			return c
		}
		return a.Port - b.Port
	})
	return out
}

// healthyMessage describes a port that no condition covers. It is the
// port check's own wording; an unhealthy reading with no condition is one
// the rules deliberately did not report, and the text says why.
func healthyMessage(o checks.Observation) string {
	switch v := checks.Judge(o); v {
	case checks.Healthy:
		return checks.Message(o, v)
	case checks.Transient:
		return checks.Message(o, v) + " (RoCE link training, not reported)"
	default:
		return checks.Message(o, v) + " (unhealthy since first sight on a card that matches its peers: treated as unprovisioned, not failed)"
	}
}

// missingPorts lists the last known ports of a device absent from
// discovery.
func (m *Monitor) missingPorts(dev string) []checks.PortState {
	var out []checks.PortState
	for _, ps := range m.mem.Ports.PortStates {
		if ps.Device == dev {
			out = append(out, ps)
		}
	}
	slices.SortFunc(out, func(a, b checks.PortState) int { return a.Port - b.Port })
	return out
}

// cardOfAddress is the card key (domain:bus:device) of a PCI address.
func cardOfAddress(addr string) string {
	if i := strings.LastIndexByte(addr, '.'); i > 0 {
		return addr[:i]
	}
	return ""
}

func (m *Monitor) counterInfos(p *portPlan) []health.Counter {
	defs := m.viewDefs[:0]
	for _, def := range m.defs {
		if def.AppliesTo(p.port.LinkLayer) {
			defs = append(defs, def)
		}
	}
	m.viewDefs = defs
	views := m.eval.View(m.mem.Counters, p.dev.Name, p.port.Num, defs)
	out := make([]health.Counter, 0, len(views))
	for _, cv := range views {
		out = append(out, health.Counter{
			Name: cv.Name, Value: cv.Value, Rate: cv.Rate, Unit: strings.TrimPrefix(cv.RateUnit, "/"),
			ThresholdType: cv.ThresholdType, Threshold: cv.Threshold, Fatal: cv.Fatal, Breached: cv.Breached,
			BreachedSince: cv.BreachedSince, Saturated: cv.Saturated, LostGbps: cv.LostGbps, LostPercent: cv.LostPercent,
		})
	}
	return out
}

// noGPUAffinity is what a NIC's events say when no GPU sits behind it
// (storage and management NICs, or a compute NIC the matrix puts on
// another switch).
const noGPUAffinity = "no GPU affinity"

// gpusBehind describes the GPUs behind a device (PIX/PXB in the matrix),
// e.g. "GPU3 (0000:5d:00.0 GPU-8c1e…)", for every event of its ports and
// for the views: index, PCI address and, where the metadata has it, the
// UUID a scheduler drains by.
func (m *Monitor) gpusBehind(dev *topology.Device) string {
	if dev.Role != topology.RoleCompute {
		return noGPUAffinity
	}
	if g := gpumeta.Describe(m.matrix.Near(dev.Name)); g != "" {
		// The UUIDs come from gpu_metadata.json, which may hold any
		// bytes: a NUL or invalid UTF-8 here broke every D-Bus reply that
		// carries the port (DESIGN.md section 9).
		return event.Clean(g)
	}
	return noGPUAffinity
}

// withGPUs adds metadata "gpus" to a NIC event: the GPUs behind its NIC
// (or the NICs of the ports a card event names), so a scheduler can drain
// those GPUs or their rail rather than the node. The spec's own metadata
// map is never modified: checks may share it.
func (m *Monitor) withGPUs(s event.Spec) event.Spec {
	if _, set := s.Metadata["gpus"]; set {
		return s
	}
	var names []string
	if s.Device != "" {
		names = append(names, s.Device)
	}
	for _, p := range s.Ports {
		names = append(names, p.Device)
	}
	var parts []string
	for _, n := range names {
		if g, ok := m.gpusOf[n]; ok && !slices.Contains(parts, g) && g != noGPUAffinity {
			parts = append(parts, g)
		}
	}
	if len(names) == 0 {
		return s
	}
	g := noGPUAffinity
	if len(parts) > 0 {
		g = strings.Join(parts, ", ")
	}
	md := make(map[string]string, len(s.Metadata)+1)
	for k, v := range s.Metadata {
		md[k] = v
	}
	md["gpus"] = g
	s.Metadata = md
	return s
}
