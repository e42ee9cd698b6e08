package dbusapi

import (
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/nichealth/nichealthd/checks/health"
)

// ConditionView is one active condition: which check raised it, about
// what, and how bad.
type ConditionView struct {
	Check   string `json:"check"`
	Entity  string `json:"entity"` // e.g. "mlx5_3/1", "mlx5_3/1 symbol_error", "card 0000:5c:00", "mlx5_7"
	Kind    string `json:"kind"`   // the event kind that raised it
	Fatal   bool   `json:"fatal"`
	Message string `json:"message"`
}

// conditionSig is a(sssbs): check, entity, kind, fatal, message.
const conditionSig = "a(sssbs)"

type conditionList []ConditionView

func (cl conditionList) wire() []conditionWire {
	out := make([]conditionWire, 0, len(cl))
	for _, c := range cl {
		out = append(out, conditionWire(c))
	}
	return out
}

type conditionWire struct {
	Check   string
	Entity  string
	Kind    string
	Fatal   bool
	Message string
}

func decodeConditions(v dbus.Variant) []ConditionView {
	out := []ConditionView{}
	rows, ok := v.Value().([][]any)
	if !ok {
		return out // absent or mistyped: an older daemon
	}
	for _, r := range rows {
		if len(r) != 5 {
			continue
		}
		check, _ := r[0].(string)
		entity, _ := r[1].(string)
		kind, _ := r[2].(string)
		fatal, _ := r[3].(bool)
		msg, _ := r[4].(string)
		out = append(out, ConditionView{Check: check, Entity: entity, Kind: kind, Fatal: fatal, Message: msg})
	}
	return out
}

func conditionViews(cs []health.Condition) []ConditionView {
	out := make([]ConditionView, 0, len(cs))
	for _, c := range cs {
		out = append(out, ConditionView{Check: c.Check, Entity: c.Entity.String(), Kind: string(c.Kind),
			Fatal: c.Severity == health.Fatal, Message: c.Message})
	}
	return out
}

// ManagerViewOf is the Manager object's view of a snapshot. lastPoll moves
// every cycle and is not part of the verdict, so it comes separately.
func ManagerViewOf(s *health.Snapshot, lastPoll time.Time) ManagerView {
	mv := ManagerView{FatalPorts: []string{}, DegradedPorts: []string{}, Conditions: []ConditionView{}}
	if s == nil {
		return mv
	}
	n := s.Node
	mv.Version, mv.NodeName, mv.BootID = n.Version, n.NodeName, n.BootID
	mv.PollIntervalUSec = uint64(n.PollInterval.Microseconds())
	if !lastPoll.IsZero() {
		mv.LastPollUSec = uint64(lastPoll.UnixMicro())
	}
	mv.ConfigPath, mv.ConfigGeneration, mv.LastReloadError, mv.Ready = n.ConfigPath, n.ConfigGeneration, n.LastReloadError, n.Ready
	mv.Healthy, mv.Verdict = s.Healthy(), s.Verdict.String()
	mv.FatalPorts = append(mv.FatalPorts, s.FatalPorts...)
	mv.DegradedPorts = append(mv.DegradedPorts, s.DegradedPorts...)
	mv.Conditions = conditionViews(s.Conditions)
	mv.MonitoredPorts, mv.MonitoredNICs = uint32(len(s.Ports)), uint32(s.NICs)
	return mv
}

// PortViewsOf is every port object's view of a snapshot.
func PortViewsOf(s *health.Snapshot) []PortView {
	if s == nil {
		return []PortView{}
	}
	out := make([]PortView, 0, len(s.Ports))
	for i := range s.Ports {
		out = append(out, PortViewOf(&s.Ports[i]))
	}
	return out
}

// PortViewOf is one port object's view.
func PortViewOf(p *health.Port) PortView {
	pv := PortView{
		Device: p.Device, Port: int32(p.Port), LinkLayer: p.LinkLayer, Role: p.Role, RoleReason: p.RoleReason,
		NetDev: p.NetDev, PCIAddress: p.PCIAddress, NUMANode: int32(p.NUMANode), NodeGUID: p.NodeGUID, PortGUID: p.PortGUID, GPUs: p.GPUs, Rate: p.Rate,
		State: p.State, PhysState: p.PhysState, Up: p.Link.Up(), RateGbps: p.RateGbps, Healthy: p.Verdict == health.Healthy, Fatal: p.Verdict == health.Fatal,
		Verdict: p.Verdict.String(), Conditions: conditionViews(p.Conditions), Message: p.Message,
		Counters: make([]CounterView, 0, len(p.Counters)), Sanity: []string{},
		FirmwareVersion: p.FWVer, BoardID: p.BoardID, LinkDownReason: p.LinkDownReason,
		CableDirection: p.Cable.Direction, CableSuspect: p.Cable.Suspect, CablePart: p.Cable.Part, CableEvidence: cableEvidence(p.Cable),
	}
	if !p.LastChange.IsZero() {
		pv.LastChangeUSec = uint64(p.LastChange.UnixMicro())
	}
	if pr := p.Peer; pr != nil {
		// The snapshot keeps a far end that stopped answering (Found
		// false) with its last identity and counters; the bus shows
		// them with their age, as /metrics does.
		pv.PeerGUID, pv.PeerPort, pv.PeerName = pr.GUID, uint32(max(pr.Port, 0)), pr.Name
		pv.PeerReadErrors, pv.PeerReadError = pr.ReadErrors, pr.Err
		if !pr.ReadAt.IsZero() {
			pv.PeerReadUSec = uint64(pr.ReadAt.UnixMicro())
		}
		if len(pr.Counters) > 0 {
			pv.PeerCounters = make(map[string]uint64, len(pr.Counters))
			for _, c := range pr.Counters {
				pv.PeerCounters[c.Field] = c.Value
			}
		}
	}
	roceView(&pv, p.RoCE)
	for _, c := range p.Counters {
		cv := CounterView{Name: c.Name, Value: c.Value, Rate: c.Rate, Unit: c.Unit, ThresholdType: c.ThresholdType,
			Threshold: c.Threshold, Fatal: c.Fatal, Breached: c.Breached, Saturated: c.Saturated,
			LostGbps: c.LostGbps, LostPercent: c.LostPercent}
		if !c.BreachedSince.IsZero() {
			cv.BreachedSinceUSec = uint64(c.BreachedSince.UnixMicro())
		}
		pv.Counters = append(pv.Counters, cv)
	}
	for _, c := range p.Conditions {
		if c.IsSanityFinding() {
			pv.Sanity = append(pv.Sanity, c.Message)
		}
	}
	return pv
}

// cableEvidence is the verdict's evidence with the missing half last, as
// nichealthctl cables prints it.
func cableEvidence(c health.Cable) []string {
	out := make([]string, 0, len(c.Evidence)+1)
	out = append(out, c.Evidence...)
	if c.Missing != "" {
		out = append(out, c.Missing)
	}
	return out
}
