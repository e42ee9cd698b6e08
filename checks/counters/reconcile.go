package counters

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/nichealth/nichealthd/config/countertable"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
)

// Errors of Acknowledge.
var (
	// ErrNotLatched: the counter (or, for an empty counter name, every
	// counter of the port) is known but has no latched breach.
	ErrNotLatched = errors.New("no latched breach")
	// ErrNoSuchCounter: nothing is known about that counter on that port.
	ErrNoSuchCounter = errors.New("no such counter")
)

// Reconcile brings st in line with a new counter table (at start-up after
// the state is loaded, and after every configuration reload), so that a
// reload loses no window and no latch it need not lose:
//   - a counter that is no longer enabled (removed, or enabled = false):
//     its snapshot is dropped, and a latched breach is cleared with one
//     KindCounterRecovered spec saying why — nothing would ever clear it
//     otherwise;
//   - a counter whose definition is unchanged: untouched;
//   - a counter whose threshold, unit or severity changed: snapshot and
//     latch are kept. The held window completes at its original end and is
//     then judged by the new threshold over the real elapsed time; the latch
//     stays because the breach did happen — the operator clears it with a
//     counter reset or AcknowledgeReset;
//   - a counter whose path or threshold type changed (compared with the
//     table of the previous Reconcile call): its snapshot is dropped and
//     the next reading starts a fresh one without judging it, because the
//     old snapshot measured another file or was held for another rule; a
//     latch is kept, as above.
//
// Saturation marks of files no enabled counter reads are dropped too.
// Specs come in key order, so the result is deterministic.
func (e *Evaluator) Reconcile(st *Memory, newDefs []countertable.Definition) []event.Spec {
	if st == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	t := tableOf(newDefs)
	specs := resolveUnmonitored(st, t)
	redefined := map[string]bool{}
	for _, d := range newDefs {
		if old, ok := e.defs[d.Name]; ok && d.Enabled && (old.Path != d.Path || old.ThresholdType != d.ThresholdType) {
			redefined[d.Name] = true
		}
	}
	// A snapshot of a counter no longer read, or read from another file
	// or under another threshold type, measures nothing now.
	for key := range st.CounterSnapshots {
		if _, _, name, ok := ParseKey(key); ok && (!t.enabled[name] || redefined[name]) {
			delete(st.CounterSnapshots, key)
		}
	}
	// A saturation or congestion condition that nothing will judge again
	// is cleared, each with an event, so none stays raised forever.
	for _, key := range sortedKeys(st.Saturated) {
		if dev, port, name, ok := ParseKey(key); ok && !t.files[name] {
			specs = append(specs, unsaturatedSpec(name, dev, port, st.checkOf(key), st.Saturated[key],
				fmt.Sprintf("Port %s port %d: %s is no longer monitored (configuration changed); its saturation condition is cleared", dev, port, name)))
			delete(st.Saturated, key)
			st.raisedUnder(key, "")
		}
	}
	for _, key := range sortedKeys(st.Congested) {
		dev, port, name, ok := ParseKey(key)
		if !ok || t.congestion[name] {
			continue
		}
		since, check := st.Congested[key], st.checkOf(key)
		delete(st.Congested, key)
		st.raisedUnder(key, "")
		specs = append(specs, event.Spec{
			Kind: event.KindCongestionCleared, CheckName: check, IsHealthy: true,
			ErrorCode: []string{CongestionErrorCode}, Device: dev, Port: port,
			Message:   fmt.Sprintf("Port %s port %d: %s is no longer judged for congestion (configuration changed); its congestion condition is cleared", dev, port, name),
			Metadata:  map[string]string{"counter": name, "congestedSince": since.UTC().Format(time.RFC3339)},
			Condition: condition.OfCounter(dev, port, CongestionErrorCode),
		})
	}
	// In-memory entries are kept (they remember that the counter was seen,
	// so a reload never repeats a reboot baseline) but forget their last
	// value when the counter stops being read or reads something else.
	for k, ent := range e.mem {
		if !t.enabled[k.name] || redefined[k.name] {
			ent.hasLast, ent.hasRate = false, false
		}
	}
	e.defs = make(map[string]countertable.Definition, len(newDefs))
	for _, d := range newDefs {
		e.defs[d.Name] = d
	}
	return specs
}

// table is what Reconcile needs to know of a counter table by name.
type table struct {
	enabled, known, files, congestion map[string]bool
}

