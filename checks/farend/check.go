package farend

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/config/countertable"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
	"github.com/nichealth/nichealthd/topology/farend"
	"github.com/nichealth/nichealthd/topology/mad"
	"github.com/nichealth/nichealthd/topology/mad/wire"
)

// CheckName is the check's name on the wire and in --checks.
const CheckName = event.FarEndCheck

// Section is the check's section of the state file.
const Section = "farEnd"

// LostName names the node-level condition of a helper that crashed or
// hung (entity NICHealthCheck farEnd).
const LostName = "farEnd"

// SaturatedCode is the error code of a far-end field's saturation.
func SaturatedCode(field string) string { return "peer-saturated:" + field }

// Config is what the check takes from the configuration.
type Config struct {
	// On: [farEnd] enabled and the check selected.
	On bool
	// Rows are the judged rows (countertable.FarEndTable).
	Rows []countertable.FarEndRow
	// XmitWaitBytesPerTick converts PortXmitWait ticks to bytes, for a
	// congestion row.
	XmitWaitBytesPerTick float64
}

// Check is the far-end check.
type Check struct {
	cfg     Config
	mem     *Memory
	seenGen uint64
	// seen is the last reading judged per port (its Seq): each once.
	seen map[string]uint64
}

// NewCheck returns the check with empty memory.
func NewCheck() *Check { return &Check{mem: NewMemory(), seen: map[string]uint64{}} }

func (*Check) Step() string     { return "far-end" }
func (*Check) Serves() []string { return []string{CheckName} }

// Memory is what the check remembers.
func (c *Check) Memory() *Memory { return c.mem }

// Configure applies the configuration; a row no longer judged, or the
// whole check switched off, clears what it raised.
func (c *Check) Configure(cfg Config) []event.Spec {
	c.cfg = cfg
	judged := map[string]bool{}
	for _, r := range cfg.Rows {
		judged[r.Def.Name] = true
		judged[SaturatedCode(r.Field)] = true
	}
	var specs []event.Spec
	for _, k := range c.mem.keys() {
		pm := c.mem.Ports[k]
		if pm == nil {
			continue
		}
		dev, port, _ := splitKey(k)
		for _, row := range slices.Sorted(maps.Keys(pm.Latched)) {
			if !cfg.On || !judged[row] {
				specs = append(specs, c.recovered(dev, port, pm, row, "no-longer-judged", "it is no longer judged ([farEnd] configuration)"))
				delete(pm.Latched, row)
			}
		}
		for _, f := range slices.Sorted(maps.Keys(pm.Saturated)) {
			if !cfg.On || !judged[SaturatedCode(f)] {
				specs = append(specs, c.unsaturated(dev, port, pm, f, "it is no longer judged"))
				delete(pm.Saturated, f)
			}
		}
	}
	if !cfg.On && c.mem.Lost != nil {
		specs = append(specs, c.restored("the far end is no longer read ([farEnd] enabled = false or the check is off)"))
	}
	// A new configuration judges the next reading afresh.
	c.seenGen = 0
	return specs
}

// Run judges the far end's latest reading, once per reading.
func (c *Check) Run(cy *checks.Cycle) {
	rd := cy.Obs.FarEnd
	if rd == nil || !c.cfg.On || rd.Gen == c.seenGen {
		return
	}
	c.seenGen = rd.Gen
	cy.Enter(CheckName)
	if specs := c.judgeHelper(rd); len(specs) > 0 {
		cy.Emit(specs...)
		cy.Changed()
	}
	for i := range rd.Ports {
		p := &rd.Ports[i]
		specs, changed := c.judgePort(p, portRate(cy, p.Device, p.Port))
		cy.Emit(specs...)
		if changed {
			cy.Changed()
		}
	}
	cy.ViewChanged()
}

func portRate(cy *checks.Cycle, dev string, port int) float64 {
	for _, p := range cy.Obs.Ports {
		if p.Device.Name == dev && p.Port.Num == port {
			return p.RateGbps
		}
	}
	return 0
}

