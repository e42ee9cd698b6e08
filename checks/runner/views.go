package runner

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/nichealth/nichealthd/checks/cable"
	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/checks/ports"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/mad/wire"
	"github.com/nichealth/nichealthd/observe"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

// PortInfos is what the last cycle observed of every monitored port, with
// what the checks say of it (its counters, its last crossing, its
// link-down episodes), plus the last known ports of NICs missing from the
// enumeration: a NIC that fell off the bus stays visible (as MISSING)
// until it returns or the host reboots.
func (r *Runner) PortInfos() []health.PortInfo {
	obsPorts := r.obs.Ports()
	out := make([]health.PortInfo, 0, len(obsPorts))
	seen := map[string]bool{}
	for _, p := range obsPorts {
		dev, port := p.Device, p.Port
		seen[dev.Name] = true
		pi := health.PortInfo{
			Device: event.Clean(dev.Name), Port: port.Num, Card: dev.Card, LinkLayer: port.LinkLayer,
			Role: string(dev.Role), RoleReason: event.Clean(dev.RoleReason), NetDev: event.Clean(p.NetDev),
			PCIAddress: dev.PCIAddress, NUMANode: dev.NUMANode, Rate: event.Clean(port.Rate),
			LastChange: r.set.ports.LastChange(dev.Name, port.Num),
			FWVer:      event.Clean(dev.FWVer), BoardID: event.Clean(dev.BoardID),
		}
		if p.RateText != "" {
			pi.Rate = event.Clean(p.RateText)
		}
		pi.RateGbps = p.RateGbps
		pi.LinkDownReason = event.Clean(p.LinkDown.Words)
		if p.Observed {
			pi.Link = p.Link
			pi.State, pi.PhysState = event.Clean(p.Link.State.Name), event.Clean(p.Link.Phys.Name)
			pi.HealthyMessage = event.Clean(healthyMessage(p))
		}
		if g, err := sysfs.ParseNodeGUID([]byte(dev.NodeGUID)); err == nil {
			pi.NodeGUID = sysfs.FormatGUID(g)
		}
		pi.PortGUID = port.GUID
		pi.GPUs, _ = r.obs.GPUs(dev.Name)
		pi.Counters = r.counterInfos(p)
		if r.set.rules.Engine() != nil {
			pi.LinkDownEpisodes, _ = r.set.rules.Episodes(dev.Name, port.Num)
		}
		pi.Peer = r.peerInfo(dev.Name, port.Num)
		pi.RoCE = r.roceInfo(dev.Name, port.Num)
		pi.Cable = r.cableInfo(dev.Name, port.Num)
		out = append(out, pi)
	}
	mem := r.set.ports.Memory()
	for _, dev := range mem.KnownDevices {
		if seen[dev] {
			continue
		}
		// What its last discovery said: a NIC that disappeared keeps its
		// role and GPUs (what to drain) until it returns or the host
		// reboots.
		id := mem.Identity[dev]
		for _, ps := range missingPorts(mem, dev) {
			pi := health.PortInfo{
				Device: event.Clean(dev), Port: ps.Port, LinkLayer: ps.LinkLayer, State: "MISSING", Missing: true,
				PCIAddress: mem.DeviceAddrs[dev], Card: ports.CardOfAddress(mem.DeviceAddrs[dev]),
				Role: event.Clean(id.Role), RoleReason: event.Clean(id.RoleReason), GPUs: event.Clean(id.GPUs),
				HealthyMessage: fmt.Sprintf("NIC %s is not in the last enumeration of %s/", event.Clean(dev), r.cfg.Paths.ClassInfiniBand),
			}
			if r.set.rules.Engine() != nil {
				pi.LinkDownEpisodes, _ = r.set.rules.Episodes(dev, ps.Port)
			}
			out = append(out, pi)
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
func healthyMessage(p *observe.Port) string {
	o := ports.Observation{Device: p.Device.Name, Port: p.Port.Num, LinkLayer: p.Port.LinkLayer, State: p.Link.State, Phys: p.Link.Phys, Operstate: p.Operstate,
		LinkDownReason: p.LinkDown.Reason, LinkDownSubReason: p.LinkDown.SubReason, LinkDownWords: p.LinkDown.Words}
	switch v := ports.Judge(o); v {
	case ports.Healthy:
		return ports.Message(o, v)
	case ports.Transient:
		return ports.Message(o, v) + " (RoCE link training, not reported)"
	default:
		return ports.Message(o, v) + " (unhealthy since first sight on a card that matches its peers: treated as unprovisioned, not failed)"
	}
}

// missingPorts lists the last known ports of a device absent from
// discovery.
func missingPorts(mem *ports.PortMemory, dev string) []ports.PortState {
	var out []ports.PortState
	for _, ps := range mem.PortStates {
		if ps.Device == dev {
			out = append(out, ps)
		}
	}
	slices.SortFunc(out, func(a, b ports.PortState) int { return a.Port - b.Port })
	return out
}

func (r *Runner) counterInfos(p *observe.Port) []health.Counter {
	views := r.set.counters.View(p)
	out := make([]health.Counter, 0, len(views))
	for _, cv := range views {
		out = append(out, health.Counter{
			Name: cv.Name, Value: cv.Value, Rate: cv.Rate, Unit: strings.TrimPrefix(cv.RateUnit, "/"),
			ThresholdType: cv.ThresholdType, Threshold: cv.Threshold, Fatal: cv.Fatal, Breached: cv.Breached,
			BreachedSince: cv.BreachedSince, Latched: event.Clean(cv.Latched), Saturated: cv.Saturated, LostGbps: cv.LostGbps, LostPercent: cv.LostPercent,
		})
	}
	return out
}

// AERTotals is what /metrics shows of the AER check: every function on
// the current plan with the classes it has files for.
func (r *Runner) AERTotals() []health.AERTotal {
	if r.last == nil {
		return nil
	}
	var out []health.AERTotal
	for _, t := range r.set.aer.Totals(r.last.AER) {
		out = append(out, health.AERTotal{PCI: t.PCI, Severity: t.Severity, Total: t.Total, RootPort: t.RootPort})
	}
	return out
}

// LinkStoryReadings are the last pass's transceivers and devlink, as the
// snapshot shows them (/metrics).
func (r *Runner) LinkStoryReadings() ([]health.ModuleReading, []health.DevlinkReading) {
	if r.last == nil {
		return nil, nil
	}
	ls := &r.last.LinkStory
	var mods []health.ModuleReading
	scale := func(v *float64, k float64) *float64 {
		if v == nil {
			return nil
		}
		s := *v * k
		return &s
	}
	for _, m := range ls.Modules {
		if m.Err != nil {
			continue
		}
		mr := health.ModuleReading{Device: event.Clean(m.Device), Port: m.Port, NetDev: event.Clean(m.NetDev), Type: m.Module.Type,
			Vendor: event.Clean(m.Module.Vendor), PartNumber: event.Clean(m.Module.PartNumber), Serial: event.Clean(m.Module.Serial),
			TemperatureC: m.Module.TemperatureC, VoltageV: m.Module.VoltageV}
		for _, l := range m.Module.Lanes {
			if l.Unsupported {
				continue
			}
			mr.Lanes = append(mr.Lanes, health.ModuleLane{Lane: l.Lane, TxBiasA: scale(l.TxBiasMA, 1e-3),
				TxPowerW: scale(l.TxPowerM, 1e-3), RxPowerW: scale(l.RxPowerM, 1e-3), Unused: l.Unused()})
		}
		mods = append(mods, mr)
	}
	var dl []health.DevlinkReading
	if ls.DevlinkErr == nil {
		for _, rp := range ls.Reporters {
			if rp.Device.Bus != "pci" || rp.HasPort {
				continue
			}
			dl = append(dl, health.DevlinkReading{PCI: event.Clean(rp.Device.Name), Reporter: event.Clean(rp.Name), Error: rp.Error,
				ErrorCount: rp.ErrorCount, RecoverCount: rp.RecoverCount})
		}
		for _, in := range ls.Infos {
			running, stored, _ := in.ActivationPending()
			if in.Device.Bus == "pci" && running != "" {
				dl = append(dl, health.DevlinkReading{PCI: event.Clean(in.Device.Name), Running: event.Clean(running), Stored: event.Clean(stored)})
			}
		}
	}
	return mods, dl
}

// InventoryInfos is the PCI inventory the snapshot shows: every NIC
// function of the last scan that is not a VF, as identity (its conditions
// are the model's).
func (r *Runner) InventoryInfos() []health.NICInfo {
	var out []health.NICInfo
	for _, f := range r.obs.Inventory().Functions {
		if f.IsVF {
			continue
		}
		out = append(out, health.NICInfo{PCI: f.Address, Device: event.Clean(f.Device), Role: string(f.Role), HCAType: event.Clean(f.HCAType),
			FWVer: event.Clean(f.FWVer), BoardID: event.Clean(f.BoardID), Serial: event.Clean(f.Serial), Driver: event.Clean(f.Driver),
			State: string(f.State()), Monitored: f.Monitored})
	}
	return out
}

// KernelLogTotals is what the snapshot shows of the kernel log: what the
// reader read, dropped or lost and what the check matched, since start
// (nil while the check is off). It is rebuilt only when it moved.
func (r *Runner) KernelLogTotals() *health.KernelLogTotals {
	w := r.set.kernelLog
	if !w.Active() || r.last == nil {
		return nil
	}
	st := r.last.KernelLog.Stats
	if t := r.klTotals; t != nil && t.Judged == w.Judged() && t.Carried == w.Carried() && r.klStats == st {
		return t
	}
	cs := w.Stats()
	// The reader counts from its resume point (the check's cursor in the
	// state), so after a restart the sequence is the position, and records
	// the kernel hands out again are skipped, not read.
	t := &health.KernelLogTotals{Reading: st.Open, Err: event.Clean(st.Err), Records: st.Read, Sequence: st.LastSeq, Judged: w.Judged(),
		Dropped: st.Dropped + st.Oversized + st.Malformed, Lost: st.Lost, OtherFacility: cs.OtherFacility,
		Unmonitored: cs.Unmonitored, Unattributed: cs.Unattributed, Overflow: cs.Overflow, OverBudget: cs.OverBudget, Carried: w.Carried()}
	for k, n := range cs.Matches {
		t.Matches = append(t.Matches, health.KernelLogMatch{Pattern: k.Pattern, Device: event.Clean(k.Device), Count: n})
	}
	slices.SortFunc(t.Matches, func(a, b health.KernelLogMatch) int {
		return cmp.Or(strings.Compare(a.Pattern, b.Pattern), strings.Compare(a.Device, b.Device))
	})
	r.klTotals, r.klStats = t, st
	return t
}

// peerInfo is the far end of a port as the last reading and the far-end
// check say it (nil when it is not read).
func (r *Runner) peerInfo(device string, port int) *health.Peer {
	if r.last == nil || r.last.FarEnd == nil {
		return nil
	}
	p := r.last.FarEnd.Port(device, port)
	if p == nil || (!p.Found && p.Err == "" && !p.Read) {
		return nil
	}
	v := r.set.farEnd.View(device, port)
	out := &health.Peer{Found: p.Found, Err: event.Clean(p.Err), ReadErrors: p.ReadErrors}
	if p.Found || p.Read || p.Peer.NodeGUID != "" {
		// A read that failed leaves the last peer that was found: every
		// view (D-Bus, nichealthctl, /metrics) keeps it, aged by ReadAt
		// and counted by ReadErrors, instead of losing it while the
		// fabric does not answer (DESIGN.md sections 9 and 13).
		out.GUID, out.PortGUID, out.Port, out.LID = p.Peer.NodeGUID, p.Peer.PortGUID, p.Peer.Port, p.Peer.LID
		out.Name, out.Description, out.Switch = event.Clean(p.Peer.Name), event.Clean(p.Peer.Description), p.Peer.NodeType == 2
	}
	if !p.Read {
		return out
	}
	out.ReadAt = p.ReadAt
	judged := r.set.farEnd.JudgedRows()
	values := p.Counters.Values()
	for i, f := range wire.Fields {
		pc := health.PeerCounter{Field: f.Name, Value: values[i], Bits: int(f.Bits), Saturated: slices.Contains(v.Saturated, f.Name)}
		if p.Wide {
			pc.Bits = 64
		}
		rows, ok := judged[f.Name]
		pc.Judged = ok
		for _, row := range rows {
			if slices.Contains(v.Latched, row) {
				pc.Latched = append(pc.Latched, row)
			}
		}
		out.Counters = append(out.Counters, pc)
	}
	return out
}

// cableInfo is the port's cable verdict of the last cycle, as the views
// show it (the tracker judged it; nothing is judged here).
func (r *Runner) cableInfo(device string, port int) health.Cable {
	v := r.set.cable.Verdict(device, port)
	if v == nil {
		return health.Cable{Direction: cable.None.String()}
	}
	out := health.Cable{Direction: v.Direction.String(), Suspect: v.Suspect.String(), Part: event.Clean(v.Part()),
		Serial: event.Clean(v.Serial), Lane: v.Lane, Missing: event.Clean(v.MissingText())}
	for _, e := range v.Evidence() {
		out.Evidence = append(out.Evidence, event.Clean(e.String()))
	}
	return out
}
