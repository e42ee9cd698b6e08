package counters

import (
	"errors"
	"io/fs"
	"log/slog"
	"sync"
	"time"

	"github.com/nichealth/nichealthd/config/countertable"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

// Options configure an Evaluator. The zero value is usable.
type Options struct {
	// Logger receives the rate-limited "no usable value" warnings. Nil
	// discards them.
	Logger *slog.Logger
	// XmitWaitBytesPerTick converts port_xmit_wait ticks to bytes
	// (default DefaultXmitWaitBytesPerTick).
	XmitWaitBytesPerTick float64
	// UnreadableLogEvery is the least time between two warnings about the
	// same unreadable file (default one hour), so a device that prints
	// "N/A (no PMA)" forever does not flood the journal at the poll rate.
	UnreadableLogEvery time.Duration
	// FreshStart says the baselines of Evaluate(rebootDetected = true) are
	// due to a first start without a usable state file on this boot, not
	// to a reboot: their message then says so instead of "after reboot".
	FreshStart bool
}

// Sample is one reading of one counter definition on one port.
type Sample struct {
	Device    string
	Port      int
	LinkLayer string // topology.LinkLayerInfiniBand or topology.LinkLayerEthernet
	Def       *countertable.Definition
	// Value is the parsed reading (sysfs.ParseCounter). When Err is set
	// there is no reading this poll: a missing file (fs.ErrNotExist) is
	// skipped silently; anything else (sysfs.ErrUnreadable for
	// "N/A (no PMA)", empty, negative or oversized values, an I/O error,
	// a read deadline) is skipped and logged at most once per file per
	// UnreadableLogEvery. It is never taken as 0, which would look like
	// an admin reset and fire a false recovery.
	Value uint64
	Err   error
	// File is the absolute path that was read, for log messages; empty
	// means Def.Path.
	File string
	// PortRateGbps is the port's rate (ports/<n>/rate), 0 when unknown;
	// it turns port_xmit_wait into a share of the link.
	PortRateGbps float64
	// Now is the wall-clock time of the reading. Velocity windows are
	// measured with it, so tests drive time by setting it.
	Now time.Time
	// Since is when the value the snapshot holds was last read again (the
	// previous counter tick), zero when unknown. The caller may skip
	// evaluating a delta counter whose value did not move, which leaves
	// the snapshot's time behind; a delta's rate is then measured from
	// Since, so a counter quiet for minutes that moves by one prints its
	// rate over the last tick, not since its last change.
	Since time.Time
}

// RateChanges counts the computed rates that changed since the evaluator
// was made: a view built from View needs rebuilding when it moved.
func (e *Evaluator) RateChanges() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rateChanges
}

// Evaluator applies seed section 10.4 to one reading at a time. It keeps
// in memory what the seed keeps in memory (the last value read per counter,
// step 7) plus the last computed rate for the D-Bus view; everything that
// must survive a restart lives in the Memory the caller passes.
//
// All methods are safe for concurrent use with each other. The caller owns
// the state: it must not read or write st from another goroutine while a
// method that takes st runs.
type Evaluator struct {
	log          *slog.Logger
	bytesPerTick float64
	logEvery     time.Duration
	freshStart   bool

	mu         sync.Mutex
	mem        map[memKey]*memEntry
	unreadable map[fileKey]time.Time
	defs       map[string]countertable.Definition // table of the last Reconcile, by name
	// rateChanges counts computed rates that moved (RateChanges).
	rateChanges uint64
}

type memKey struct {
	device string
	port   int
	name   string
}

type fileKey struct {
	device string
	port   int
	path   string
}