// judgeHelper raises the monitoring condition of a helper that crashed or
// hung, and clears it when it answers again. A helper that cannot run on
// this host at all is no condition: the reader says it once.
func (c *Check) judgeHelper(rd *farend.Reading) []event.Spec {
	switch h := rd.Helper; {
	case h.Health == mad.Restarting && c.mem.Lost == nil:
		c.mem.Lost = &Lost{Since: rd.At, Reason: h.Reason}
		return []event.Spec{{
			Kind: event.KindFarEndLost, CheckName: CheckName, Check: LostName,
			Message:   "The far end of the InfiniBand ports is not read: " + h.Reason + "; it is started again after a backoff",
			ErrorCode: []string{string(event.KindFarEndLost)}, Metadata: map[string]string{"reason": h.Reason},
			Condition: condition.OfNode(LostName),
		}}
	case h.Health == mad.Running && c.mem.Lost != nil:
		return []event.Spec{c.restored(fmt.Sprintf("nichealth-mad answers again (%d started so far)", h.Starts))}
	}
	return nil
}

func (c *Check) restored(why string) event.Spec {
	since := c.mem.Lost.Since
	c.mem.Lost = nil
	return event.Spec{
		Kind: event.KindFarEndRestored, CheckName: CheckName, Check: LostName, IsHealthy: true,
		Message:   "The far end of the InfiniBand ports is read again: " + why,
		ErrorCode: []string{string(event.KindFarEndLost)}, Metadata: map[string]string{"lostSince": since.UTC().Format(time.RFC3339), "why": why},
		Condition: condition.OfNode(LostName),
	}
}

// judgePort follows one port's peer and judges its new counters.
func (c *Check) judgePort(p *farend.PortReading, rateGbps float64) ([]event.Spec, bool) {
	if !p.Found {
		return nil, false
	}
	k := portKey(p.Device, p.Port)
	pm := c.mem.Ports[k]
	var specs []event.Spec
	changed := false
	if pm == nil || pm.PeerGUID != p.Peer.NodeGUID || pm.PeerPort != p.Peer.Port {
		if pm != nil {
			// Recabled: what the old peer counted was about that link.
			why := fmt.Sprintf("the port is now cabled to %s port %d", p.Peer.Name, p.Peer.Port)
			for _, row := range slices.Sorted(maps.Keys(pm.Latched)) {
				specs = append(specs, c.recovered(p.Device, p.Port, pm, row, "peer-changed", why))
			}
			for _, f := range slices.Sorted(maps.Keys(pm.Saturated)) {
				specs = append(specs, c.unsaturated(p.Device, p.Port, pm, f, why))
			}
		}
		if pm == nil && len(c.mem.Ports) >= MaxPorts {
			return specs, false
		}
		pm = &PortMemory{PeerGUID: p.Peer.NodeGUID, PeerPort: p.Peer.Port}
		c.mem.Ports[k] = pm
		delete(c.seen, k)
		changed = true
	}
	if pm.PeerName != p.Peer.Name || pm.PeerLID != p.Peer.LID {
		pm.PeerName, pm.PeerLID, changed = p.Peer.Name, p.Peer.LID, true
	}
	if !p.Read || c.seen[k] == p.Seq {
		return specs, changed
	}
	if len(c.seen) >= MaxPorts {
		// Renamed devices leave keys behind; forgetting them costs one
		// re-baselining of the same reading (ReadAt not after At).
		clear(c.seen)
	}
	c.seen[k] = p.Seq
	values := p.Counters.Values()
	if pm.At.IsZero() || pm.Wide != p.Wide || !p.ReadAt.After(pm.At) {
		// The first reading of a peer (or of its other width) is its
		// baseline: what it counted before says nothing of this link now.
		pm.Values, pm.At, pm.Wide = values, p.ReadAt, p.Wide
		specs = append(specs, c.saturation(p, pm, values)...)
		return specs, true
	}
	elapsed := p.ReadAt.Sub(pm.At)
	for i := range c.cfg.Rows {
		r := &c.cfg.Rows[i]
		cur, prev := values[r.Index], pm.Values[r.Index]
		if cur < prev {
			// Cleared on the fabric side: a latch ends with it.
			if _, on := pm.Latched[r.Def.Name]; on {
				specs = append(specs, c.recovered(p.Device, p.Port, pm, r.Def.Name, "reset",
					fmt.Sprintf("the switch's %s went back from %d to %d (cleared on the fabric side)", r.Field, prev, cur)))
				delete(pm.Latched, r.Def.Name)
			}
			continue
		}
		if _, on := pm.Latched[r.Def.Name]; on {
			continue
		}
		rate, breach := judge(&r.Def, cur-prev, elapsed, rateGbps, c.cfg.XmitWaitBytesPerTick)
		if !breach {
			continue
		}
		if pm.Latched == nil {
			pm.Latched = map[string]time.Time{}
		}
		pm.Latched[r.Def.Name] = p.ReadAt
		specs = append(specs, c.breach(p, r, cur, prev, rate, elapsed))
	}
	specs = append(specs, c.saturation(p, pm, values)...)
	pm.Values, pm.At = values, p.ReadAt
	return specs, true
}

