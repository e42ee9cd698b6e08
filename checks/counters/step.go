package counters

import (
	"github.com/nichealth/nichealthd/config/countertable"
	"github.com/nichealth/nichealthd/event"
)

// evaluation is one reading of one counter on its way through seed 10.4.
type evaluation struct {
	e       *Evaluator
	st      *Memory
	s       Sample
	ent     *memEntry
	check   string
	snap    CounterSnapshot
	hasSnap bool
	flag    BreachFlag
	hasFlag bool
	specs   []event.Spec
	changed bool
}

// setSnap re-baselines the counter at the value read.
func (ev *evaluation) setSnap() {
	if !ev.hasSnap || ev.snap.Value != ev.s.Value {
		ev.changed = true
	}
	ev.st.CounterSnapshots[ev.ent.key] = CounterSnapshot{Value: ev.s.Value, Timestamp: ev.s.Now}
}

// step applies seed 10.4 steps 2 to 5: a reboot's baseline, a changed
// definition, a reset (with the recovery of a latched breach), a first
// reading, a latch that holds, or the judgement of delta and velocity.
func (ev *evaluation) step(rebootDetected bool) {
	s, ent, d := &ev.s, ev.ent, ev.s.Def
	cur := s.Value
	breached := ev.hasFlag && ev.flag.Breached
	switch {
	case rebootDetected && !ent.seen:
		ev.specs = append(ev.specs, baselineSpec(d.Name, s.Device, s.Port, event.CounterCheckFor(s.LinkLayer, d.IsFatal), cur, ev.e.freshStart))
		ev.setSnap()
		ent.hasRate = false
	case ent.seen && ent.path != d.Path:
		ev.setSnap()
		ent.hasRate = false
	case ent.fresh:
		// The device came back (driver reload, hot plug): its link went
		// down with it, which is not a fault, so the reading is a new
		// baseline. Counters that restarted still end a latch.
		ent.fresh = false
		if (ent.hasLast && cur < ent.last) || (ev.hasSnap && cur < ev.snap.Value) {
			ev.recoverOnReset(breached)
		}
		ev.setSnap()
		ent.hasRate = false
	case (ent.hasLast && cur < ent.last) || (ev.hasSnap && cur < ev.snap.Value):
		ev.recoverOnReset(breached)
		ent.hasRate = false
		// DESIGN.md difference 11 (seed 6.2 over 10.4 step 3): what the
		// counter reads after a reset is what happened since, so it is
		// judged as the delta: a link-down between an admin's counter
		// reset and the next poll is a link-down, as the flap rule counts
		// it.
		// The reset happened after the last reading: what is read now
		// accumulated since then, and a new window starts there.
		base := CounterSnapshot{Timestamp: s.Now}
		switch {
		case ent.hasLast && !ent.lastAt.IsZero():
			base.Timestamp = ent.lastAt
		case ev.hasSnap:
			base.Timestamp = ev.snap.Timestamp
		}
		ev.st.CounterSnapshots[ent.key] = base
		ev.snap, ev.hasSnap, ev.changed = base, true, true
		if ent.seen && ent.typ != d.ThresholdType {
			// Measured under another rule: start afresh, unjudged.
			ev.setSnap()
			return
		}
		sp, _ := ev.e.judge(ev.st, s, ent, base)
		if sp != nil {
			ev.specs = append(ev.specs, *sp)
		}
	case !ev.hasSnap:
		ev.setSnap()
	case breached && d.ThresholdType == countertable.TypeBER && ent.seen && ent.typ == countertable.TypeBER:
		ev.berHeld()
	case breached:
		// Latched (seed 6.3): only a counter reset, a reboot, an
		// acknowledgement or disabling the counter ends it. Its rate stays
		// live in the views all the same.
		ev.latchedRate()
	case ent.seen && ent.typ != d.ThresholdType:
		ev.setSnap()
		ent.hasRate = false
	default:
		sp, changed := ev.e.judge(ev.st, s, ent, ev.snap)
		ev.changed = changed
		if sp != nil {
			ev.specs = append(ev.specs, *sp)
		}
	}
}

// latchedRate keeps a latched counter's rate live (a burst of 5000/sec
// latched symbol_error, and the views said 5000/sec a minute later, after
// the burst had ended): measured as an unlatched counter of its type would be (a delta
// counter over the last tick, a velocity counter over its full window,
// never extrapolated) from a window of its own, judging nothing.
func (ev *evaluation) latchedRate() {
	s, ent, d := &ev.s, ev.ent, ev.s.Def
	if d.ThresholdType != countertable.TypeDelta && d.ThresholdType != countertable.TypeVelocity {
		return // ber is judged while breached (berHeld); congestion never latches
	}
	if !ent.hasLatchBase {
		ent.latchBase, ent.hasLatchBase = CounterSnapshot{Value: s.Value, Timestamp: s.Now}, true
		if ent.hasLast && ent.last <= s.Value && !ent.lastAt.After(s.Now) {
			ent.latchBase = CounterSnapshot{Value: ent.last, Timestamp: ent.lastAt}
		}
		if !ent.latchBase.Timestamp.Before(s.Now) {
			return // nothing to measure yet
		}
	}
	base := ent.latchBase
	var m measure
	if d.ThresholdType == countertable.TypeVelocity {
		var w windowState
		m, w = velocity(d, ent, base, s.Now, s.Value-base.Value)
		switch w {
		case windowHeld:
			return
		case windowRestarted:
			ent.latchBase = CounterSnapshot{Value: s.Value, Timestamp: s.Now}
			return
		}
	} else {
		m = deltaOver(d, s, base, s.Now, s.Value-base.Value)
	}
	ent.latchBase = CounterSnapshot{Value: s.Value, Timestamp: s.Now}
	limit, _, hasLimit := SaturationLimit(d.Path)
	ev.e.setRate(ent, m, s.PortRateGbps, hasLimit && s.Value == limit)
}

// recoverOnReset ends a latched breach whose counter went down (seed 6.3
// step 1): a recovery event when it was breached, and the flag goes.
func (ev *evaluation) recoverOnReset(breached bool) {
	s, ent := &ev.s, ev.ent
	ent.hasLatchBase = false
	prev := ev.snap.Value
	if ent.hasLast && s.Value < ent.last {
		prev = ent.last
	}
	if !ev.hasFlag {
		return
	}
	if breached {
		ev.specs = append(ev.specs, resetRecoverySpec(s.Def.Name, s.Device, s.Port, ev.flag, s.LinkLayer, prev, s.Value))
	}
	delete(ev.st.BreachFlags, ent.key)
	ev.flag, ev.hasFlag = BreachFlag{}, false
	ev.changed = true
}