// memEntry is the in-memory side of one counter of one port.
type memEntry struct {
	key    string // Key(device, port, name), built once
	satKey string // saturation key, built once per path
	satFor string // the path satKey was built for

	seen    bool   // a readable value was evaluated in this process
	path    string // Definition.Path of the last evaluation
	typ     string // Definition.ThresholdType of the last evaluation
	hasLast bool
	last    uint64    // lastPollValue (seed 6.3)
	lastAt  time.Time // when last was read
	// fresh: the device came back (driver reload, hot plug): the next
	// reading is a new baseline, not a delta (DESIGN.md difference 11).
	fresh bool

	// hasLive and livePerSec are port_xmit_wait's rate over the last tick
	// (congestion.go).
	hasLive    bool
	livePerSec float64

	hasRate    bool
	rate       float64 // in the definition's unit (per second for delta)
	perSec     float64
	portGbps   float64
	lowerBound bool

	// latchBase is where the live rate of a latched counter is measured
	// from (its own window, never the latched snapshot, which stays at
	// the breach): a latch ends events, not the rate the views show.
	latchBase    CounterSnapshot
	hasLatchBase bool
}

// SetXmitWaitBytesPerTick changes the port_xmit_wait conversion on a
// configuration reload, keeping every window and latch (<= 0: default).
func (e *Evaluator) SetXmitWaitBytesPerTick(v float64) {
	if v <= 0 {
		v = DefaultXmitWaitBytesPerTick
	}
	e.bytesPerTick = v
}

// XmitWaitBytesPerTick is the port_xmit_wait conversion in use.
func (e *Evaluator) XmitWaitBytesPerTick() float64 { return e.bytesPerTick }