// judge applies a row's threshold to the increase over elapsed: delta
// as is, velocity per its unit, congestion as the share of the link's
// rate lost to backpressure.
func judge(d *countertable.Definition, delta uint64, elapsed time.Duration, rateGbps, bytesPerTick float64) (float64, bool) {
	secs := elapsed.Seconds()
	switch d.ThresholdType {
	case countertable.TypeDelta:
		return float64(delta) / secs, float64(delta) > d.Threshold
	case countertable.TypeVelocity:
		unit, ok := countertable.UnitDuration(d.VelocityUnit)
		if !ok {
			return 0, false
		}
		rate := float64(delta) / secs * unit.Seconds()
		return rate, rate > d.Threshold
	case countertable.TypeCongestion:
		if rateGbps <= 0 {
			return 0, false
		}
		pct := float64(delta) / secs * bytesPerTick * 8 / (rateGbps * 1e9) * 100
		return pct, pct > d.Threshold
	}
	return 0, false
}

// saturation raises a field stuck at its width's maximum, and clears it
// when it moves below: a saturated counter cannot show new errors.
func (c *Check) saturation(p *farend.PortReading, pm *PortMemory, values [17]uint64) []event.Spec {
	var specs []event.Spec
	var done [17]bool
	for i := range c.cfg.Rows {
		r := &c.cfg.Rows[i]
		if done[r.Index] {
			continue
		}
		done[r.Index] = true
		f := wire.Fields[r.Index]
		_, sat := pm.Saturated[r.Field]
		full := !p.Wide && values[r.Index] >= f.Max()
		switch {
		case full && !sat:
			if pm.Saturated == nil {
				pm.Saturated = map[string]time.Time{}
			}
			pm.Saturated[r.Field] = p.ReadAt
			specs = append(specs, event.Spec{
				Kind: event.KindPeerSaturated, CheckName: CheckName,
				Message: fmt.Sprintf("Direct-attached %s port %d: [%s == %d] is saturated (%d-bit field): visibility lost, new errors on this link are not counted; "+
					"ask the fabric team to clear the switch port's counters", p.Peer.Name, p.Peer.Port, r.Field, values[r.Index], f.Bits),
				ErrorCode: []string{SaturatedCode(r.Field)}, Device: p.Device, Port: p.Port,
				Metadata: peerMeta(p.Peer, map[string]string{"field": r.Field, "value": strconv.FormatUint(values[r.Index], 10),
					"bits": strconv.FormatUint(uint64(f.Bits), 10)}),
				Condition: condition.OfCounter(p.Device, p.Port, SaturatedCode(r.Field)),
			})
		case !full && sat:
			specs = append(specs, c.unsaturated(p.Device, p.Port, pm, r.Field, fmt.Sprintf("%s reads %d", r.Field, values[r.Index])))
			delete(pm.Saturated, r.Field)
		}
	}
	return specs
}

func (c *Check) breach(p *farend.PortReading, r *countertable.FarEndRow, cur, prev uint64, rate float64, elapsed time.Duration) event.Spec {
	d := &r.Def
	unit := d.VelocityUnit
	if d.ThresholdType != countertable.TypeVelocity {
		unit = countertable.UnitSecond
	}
	if d.ThresholdType == countertable.TypeCongestion {
		unit = "percent"
	}
	md := map[string]string{
		"counter": d.Name, "field": r.Field, "value": strconv.FormatUint(cur, 10), "previousValue": strconv.FormatUint(prev, 10),
		"delta": strconv.FormatUint(cur-prev, 10), "rate": strconv.FormatFloat(rate, 'f', 2, 64), "unit": unit,
		"threshold": strconv.FormatFloat(d.Threshold, 'g', -1, 64), "thresholdType": d.ThresholdType,
		"elapsed": elapsed.Round(time.Millisecond).String(), "description": d.Description,
	}
	return event.Spec{
		Kind: event.KindPeerBreach, CheckName: CheckName,
		// The classic check's own words (the slides' "Remote errors
		// check"), which the Nagios line repeats.
		Message:   fmt.Sprintf("Direct-attached %s port %d: [%s == %d]", p.Peer.Name, p.Peer.Port, r.Field, cur),
		ErrorCode: []string{r.Code()}, Device: p.Device, Port: p.Port,
		Metadata:  peerMeta(p.Peer, md),
		Condition: condition.OfCounter(p.Device, p.Port, r.Code()),
	}
}

