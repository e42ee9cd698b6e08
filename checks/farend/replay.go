package farend

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/checks/counters"
	"github.com/nichealth/nichealthd/checks/latch"
	"github.com/nichealth/nichealthd/config/countertable"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
	"github.com/nichealth/nichealthd/mad/wire"
)

// Errors of Acknowledge.
var (
	ErrNotLatched = errors.New("no latched far-end condition")
	ErrUnknown    = errors.New("not a far-end counter")
)

// saturatedField reads a saturation code back ("" when code is not one).
func saturatedField(code string) string {
	f, ok := strings.CutPrefix(code, "peer-saturated:")
	if !ok || wire.FieldIndex(f) < 0 {
		return ""
	}
	return f
}

// IsCode reports whether counter is one of the check's acknowledgeable
// codes: peer:<row> (a latched breach, peer:unstable) or
// peer-saturated:<field> (a saturated field).
func IsCode(counter string) bool {
	return countertable.PeerRow(counter) != "" || saturatedField(counter) != ""
}

// Acknowledge is AcknowledgeReset for a far-end condition: "peer:<row>"
// (the operator declares the link fixed: the latch clears, the last
// reading stays the baseline, the switch's counters are never cleared
// from here), "peer-saturated:<field>" (the operator takes note that the
// switch port's field is blind: the condition clears and is raised again
// only if the field is seen to move and saturate again), or "" for every
// one of the port.
func (c *Check) Acknowledge(device string, port int, counter string, who string) ([]event.Spec, error) {
	pm := c.mem.Ports[latch.PortOf(device, port)]
	var rows, fields []string
	switch row, field := countertable.PeerRow(counter), saturatedField(counter); {
	case counter == "":
		if pm != nil {
			rows, fields = slices.Sorted(maps.Keys(pm.Latched)), slices.Sorted(maps.Keys(pm.Saturated))
		}
	case row == "" && field == "":
		return nil, fmt.Errorf("acknowledge %s on %s port %d: %w", counter, device, port, ErrUnknown)
	case pm != nil && row != "" && !pm.Latched[row].IsZero():
		rows = []string{row}
	case pm != nil && field != "" && !pm.Saturated[field].IsZero():
		fields = []string{field}
	}
	if len(rows)+len(fields) == 0 || pm == nil {
		return nil, fmt.Errorf("acknowledge %q on %s port %d: %w", counter, device, port, ErrNotLatched)
	}
	var specs []event.Spec
	for _, row := range rows {
		s := c.recovered(device, port, pm, row, "acknowledged", "breach acknowledged by "+who)
		s.Metadata["acknowledgedBy"] = who
		specs = append(specs, s)
		delete(pm.Latched, row)
		if w := pm.Windows[row]; w != nil {
			w.Restart(pm.At, pm.Values[rowIndex(c.cfg.Rows, row)])
		}
		if row == UnstableRow {
			pm.Peers = pm.Peers[max(0, len(pm.Peers)-1):]
		}
	}
	for _, f := range fields {
		s := c.unsaturated(device, port, pm, f, "saturation acknowledged by "+who+
			"; raised again only if the field is seen to move (cleared on the fabric side) and saturate again")
		s.Metadata["acknowledgedBy"] = who
		s.Metadata["reason"] = "acknowledged"
		specs = append(specs, s)
		pm.ack(f, pm.Saturated[f])
		delete(pm.Saturated, f)
	}
	return specs, nil
}

func rowIndex(rows []countertable.FarEndRow, row string) int {
	for _, r := range rows {
		if r.Def.Name == row {
			return fieldIndex(&r)
		}
	}
	return 0
}

func (pm *PortMemory) ack(field string, at time.Time) {
	if pm.SaturationAcked == nil {
		pm.SaturationAcked = map[string]time.Time{}
	}
	pm.SaturationAcked[field] = at
}

// PortView is what the views show of a port's far-end conditions.
type PortView struct {
	Latched   []string // row names (UnstableRow for peer churn)
	Saturated []string // field names
	// Codes are the conditions' error codes, as nichealthctl ack takes
	// them: peer:<row>, peer-saturated:<field>.
	Codes []string
	// Witness is the last far-end increment taken as a local episode.
	Witness *Witness
}

