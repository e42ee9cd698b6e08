package counters

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/config/countertable"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
	"github.com/nichealth/nichealthd/topology"
)

// CheckClearedSpec is the first event of a check after a host reboot: one
// healthy, check-scoped event with no entities that clears everything the
// check reported during the previous boot (DESIGN.md difference 5; the
// node may have come back with other NICs, so per-port events alone could
// leave conditions for vanished ports behind). The daemon emits it before
// the per-counter baselines.
func CheckClearedSpec(checkName string) event.Spec {
	return event.Spec{
		Kind:      event.KindCheckCleared,
		CheckName: checkName,
		IsHealthy: true,
		Message:   checkName + ": host rebooted (boot ID changed); all previous conditions of this check are cleared",
		Condition: condition.OfNode(""),
	}
}

// baselineSpec is a counter's healthy baseline after a reboot (or a
// start without state), under the check its breach would be reported
// under (event.CounterCheckFor: DESIGN.md difference 2, counter seed
// 11.1): a fatal counter's under the state check, a non-fatal one's under
// the degradation check, so NVSentinel's condition of each check hears of
// exactly its own counters.
func baselineSpec(name, device string, port int, check string, value uint64, fresh bool) event.Spec {
	msg := fmt.Sprintf("Counter %s healthy after reboot on port %s port %d", name, device, port)
	reason := "reboot"
	if fresh {
		msg = fmt.Sprintf("Counter %s healthy on port %s port %d (first reading; no previous state)", name, device, port)
		reason = "no-previous-state"
	}
	return event.Spec{
		Kind:      event.KindCounterBaseline,
		CheckName: check,
		IsHealthy: true,
		Message:   msg,
		ErrorCode: []string{name},
		Device:    device,
		Port:      port,
		Metadata: map[string]string{
			"counter": name,
			"value":   strconv.FormatUint(value, 10),
			"reason":  reason,
		},
		Condition: condition.OfCounter(device, port, name),
	}
}

// recoveryCheck is the check a recovery must carry: the one the breach was
// reported under (seed 11.1), so it clears the right condition. A latch
// that does not say (a hand-edited state file) is taken as reported where
// this build reports it, under linkLayer's checks.
func recoveryCheck(flag BreachFlag, linkLayer string) string {
	if flag.CheckName != "" {
		return flag.CheckName
	}
	return event.CounterCheckFor(linkLayer, flag.IsFatal)
}

func resetRecoverySpec(name, device string, port int, flag BreachFlag, linkLayer string, from, to uint64) event.Spec {
	return event.Spec{
		Kind:      event.KindCounterRecovered,
		CheckName: recoveryCheck(flag, linkLayer),
		IsHealthy: true,
		Message: fmt.Sprintf("Counter %s recovered on port %s port %d (counter reset from %d to %d)",
			name, device, port, from, to),
		ErrorCode: []string{name},
		Device:    device,
		Port:      port,
		Metadata: map[string]string{
			"counter":       name,
			"value":         strconv.FormatUint(to, 10),
			"previousValue": strconv.FormatUint(from, 10),
			"reason":        "reset",
			"breachedSince": flag.Since.UTC().Format(time.RFC3339),
		},
		Condition: condition.OfCounter(device, port, name),
	}
}

func reasonRecoverySpec(name, device string, port int, flag BreachFlag, message, reason string) event.Spec {
	return event.Spec{
		Kind:      event.KindCounterRecovered,
		CheckName: recoveryCheck(flag, topology.LinkLayerInfiniBand),
		IsHealthy: true,
		Message:   message,
		ErrorCode: []string{name},
		Device:    device,
		Port:      port,
		Metadata: map[string]string{
			"counter":       name,
			"reason":        reason,
			"breachedSince": flag.Since.UTC().Format(time.RFC3339),
		},
		Condition: condition.OfCounter(device, port, name),
	}
}

// SaturatedErrorCode is the error code of a counter file's saturation
// condition and of its clear: "saturated:<file>", never the counter's own
// name, which its latched breach carries (a clear by entity and error code
// must not remove that breach).
func SaturatedErrorCode(file string) string { return "saturated:" + file }

func saturatedSpec(s *Sample, check string, limit uint64, bits int) event.Spec {
	name := countertable.FileName(s.Def.Path)
	return event.Spec{
		Kind:      event.KindCounterSaturated,
		CheckName: check,
		Message: fmt.Sprintf("Port %s port %d: %s is saturated at %d (%d-bit counter): visibility lost, it can no longer show new errors; "+
			"clear the port counters (perfquery -x) to restore detection", s.Device, s.Port, name, limit, bits),
		ErrorCode: []string{SaturatedErrorCode(name)},
		Device:    s.Device,
		Port:      s.Port,
		Metadata: map[string]string{
			"counter": name,
			"value":   strconv.FormatUint(s.Value, 10),
			"bits":    strconv.Itoa(bits),
			"path":    s.Def.Path,
		},
		Condition: condition.OfCounter(s.Device, s.Port, SaturatedErrorCode(name)),
	}
}