// peerMeta adds the peer to md: who is at the far end.
func peerMeta(peer farend.Peer, md map[string]string) map[string]string {
	md["peerGUID"] = peer.NodeGUID
	md["peerPort"] = strconv.Itoa(peer.Port)
	md["peerName"] = peer.Name
	md["peerLID"] = strconv.Itoa(peer.LID)
	if peer.Description != "" {
		md["peerDescription"] = peer.Description
	}
	return md
}

func (c *Check) recovered(dev string, port int, pm *PortMemory, row, reason, why string) event.Spec {
	since := pm.Latched[row]
	code := countertable.PeerCode(row)
	return event.Spec{
		Kind: event.KindPeerRecovered, CheckName: CheckName, IsHealthy: true,
		Message: fmt.Sprintf("Port %s port %d: the far end (%s port %d) no longer reports %s: %s", dev, port,
			nameOr(pm), pm.PeerPort, row, why),
		ErrorCode: []string{code}, Device: dev, Port: port,
		Metadata: map[string]string{"counter": row, "reason": reason, "why": why, "breachedSince": since.UTC().Format(time.RFC3339),
			"peerGUID": pm.PeerGUID, "peerPort": strconv.Itoa(pm.PeerPort), "peerName": pm.PeerName},
		Condition: condition.OfCounter(dev, port, code),
	}
}

func (c *Check) unsaturated(dev string, port int, pm *PortMemory, field, why string) event.Spec {
	code := SaturatedCode(field)
	return event.Spec{
		Kind: event.KindPeerUnsaturated, CheckName: CheckName, IsHealthy: true,
		Message:   fmt.Sprintf("Port %s port %d: the far end's %s (%s port %d) counts again: %s", dev, port, field, nameOr(pm), pm.PeerPort, why),
		ErrorCode: []string{code}, Device: dev, Port: port,
		Metadata: map[string]string{"field": field, "why": why, "saturatedSince": pm.Saturated[field].UTC().Format(time.RFC3339),
			"peerGUID": pm.PeerGUID, "peerPort": strconv.Itoa(pm.PeerPort), "peerName": pm.PeerName},
		Condition: condition.OfCounter(dev, port, code),
	}
}

func nameOr(pm *PortMemory) string {
	if pm.PeerName != "" {
		return pm.PeerName
	}
	return pm.PeerGUID
}

// Errors of Acknowledge.
var (
	ErrNotLatched = errors.New("no latched far-end condition")
	ErrUnknown    = errors.New("not a far-end counter")
)

// IsCode reports whether counter is one of the check's (peer:<row>).
func IsCode(counter string) bool { return countertable.PeerRow(counter) != "" }

// Acknowledge is AcknowledgeReset for a far-end condition ("peer:<row>",
// or "" for every latched one of the port): the operator declares the
// link fixed; the latch clears, the last reading stays the baseline (the
// switch's counters are never cleared from here).
func (c *Check) Acknowledge(device string, port int, counter string, who string) ([]event.Spec, error) {
	pm := c.mem.Ports[portKey(device, port)]
	var rows []string
	switch row := countertable.PeerRow(counter); {
	case counter == "":
		if pm != nil {
			rows = slices.Sorted(maps.Keys(pm.Latched))
		}
	case row == "":
		return nil, fmt.Errorf("acknowledge %s on %s port %d: %w", counter, device, port, ErrUnknown)
	case pm != nil && !pm.Latched[row].IsZero():
		rows = []string{row}
	}
	if len(rows) == 0 || pm == nil {
		return nil, fmt.Errorf("acknowledge %q on %s port %d: %w", counter, device, port, ErrNotLatched)
	}
	var specs []event.Spec
	for _, row := range rows {
		s := c.recovered(device, port, pm, row, "acknowledged", "breach acknowledged by "+who)
		s.Metadata["acknowledgedBy"] = who
		specs = append(specs, s)
		delete(pm.Latched, row)
	}
	return specs, nil
}

// PortView is what the views show of a port's far-end conditions.
type PortView struct {
	Latched   []string // row names
	Saturated []string // field names
}

