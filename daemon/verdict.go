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
	"github.com/nichealth/nichealthd/topology/sysfs"
)

// The health model is the fold of the event stream (checks/health): the
// daemon applies every event it makes durable, stores the model's
// conditions with the state they belong to, and publishes one snapshot per
// change that every view reads.

// restoreModel loads the model from the state file. A state file from
// before the model has no conditions recorded: they are rebuilt from what
// the checks remember, so an upgrade does not turn a latched breach or a
// missing NIC into "healthy" in the views.
func restoreModel(st *persist.State, defs []counters.Definition) (*health.Model, error) {
	m := health.NewModel()
	if len(st.Health) > 0 {
		var cs []health.Condition
		if err := json.Unmarshal(st.Health, &cs); err != nil {
			return m, fmt.Errorf("health conditions in the state file are unreadable (%v); rebuilt from the checks' state", err)
		}
		m.Restore(cs)
		return m, nil
	}
	for _, e := range eventsFromState(st, defs) {
		m.Apply(&e)
	}
	return m, nil
}

// eventsFromState restates, as events, the conditions a state file from
// before the health model implies.
func eventsFromState(st *persist.State, defs []counters.Definition) []event.Event {
	var out []event.Event
	add := func(s event.Spec, since time.Time) {
		out = append(out, event.New(s, event.Stamp{Now: since}))
	}
	for _, ps := range st.PortStates {
		o, ok := checks.ObservationOf(ps)
		if !ok {
			continue
		}
		if v := checks.Judge(o); v == checks.Fatal || v == checks.NonFatal {
			add(event.Spec{Kind: event.KindPortNonFatal, CheckName: checks.StateCheckFor(o.LinkLayer), IsFatal: v == checks.Fatal,
				Message: checks.Message(o, v), Device: o.Device, Port: o.Port}, time.Time{})
		}
	}
	for k, fl := range st.BreachFlags {
		dev, port, name, ok := counters.ParseKey(k)
		if !ok || !fl.Breached {
			continue
		}
		add(event.Spec{Kind: event.KindCounterBreach, CheckName: fl.CheckName, IsFatal: fl.IsFatal, Device: dev, Port: port,
			ErrorCode: []string{name}, Metadata: map[string]string{"counter": name},
			Message: fmt.Sprintf("Port %s port %d: %s breach latched", dev, port, name)}, fl.Since)
	}
	for card, a := range st.CardAnomalies {
		add(event.Spec{Kind: event.KindCardAnomaly, CheckName: event.InfiniBandStateCheck, IsFatal: true, Card: card,
			Message: fmt.Sprintf("Card %s (%s) has %d active ports, expected %d", card, a.Role, a.Active, a.Expected)}, a.Since)
	}
	for _, dev := range st.Disappeared {
		add(event.Spec{Kind: event.KindDeviceDisappeared, CheckName: event.InfiniBandStateCheck, IsFatal: true, Device: dev,
			Message: fmt.Sprintf("NIC %s disappeared - hardware failure", dev)}, time.Time{})
	}
	_ = defs
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
		}
		if p.rate.Err == nil && len(p.rate.Value()) > 0 {
			pi.Rate = event.Clean(string(sysfs.TrimValue(p.rate.Value())))
		}
		if p.observed {
			pi.State, pi.PhysState = event.Clean(p.obs.State.Name), event.Clean(p.obs.Phys.Name)
			pi.HealthyMessage = event.Clean(healthyMessage(p.obs))
		}
		pi.Counters = m.counterInfos(p)
		out = append(out, pi)
	}
	for _, dev := range m.st.KnownDevices {
		if seen[dev] {
			continue
		}
		for _, ps := range m.missingPorts(dev) {
			out = append(out, health.PortInfo{
				Device: event.Clean(dev), Port: ps.Port, LinkLayer: ps.LinkLayer, State: "MISSING", Missing: true,
				PCIAddress: m.st.DeviceAddrs[dev], Card: cardOfAddress(m.st.DeviceAddrs[dev]),
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
func (m *Monitor) missingPorts(dev string) []persist.PortState {
	var out []persist.PortState
	for _, ps := range m.st.PortStates {
		if ps.Device == dev {
			out = append(out, ps)
		}
	}
	slices.SortFunc(out, func(a, b persist.PortState) int { return a.Port - b.Port })
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
	views := m.eval.View(m.st, p.dev.Name, p.port.Num, defs)
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