// unsaturatedSpec clears the saturation condition of file.
func unsaturatedSpec(file, device string, port int, check string, since time.Time, message string) event.Spec {
	return event.Spec{
		Kind: event.KindCounterUnsaturated, CheckName: check, IsHealthy: true, Message: message,
		ErrorCode: []string{SaturatedErrorCode(file)}, Device: device, Port: port,
		Metadata:  map[string]string{"counter": file, "saturatedSince": since.UTC().Format(time.RFC3339)},
		Condition: condition.OfCounter(device, port, SaturatedErrorCode(file)),
	}
}

// breachSpec builds the seed 11.1 message:
// "Port mlx5_0 port 1: symbol_error - <description> (value=100, delta=100, rate=20.00/sec)".
// Delta counters give their rate per second over the poll interval. A
// reading at the counter's saturation value makes delta and rate lower
// bounds ("rate>="), since increments past the maximum were not counted.
func (e *Evaluator) breachSpec(s *Sample, check string, delta uint64, rate, perSec float64, elapsed time.Duration, lowerBound bool) event.Spec {
	d := s.Def
	unit := d.VelocityUnit
	if d.ThresholdType != countertable.TypeVelocity {
		unit = countertable.UnitSecond
	}
	head := breachHead(s.Device, s.Port, d)
	reading := breachReading(d, s.Value, delta, rate, lowerBound)
	msg := head + " (" + reading + ")"

	md := map[string]string{
		"counter":       d.Name,
		"value":         strconv.FormatUint(s.Value, 10),
		"delta":         strconv.FormatUint(delta, 10),
		"rate":          strconv.FormatFloat(rate, 'f', 2, 64),
		"unit":          unit,
		"threshold":     strconv.FormatFloat(d.Threshold, 'g', -1, 64),
		"thresholdType": d.ThresholdType,
		"window":        d.Window().String(),
		"elapsed":       elapsed.Round(time.Millisecond).String(),
		"path":          d.Path,
	}
	if lowerBound {
		md["lowerBound"] = "true"
	}
	if d.ThresholdType == countertable.TypeBER {
		msg = berBreach(head, s, delta, rate, elapsed, md)
	} else {
		md["reading"] = reading
	}
	if twin := e.twinWitnesses(d.Name, s.LinkLayer); twin != "" {
		md["witness"] = twin
		msg += "; " + twin + " counts the same link down and raises no second condition"
	}
	if countertable.IsXmitWait(d) {
		gbps, pct := LostBandwidth(perSec, e.bytesPerTick, s.PortRateGbps)
		md["lostGbps"] = strconv.FormatFloat(gbps, 'f', 1, 64)
		md["bytesPerTick"] = strconv.FormatFloat(e.bytesPerTick, 'g', -1, 64)
		if s.PortRateGbps > 0 {
			md["lostPercent"] = strconv.FormatFloat(pct, 'f', 1, 64)
			md["portRateGbps"] = strconv.FormatFloat(s.PortRateGbps, 'g', -1, 64)
			msg += fmt.Sprintf(", est. lost bandwidth %s%.1f Gb/s (%.1f%% of %s Gb/s)",
				lowerPrefix(lowerBound), gbps, pct, strconv.FormatFloat(s.PortRateGbps, 'g', -1, 64))
		} else {
			msg += fmt.Sprintf(", est. lost bandwidth %s%.1f Gb/s (port rate unknown)", lowerPrefix(lowerBound), gbps)
		}
	}
	return event.Spec{
		Kind:      event.KindCounterBreach,
		CheckName: check,
		IsFatal:   d.IsFatal,
		Message:   msg,
		ErrorCode: []string{d.Name},
		Device:    s.Device,
		Port:      s.Port,
		Metadata:  md,
		Condition: condition.OfCounter(s.Device, s.Port, d.Name),
	}
}

// breachHead is "Port mlx5_0 port 1: symbol_error - <description>".
func breachHead(device string, port int, d *countertable.Definition) string {
	return fmt.Sprintf("Port %s port %d: %s", device, port, RuleText(d))
}

// RuleText names a counter's rule as every breach message does, at both
// ends of a cable: "symbol_error - <description>".
func RuleText(d *countertable.Definition) string {
	if d.Description != "" {
		return d.Name + " - " + d.Description
	}
	return d.Name
}

// ThresholdText is a rule's threshold and window as messages say it:
// "> 10/sec", "> 120/hour", "> 0 per read" for a delta, "> 10% of the
// link lost over a minute" for congestion (never "per read": it is judged
// over its window).
func ThresholdText(d *countertable.Definition) string {
	th := strconv.FormatFloat(d.Threshold, 'g', -1, 64)
	switch d.ThresholdType {
	case countertable.TypeVelocity:
		return "> " + th + unitSuffix(d.VelocityUnit)
	case countertable.TypeCongestion:
		return "> " + th + "% of the link lost over a " + d.VelocityUnit
	}
	return "> " + th + " per read"
}