func tableOf(defs []countertable.Definition) table {
	t := table{enabled: make(map[string]bool, len(defs)), known: make(map[string]bool, len(defs)), files: make(map[string]bool, len(defs)),
		congestion: map[string]bool{}}
	for _, d := range defs {
		t.known[d.Name] = true
		if d.Enabled {
			t.enabled[d.Name] = true
			t.files[countertable.FileName(d.Path)] = true
			if d.ThresholdType == countertable.TypeCongestion {
				t.congestion[d.Name] = true
			}
		}
	}
	return t
}

// resolveUnmonitored ends the latches of counters the table no longer
// enables, each with a recovery that says why.
func resolveUnmonitored(st *Memory, t table) []event.Spec {
	var specs []event.Spec
	for _, key := range sortedKeys(st.BreachFlags) {
		dev, port, name, ok := ParseKey(key)
		if !ok || t.enabled[name] {
			continue
		}
		flag := st.BreachFlags[key]
		delete(st.BreachFlags, key)
		if !flag.Breached {
			continue
		}
		why := "removed from configuration"
		if t.known[name] {
			why = "disabled by configuration"
		}
		specs = append(specs, reasonRecoverySpec(name, dev, port, flag,
			fmt.Sprintf("Counter %s on port %s port %d no longer monitored (%s); breach cleared", name, dev, port, why),
			"unmonitored"))
	}
	return specs
}

// Acknowledge is D-Bus AcknowledgeReset: the operator declares a latched
// breach remediated without clearing the hardware counters (DESIGN.md
// section 5). Each acknowledged counter is re-baselined at the last value
// read and the tick it was read at (so only errors after that reading
// count), its latch is cleared, and
// one KindCounterRecovered spec names it and who acknowledged it (who is
// printed as given, e.g. "uid 0").
//
// counter == "" acknowledges every latched counter of the port. Outcomes:
//   - specs, nil: acknowledged (the caller persists st, then emits);
//   - nil, ErrNotLatched: the counter is known but not latched, or the port
//     has no latched counter;
//   - nil, ErrNoSuchCounter: the counter was never seen on that port.
func (e *Evaluator) Acknowledge(st *Memory, device string, port int, counter string, now time.Time, who string) ([]event.Spec, error) {
	if st == nil {
		return nil, fmt.Errorf("acknowledge %s port %d: %w", device, port, ErrNoSuchCounter)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var names []string
	if counter == "" {
		for _, key := range sortedKeys(st.BreachFlags) {
			dev, p, name, ok := ParseKey(key)
			if ok && dev == device && p == port && st.BreachFlags[key].Breached {
				names = append(names, name)
			}
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("acknowledge %s port %d: %w on this port", device, port, ErrNotLatched)
		}
	} else {
		if twin := twinLatched(st, device, port, counter); twin != "" && !st.BreachFlags[Key(device, port, counter)].Breached {
			// The link down this counter witnessed is latched under its
			// twin: acknowledging either ends it.
			counter = twin
		}
		key := Key(device, port, counter)
		if !st.BreachFlags[key].Breached {
			_, snap := st.CounterSnapshots[key]
			_, mem := e.mem[memKey{device, port, counter}]
			if snap || mem {
				return nil, fmt.Errorf("acknowledge %s on %s port %d: %w", counter, device, port, ErrNotLatched)
			}
			return nil, fmt.Errorf("acknowledge %s on %s port %d: %w (no reading of it on this port)", counter, device, port, ErrNoSuchCounter)
		}
		names = []string{counter}
	}

	specs := make([]event.Spec, 0, len(names))
	for _, name := range names {
		key := Key(device, port, name)
		flag := st.BreachFlags[key]
		snap := st.CounterSnapshots[key]
		base := CounterSnapshot{Value: snap.Value, Timestamp: now}
		if ent, ok := e.mem[memKey{device, port, name}]; ok && ent.hasLast {
			// The last reading, at the tick it was taken: the next
			// window is one tick later, not one tick after the
			// acknowledgement (DESIGN.md difference 14).
			base = CounterSnapshot{Value: ent.last, Timestamp: ent.lastAt}
			ent.hasRate, ent.hasLatchBase = false, false
		}
		if st.CounterSnapshots == nil {
			st.CounterSnapshots = map[string]CounterSnapshot{}
		}
		st.CounterSnapshots[key] = base
		delete(st.BreachFlags, key)
		specs = append(specs, reasonRecoverySpec(name, device, port, flag,
			fmt.Sprintf("Counter %s recovered on port %s port %d (breach acknowledged by %s)", name, device, port, who),
			"acknowledged"))
		specs[len(specs)-1].Metadata["acknowledgedBy"] = who
	}
	return specs, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