// View is a port's latched rows and saturated fields.
func (c *Check) View(device string, port int) PortView {
	pm := c.mem.Ports[portKey(device, port)]
	if pm == nil {
		return PortView{}
	}
	return PortView{Latched: slices.Sorted(maps.Keys(pm.Latched)), Saturated: slices.Sorted(maps.Keys(pm.Saturated))}
}

// Rename moves what the check remembers of a device to its new name.
func (c *Check) Rename(old, nw string) {
	for _, k := range c.mem.keys() {
		dev, port, _ := splitKey(k)
		if dev == old {
			c.mem.Ports[portKey(nw, port)] = c.mem.Ports[k]
			delete(c.mem.Ports, k)
		}
	}
	clear(c.seen)
}

// Section is the check's section of the state file.
func (c *Check) Section() string { return Section }

// Restore starts the memory from the state file's section.
func (c *Check) Restore(raw []byte) []string {
	return checks.RestoreSection(Section, raw, MemoryVersion, c.mem, func() { *c.mem = *NewMemory() }, c.mem.Validate)
}

// Marshal is the section to save.
func (c *Check) Marshal() ([]byte, error) { return json.Marshal(c.mem) }

// Replay applies one of the check's own events to the memory (the outbox
// is written before the state).
func (c *Check) Replay(e *event.Event) {
	if e.CheckName != CheckName {
		return
	}
	dev, port := e.Device(), 0
	port, _ = strconv.Atoi(e.Port())
	switch e.Kind {
	case event.KindFarEndLost:
		c.mem.Lost = &Lost{Since: e.GeneratedTimestamp, Reason: e.Metadata["reason"]}
		return
	case event.KindFarEndRestored:
		c.mem.Lost = nil
		return
	}
	if dev == "" || len(e.ErrorCode) != 1 {
		return
	}
	code := e.ErrorCode[0]
	pm := c.mem.Ports[portKey(dev, port)]
	if pm == nil {
		if e.IsHealthy || len(c.mem.Ports) >= MaxPorts {
			return
		}
		pp, _ := strconv.Atoi(e.Metadata["peerPort"])
		pm = &PortMemory{PeerGUID: e.Metadata["peerGUID"], PeerPort: pp, PeerName: e.Metadata["peerName"]}
		c.mem.Ports[portKey(dev, port)] = pm
	}
	switch e.Kind {
	case event.KindPeerBreach:
		if pm.Latched == nil {
			pm.Latched = map[string]time.Time{}
		}
		pm.Latched[countertable.PeerRow(code)] = e.GeneratedTimestamp
	case event.KindPeerRecovered:
		delete(pm.Latched, countertable.PeerRow(code))
	case event.KindPeerSaturated:
		if pm.Saturated == nil {
			pm.Saturated = map[string]time.Time{}
		}
		pm.Saturated[e.Metadata["field"]] = e.GeneratedTimestamp
	case event.KindPeerUnsaturated:
		delete(pm.Saturated, e.Metadata["field"])
	}
}

// Restate says, as events, the conditions the memory holds (a state file
// written before the health model).
func (c *Check) Restate() []checks.Restated {
	var out []checks.Restated
	for _, k := range c.mem.keys() {
		pm := c.mem.Ports[k]
		if pm == nil {
			continue
		}
		dev, port, _ := splitKey(k)
		for _, row := range slices.Sorted(maps.Keys(pm.Latched)) {
			code := countertable.PeerCode(row)
			out = append(out, checks.Restated{Since: pm.Latched[row], Spec: event.Spec{Kind: event.KindPeerBreach, CheckName: CheckName,
				Device: dev, Port: port, ErrorCode: []string{code},
				Message:   fmt.Sprintf("Direct-attached %s port %d: %s latched", nameOr(pm), pm.PeerPort, row),
				Metadata:  map[string]string{"counter": row, "peerGUID": pm.PeerGUID, "peerPort": strconv.Itoa(pm.PeerPort), "peerName": pm.PeerName},
				Condition: condition.OfCounter(dev, port, code)}})
		}
	}
	if c.mem.Lost != nil {
		out = append(out, checks.Restated{Since: c.mem.Lost.Since, Spec: event.Spec{Kind: event.KindFarEndLost, CheckName: CheckName, Check: LostName,
			Message: "The far end of the InfiniBand ports is not read: " + c.mem.Lost.Reason, ErrorCode: []string{string(event.KindFarEndLost)},
			Condition: condition.OfNode(LostName)}})
	}
	return out
}