// UnitSuffix is how a rate in a velocity unit is printed ("/sec",
// "/min", "/hour").
func UnitSuffix(unit string) string { return unitSuffix(unit) }

// breachReading is what a breach read, as its message says it:
// "value=100, delta=100, rate=20.00/sec" (seed 11.1). A reading at the
// counter's saturation value makes delta and rate lower bounds (">=").
func breachReading(d *countertable.Definition, value, delta uint64, rate float64, lowerBound bool) string {
	unit := d.VelocityUnit
	if d.ThresholdType != countertable.TypeVelocity {
		unit = countertable.UnitSecond
	}
	cmp := "="
	if lowerBound {
		cmp = ">="
	}
	return fmt.Sprintf("value=%d, delta%s%d, rate%s%.2f%s", value, cmp, delta, cmp, rate, unitSuffix(unit))
}

// LatchedMessage is what a latched breach says while it holds: what
// latched, when, and what the counter read at the breach; never a rate
// that is no longer true (the live rate is the counter's own).
func LatchedMessage(device string, port int, d *countertable.Definition, fl BreachFlag) string {
	msg := breachHead(device, port, d) + ": latched since " + fl.Since.UTC().Format(time.RFC3339)
	if fl.Reading != "" {
		msg += " (at the breach: " + fl.Reading + ")"
	}
	return msg
}

func lowerPrefix(lowerBound bool) string {
	if lowerBound {
		return ">="
	}
	return ""
}

// maxBaselineCodes is how many counters one folded baseline names: the
// event bound's number of error codes (event), so none is cut.
const maxBaselineCodes = 16

// FoldBaselines folds the per-counter baselines among specs[from:] into one
// healthy event per port and check, naming every counter as an error
// code (several when a port has more counters than one event may name).
//
// Seed 6.5 asks for a healthy baseline of every counter after a reboot so
// that stale breach conditions clear on the platform; NVSentinel's
// connector clears, for a healthy event, every message naming all its
// entities and one of its error codes (DESIGN.md difference 13), so one
// event per port clears exactly what one per counter did. After the
// check-scoped clear that opens the boot (difference 5) those events
// clear nothing more: 195 events of a DGX H100's fresh start told no one
// anything, 12 to 16 say the same. The other specs keep their order; a
// port's folded baseline stands where its first one stood.
func FoldBaselines(specs []event.Spec, from int) []event.Spec {
	type portKey struct {
		check, device string
		port          int
	}
	groups := map[portKey][]int{}
	// firstOf: where each port's first baseline stands, and its key.
	firstOf := map[int]portKey{}
	for i := from; i < len(specs); i++ {
		s := &specs[i]
		if s.Kind != event.KindCounterBaseline {
			continue
		}
		k := portKey{s.CheckName, s.Device, s.Port}
		if _, seen := groups[k]; !seen {
			firstOf[i] = k
		}
		groups[k] = append(groups[k], i)
	}
	if len(firstOf) == 0 {
		return specs
	}
	// A new slice: a port's folded baselines may outnumber the specs
	// already read past, so folding in place could overwrite unread ones.
	out := make([]event.Spec, from, len(specs))
	copy(out, specs[:from])
	for i := from; i < len(specs); i++ {
		s := specs[i]
		if s.Kind != event.KindCounterBaseline {
			out = append(out, s)
			continue
		}
		k, first := firstOf[i]
		if !first {
			continue
		}
		idx, ok := groups[k]
		if !ok {
			continue
		}
		for lo := 0; lo < len(idx); lo += maxBaselineCodes {
			out = append(out, foldedBaseline(specs, idx[lo:min(lo+maxBaselineCodes, len(idx))]))
		}
	}
	return out
}

// foldedBaseline is one healthy baseline for the counters at idx of one
// port.
func foldedBaseline(specs []event.Spec, idx []int) event.Spec {
	first := specs[idx[0]]
	names := make([]string, 0, len(idx))
	values := make([]string, 0, len(idx))
	for _, i := range idx {
		names = append(names, specs[i].Metadata["counter"])
		values = append(values, specs[i].Metadata["counter"]+"="+specs[i].Metadata["value"])
	}
	why := "after reboot"
	if first.Metadata["reason"] == "no-previous-state" {
		why = "(first reading; no previous state)"
	}
	return event.Spec{
		Kind:      event.KindCounterBaseline,
		CheckName: first.CheckName,
		IsHealthy: true,
		Message: fmt.Sprintf("Counters healthy %s on port %s port %d: %s", why, first.Device, first.Port,
			strings.Join(names, ", ")),
		ErrorCode: names,
		Device:    first.Device,
		Port:      first.Port,
		Metadata: map[string]string{
			"counters": strings.Join(names, ","),
			"values":   strings.Join(values, ","),
			"reason":   first.Metadata["reason"],
		},
		Condition: condition.OfCounter(first.Device, first.Port, event.FoldedBaselineName),
	}
}