// NewEvaluator returns an Evaluator with empty memory.
func NewEvaluator(opts Options) *Evaluator {
	e := &Evaluator{
		log:          opts.Logger,
		bytesPerTick: opts.XmitWaitBytesPerTick,
		logEvery:     opts.UnreadableLogEvery,
		freshStart:   opts.FreshStart,
		mem:          map[memKey]*memEntry{},
		unreadable:   map[fileKey]time.Time{},
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if e.bytesPerTick <= 0 {
		e.bytesPerTick = DefaultXmitWaitBytesPerTick
	}
	if e.logEvery <= 0 {
		e.logEvery = time.Hour
	}
	return e
}

func (e *Evaluator) entry(device string, port int, name string) *memEntry {
	k := memKey{device, port, name}
	if m, ok := e.mem[k]; ok {
		return m
	}
	m := &memEntry{key: Key(device, port, name)}
	e.mem[k] = m
	return m
}

func ensureMaps(st *Memory) {
	if st.CounterSnapshots == nil {
		st.CounterSnapshots = map[string]CounterSnapshot{}
	}
	if st.BreachFlags == nil {
		st.BreachFlags = map[string]BreachFlag{}
	}
	if st.Saturated == nil {
		st.Saturated = map[string]time.Time{}
	}
	if st.Congested == nil {
		st.Congested = map[string]time.Time{}
	}
}

// Evaluate runs seed 10.4 steps 1–7 for one reading and returns the events
// to emit, in order, and whether st changed in a way worth saving (step 8).
//
// rebootDetected is step 0's verdict for this process: the boot ID in the
// state differed from the host's when the daemon started (and the daemon
// has cleared st). Then the first readable value of each counter in this
// process yields the healthy baseline of step 2 and nothing else.
//
// Outcomes, in the order they are decided:
//   - Def nil, disabled, or not applicable to LinkLayer: (nil, false);
//   - Err set: no reading, (nil, false), memory untouched;
//   - reboot baseline: one KindCounterBaseline spec; snapshot = reading;
//   - the counter went down (below the last value read in this process,
//     or below the persisted snapshot after a restart): a reset; a latched
//     breach yields one KindCounterRecovered spec and is cleared; the
//     snapshot restarts from the reading;
//   - no snapshot yet: the snapshot is initialised, no event;
//   - a latched breach: nothing is judged (step 4); only the rate the
//     views show is measured, from a window of its own;
//   - a reload changed the definition's path or threshold type: the
//     snapshot restarts from the reading, no event — the old snapshot
//     measured something else (another file, or a window held for
//     another rule), and judging it by the new rule could fire falsely;
//   - delta: breach when value − snapshot > threshold, snapshot follows
//     every reading;
//   - velocity: nothing until the snapshot is a full window old (never
//     extrapolated), then breach when the rate over the real elapsed time
//     > threshold, and the next window starts at this reading;
//   - a breach yields one KindCounterBreach spec and latches.
//
// Independently, a classic PMA counter reading exactly its saturation
// value yields one KindCounterSaturated spec per file until it drops.
//
// changed is true when a snapshot was created, deleted or took a new value,
// a velocity window of PersistWindowFrom or longer rolled over, or a breach
// flag or saturation mark changed. Velocity windows survive a crash (SIGKILL
// at any moment) without dilution: the persisted snapshot of a minute or
// hour window is always the start of the window in progress, so after a
// restart it is judged over the time it really covered. Had only value
// changes been saved, a quiet counter's restored window would start where
// the file was last written, hours back, and 6 errors of the last minute
// would be averaged over all of them. Shorter windows are not persisted at
// each rollover (that would be a write per second); a restored one older
// than its unit is restarted instead of judged (see judge). Delta
// snapshots whose timestamp alone moved are not saved either: a delta is a
// difference of values, which the saved value still gives.
//
// Evaluate does not allocate unless it returns a spec or meets a counter
// for the first time.
func (e *Evaluator) Evaluate(st *Memory, s Sample, rebootDetected bool) (specs []event.Spec, changed bool) {
	d := s.Def
	if d == nil || st == nil || !d.Enabled || !d.AppliesTo(s.LinkLayer) {
		return nil, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if s.Err != nil {
		e.noReading(s)
		return nil, false
	}
	ensureMaps(st)
	ev := evaluation{e: e, st: st, s: s, ent: e.entry(s.Device, s.Port, d.Name), check: event.DegradationCheckFor(s.LinkLayer)}
	ev.snap, ev.hasSnap = st.CounterSnapshots[ev.ent.key]
	ev.flag, ev.hasFlag = st.BreachFlags[ev.ent.key]
	ev.step(rebootDetected)
	ent := ev.ent
	e.live(&s, ent)
	ent.seen, ent.hasLast, ent.last, ent.lastAt = true, true, s.Value, s.Now
	ent.path, ent.typ = d.Path, d.ThresholdType
	if sp, ch := e.saturation(st, &s, ent); ch {
		ev.changed = true
		if sp != nil {
			ev.specs = append(ev.specs, *sp)
		}
	}
	return ev.specs, ev.changed
}

// setRate records the rate the views show, counting the changes.
func (e *Evaluator) setRate(ent *memEntry, m measure, portGbps float64, lowerBound bool) {
	if !ent.hasRate || ent.rate != m.rate {
		e.rateChanges++
	}
	ent.hasRate, ent.rate, ent.perSec, ent.portGbps, ent.lowerBound = true, m.rate, m.perSec, portGbps, lowerBound
}

// Quiet is a delta counter's reading that did not move since the tick
// before (the caller skips Evaluate for it): its rate over the last tick
// is 0, latched or not, and the views must not keep showing the last
// step's.
func (e *Evaluator) Quiet(device string, port int, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ent, ok := e.mem[memKey{device, port, name}]
	if !ok || !ent.hasRate || ent.rate == 0 && ent.perSec == 0 {
		return
	}
	ent.rate, ent.perSec = 0, 0
	e.rateChanges++
}

// Rebaseline makes the next reading of every counter of device a new
// baseline (DESIGN.md difference 11): the device disappeared and came back
// (driver reload, hot plug), and what its counters read now is not a delta
// from what they read before. A counter that restarted still ends its
// latch with a recovery.
func (e *Evaluator) Rebaseline(device string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, ent := range e.mem {
		if k.device == device {
			ent.fresh = true
		}
	}
}

// PersistWindowFrom is the shortest velocity window whose every rollover is
// saved. With the default table that is link_error_recovery's minute (and
// symbol_error_fatal's hour, which rolls on the same tick): about one state
// write per minute on a quiet node.
const PersistWindowFrom = time.Minute

// judge is step 5 and 6 for a counter that is neither reset nor latched.
func (e *Evaluator) judge(st *Memory, s *Sample, ent *memEntry, snap CounterSnapshot) (*event.Spec, bool) {
	d := s.Def
	ent.hasLatchBase = false
	if d.ThresholdType == countertable.TypeCongestion {
		return e.congestion(st, s, ent, snap)
	}
	cur, now := s.Value, s.Now
	next := CounterSnapshot{Value: cur, Timestamp: now}
	changed := cur != snap.Value
	var m measure
	if d.ThresholdType == countertable.TypeVelocity || d.ThresholdType == countertable.TypeBER {
		var w windowState
		if d.ThresholdType == countertable.TypeBER {
			m, w = ber(d, ent, snap, now, cur-snap.Value, s.PortRateGbps)
		} else {
			m, w = velocity(d, ent, snap, now, cur-snap.Value)
		}
		switch w {
		case windowHeld:
			return nil, false // window not full: hold the snapshot
		case windowRestarted:
			st.CounterSnapshots[ent.key] = next
			return nil, changed
		case windowPersisted:
			changed = true // the window in progress must survive a crash
		}
	} else {
		m = deltaOver(d, s, snap, now, cur-snap.Value)
	}
	st.CounterSnapshots[ent.key] = next

	limit, _, hasLimit := SaturationLimit(d.Path)
	e.setRate(ent, m, s.PortRateGbps, hasLimit && cur == limit)
	if !m.breach {
		return nil, changed
	}
	if twinLatched(st, s.Device, s.Port, d.Name) != "" {
		// One link down, one condition: its twin's latch holds it.
		return nil, true
	}
	check := event.CounterCheckFor(s.LinkLayer, d.IsFatal)
	st.BreachFlags[ent.key] = BreachFlag{
		Breached:   true,
		CheckName:  check,
		IsFatal:    d.IsFatal,
		Since:      now,
		Definition: d.Fingerprint(),
	}
	if d.ThresholdType != countertable.TypeBER {
		// A bit error rate is judged again while breached and its
		// condition says its last window; latches say what latched.
		fl := st.BreachFlags[ent.key]
		fl.Reading = breachReading(d, cur, m.delta, m.rate, ent.lowerBound)
		st.BreachFlags[ent.key] = fl
	}
	sp := e.breachSpec(s, check, m.delta, m.rate, m.perSec, m.elapsed, ent.lowerBound)
	return &sp, true
}

// noReading logs an unusable value at most once per file per logEvery. A
// missing file is the normal case of a counter this NIC generation does not
// have (seed 7.1): the daemon logged it once at start.
func (e *Evaluator) noReading(s Sample) {
	if errors.Is(s.Err, fs.ErrNotExist) {
		return
	}
	k := fileKey{s.Device, s.Port, s.Def.Path}
	if last, ok := e.unreadable[k]; ok {
		if since := s.Now.Sub(last); since >= 0 && since < e.logEvery {
			return
		}
	}
	e.unreadable[k] = s.Now
	file := s.File
	if file == "" {
		file = s.Def.Path
	}
	fix := "check the device with dmesg and mlxlink; if this device never provides the counter, " +
		"set enabled = false for it under [[counterDetection.counters]]"
	if errors.Is(s.Err, sysfs.ErrUnreadable) {
		fix = "the device printed no number (firmware without PMA counters prints \"N/A (no PMA)\"); " +
			"if it never does, set enabled = false for this counter under [[counterDetection.counters]]"
	}
	e.log.Warn("counter has no usable value; skipped this poll, not counted as 0",
		"device", s.Device, "port", s.Port, "counter", s.Def.Name, "file", file,
		"error", s.Err.Error(), "fix", fix, "next_warning_after", e.logEvery.String())
}