// View is a port's latched rows and saturated fields.
func (c *Check) View(device string, port int) PortView {
	pm := c.mem.Ports[latch.PortOf(device, port)]
	if pm == nil {
		return PortView{}
	}
	v := PortView{Latched: slices.Sorted(maps.Keys(pm.Latched)), Saturated: slices.Sorted(maps.Keys(pm.Saturated)), Witness: pm.Witness}
	for _, r := range v.Latched {
		v.Codes = append(v.Codes, countertable.PeerCode(r))
	}
	for _, f := range v.Saturated {
		v.Codes = append(v.Codes, SaturatedCode(f))
	}
	return v
}

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
	if dev == "" || len(e.ErrorCode) != 1 || e.Metadata["reason"] == "local-episode" {
		return
	}
	code := e.ErrorCode[0]
	pm := c.mem.Ports[latch.PortOf(dev, port)]
	if pm == nil {
		if e.IsHealthy || len(c.mem.Ports) >= MaxPorts {
			return
		}
		pp, _ := strconv.Atoi(e.Metadata["peerPort"])
		pm = &PortMemory{PeerGUID: e.Metadata["peerGUID"], PeerPort: pp, PeerName: e.Metadata["peerName"]}
		c.mem.Ports[latch.PortOf(dev, port)] = pm
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
		f := e.Metadata["field"]
		if e.Metadata["acknowledgedBy"] != "" && saturatedField(SaturatedCode(f)) != "" {
			pm.ack(f, e.GeneratedTimestamp)
		}
		delete(pm.Saturated, f)
	}
}

// Restate says, as events, the conditions the memory holds (a state file
// written before the health model), each with its peer: code and its
// rule's words.
func (c *Check) Restate() []checks.Restated {
	var out []checks.Restated
	for _, k := range c.mem.Ports.Keys() {
		pm := c.mem.Ports[k]
		if pm == nil {
			continue
		}
		dev, port := k.Device, k.Port
		for _, row := range slices.Sorted(maps.Keys(pm.Latched)) {
			code := countertable.PeerCode(row)
			out = append(out, checks.Restated{Since: pm.Latched[row], Spec: event.Spec{Kind: event.KindPeerBreach, CheckName: CheckName,
				Device: dev, Port: port, ErrorCode: []string{code},
				Message: fmt.Sprintf("Direct-attached %s port %d: %s latched since %s", nameOr(pm), pm.PeerPort, c.ruleWords(row),
					pm.Latched[row].UTC().Format(time.RFC3339)),
				Metadata:  map[string]string{"counter": row, "peerGUID": pm.PeerGUID, "peerPort": strconv.Itoa(pm.PeerPort), "peerName": pm.PeerName},
				Condition: condition.OfCounter(dev, port, code)}})
		}
		for _, f := range slices.Sorted(maps.Keys(pm.Saturated)) {
			code := SaturatedCode(f)
			out = append(out, checks.Restated{Since: pm.Saturated[f], Spec: event.Spec{Kind: event.KindPeerSaturated, CheckName: CheckName,
				Device: dev, Port: port, ErrorCode: []string{code},
				Message: fmt.Sprintf("Direct-attached %s port %d: %s saturated since %s: visibility lost; ask the fabric team to run perfquery -R %d %d",
					nameOr(pm), pm.PeerPort, f, pm.Saturated[f].UTC().Format(time.RFC3339), pm.PeerLID, pm.PeerPort),
				Metadata:  map[string]string{"field": f, "peerGUID": pm.PeerGUID, "peerPort": strconv.Itoa(pm.PeerPort), "peerName": pm.PeerName},
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

// ruleWords names a latched row as its breach did.
func (c *Check) ruleWords(row string) string {
	if row == UnstableRow {
		return "peer unstable"
	}
	for i := range c.cfg.Rows {
		if d := &c.cfg.Rows[i].Def; d.Name == row {
			return counters.RuleText(d) + " (rule " + counters.ThresholdText(d) + ")"
		}
	}
	return row
}

// JudgedRows are the counter rows the check judges, by the PortCounters
// field they read (field → row names, in the table's order): what the
// views mark as judged is what the check judges, not a second reading of
// the configuration.
func (c *Check) JudgedRows() map[string][]string {
	out := map[string][]string{}
	for _, r := range c.cfg.Rows {
		out[r.Field] = append(out[r.Field], r.Def.Name)
	}
	return out
}
