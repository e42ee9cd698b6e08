package daemon

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
	"github.com/nichealth/nichealthd/internal/backoff"
	"github.com/nichealth/nichealthd/persist"
	"github.com/nichealth/nichealthd/persist/outbox"
)

// The commit path: an event is built when its check detects it, folded
// into the health model at once (the rules and every view see it with the
// time it happened), and held until the outbox has it on stable storage.
// The state that produced it is saved only after that, on every path
// (poll, reload, acknowledgement, shutdown): a state saved ahead of its
// events would, after a crash, never emit them. While the outbox refuses
// appends, the events wait here, are retried with backoff ahead of newer
// ones, and every view says so.

// OutboxCheck names the node condition every view shows while events
// cannot be made durable. It is the daemon's own, never an event.
const OutboxCheck = "NICHealthOutbox"

// maxHeld bounds the events held in memory. Past it, an event that a
// newer held event of the same check and entity supersedes is folded
// into it, as the outbox does at its own bound: the latest word on every
// entity survives however long the disk refuses.
const maxHeld = 4096

// heldEvents are events built but not yet durable.
type heldEvents struct {
	evs    []event.Event
	folded uint64
	// err is the last append's error ("" once appends work); next is when
	// to try again, ep the backoff.
	err   string
	next  time.Time
	ep    backoff.Episode
	logs  int // error lines logged in this episode
	dirty bool
	// unsaved: a save was skipped because events were held.
	unsaved bool
	// lastStamp is the newest event's time: every event is stamped after
	// it, at least a nanosecond apart, because NVSentinel's platform
	// connector sorts a batch by timestamp before folding it into node
	// conditions with a sort that need not keep the order of equal
	// timestamps, and a recovery followed by a new breach of the same
	// counter (DESIGN.md difference 11) must stay in that order.
	lastStamp time.Time
}

type emitted struct {
	ev  event.Event
	seq uint64
}

// holdLocked builds the specs' events, stamped now (when they were
// detected), folds them into the model and holds them for the outbox.
// Caller holds d.mu.
func (d *Daemon) holdLocked(specs []event.Spec, now time.Time) {
	if len(specs) == 0 {
		return
	}
	stamp := event.Stamp{NodeName: d.cfg.NodeName, Strategy: d.cfg.Strategy}
	for _, s := range specs {
		stamp.Now = now
		if !now.After(d.held.lastStamp) {
			stamp.Now = d.held.lastStamp.Add(time.Nanosecond)
		}
		d.held.lastStamp = stamp.Now
		ev := event.New(d.run.Annotate(s), stamp)
		if d.model.Apply(&ev) {
			d.modelDirty = true
		}
		d.held.evs = append(d.held.evs, ev)
	}
	d.held.dirty = true
	if len(d.held.evs) > maxHeld {
		d.foldHeldLocked()
	}
}

// foldHeldLocked drops held events that a newer held event of the same
// check and entity supersedes (outbox.FoldKey), oldest first, until the
// held events are within three quarters of maxHeld (so that a long outage
// folds now and then, not at every event) or none is superseded.
func (d *Daemon) foldHeldLocked() {
	keys := make([]uint64, len(d.held.evs))
	newest := make(map[uint64]int, len(d.held.evs))
	for i := range d.held.evs {
		keys[i] = outbox.FoldKey(&d.held.evs[i])
		newest[keys[i]] = i
	}
	excess := len(d.held.evs) - maxHeld*3/4
	kept := d.held.evs[:0]
	for i := range d.held.evs {
		if excess > 0 && newest[keys[i]] != i {
			excess--
			d.held.folded++
			continue
		}
		kept = append(kept, d.held.evs[i])
	}
	clear(d.held.evs[len(kept):])
	d.held.evs = kept
}

// commitLocked makes the held events durable, then saves the state when
// changed (or when an earlier save was skipped), and returns the events
// made durable. While the outbox refuses them the state is not saved.
// Caller holds d.mu.
func (d *Daemon) commitLocked(changed bool) []emitted {
	out, ok := d.flushLocked()
	if !ok {
		d.held.unsaved = true
		return nil
	}
	if d.modelDirty {
		storeModel(d.st, d.model)
		d.modelDirty = false
		changed = true
	}
	if changed || len(out) > 0 || d.held.unsaved {
		d.held.unsaved = false
		d.saveLocked()
	}
	return out
}

// flushLocked appends the held events, oldest first, in one batch. ok is
// false when the outbox refused them: they stay held, and the next try
// waits for the backoff.
func (d *Daemon) flushLocked() ([]emitted, bool) {
	h := &d.held
	if len(h.evs) == 0 {
		return nil, true
	}
	if h.err != "" && time.Now().Before(h.next) {
		return nil, false
	}
	seqs, err := d.ob.Append(h.evs)
	if err == nil && len(seqs) != len(h.evs) {
		// Append's contract is one sequence number per event; anything
		// else is kept and retried rather than half-acknowledged.
		err = fmt.Errorf("outbox returned %d sequence numbers for %d events", len(seqs), len(h.evs))
	}
	if err != nil {
		first, wait := h.ep.Fail()
		h.next = time.Now().Add(wait)
		msg := err.Error()
		// Logged when an outage starts and when its error changes (a
		// full disk becoming a read-only one), never once per retry.
		if (first || msg != h.err) && h.logs < 20 {
			h.logs++
			d.log.Error("cannot append events to the outbox; they are held in memory and retried with backoff, and the state file is not saved until they are durable",
				"err", err, "events", len(h.evs), "dir", d.ob.Dir())
		}
		if msg != h.err {
			h.dirty = true
		}
		h.err = msg
		return nil, false
	}
	if n, lasted := h.ep.Recovered(); n > 0 {
		d.log.Info("outbox appends work again; the held events are durable", "failed_attempts", n, "lasted", lasted,
			"events", len(h.evs), "folded", h.folded)
	}
	if h.err != "" {
		h.dirty = true
	}
	h.err, h.logs, h.folded = "", 0, 0
	out := make([]emitted, 0, len(h.evs))
	for i, seq := range seqs {
		if seq == 0 {
			// Parked by the outbox as a dead letter: durable there, shown
			// as rejected, never sent.
			e := &h.evs[i]
			d.log.Error("event could not be stored in the outbox and was parked with the rejected events",
				"event_id", e.ID, "check", e.CheckName, "device", e.Device(), "port", e.Port())
			continue
		}
		out = append(out, emitted{h.evs[i], seq})
		d.st.OutboxSeq = seq
	}
	if cap(h.evs) > 64 {
		h.evs = nil
	} else {
		clear(h.evs)
		h.evs = h.evs[:0]
	}
	// Durable now: signal D-Bus listeners before the state save (a few ms
	// of fsyncs); signals leave from the bus's own goroutine.
	d.announce(out)
	return out, true
}

// saveLocked saves the state when it changed, with one log line per
// episode of failures (the error names a fresh temporary file each time).
// It never saves while events are held: that state would claim what no
// consumer can ever be told.
func (d *Daemon) saveLocked() {
	if len(d.held.evs) > 0 {
		d.held.unsaved = true
		return
	}
	if _, err := d.saveIfChanged(); err != nil {
		if d.saveErr == "" {
			d.log.Error("cannot save state; monitoring continues and saving is retried every poll", "err", err)
		}
		d.saveErr = err.Error()
		d.saveFails++
		return
	}
	if d.saveErr != "" {
		d.log.Info("state saved again", "file", d.opts.StateFile, "failed_saves", d.saveFails)
		d.saveErr = ""
		d.saveFails = 0
	}
}

// commitAtShutdownLocked makes a last attempt to append the held events
// and saves the state only if they are durable; otherwise the state on
// disk stays the one that produced no undelivered event, and the next
// start detects the same conditions again.
func (d *Daemon) commitAtShutdownLocked() {
	d.held.next = time.Time{}
	d.commitLocked(true)
	if n := len(d.held.evs); n > 0 {
		d.log.Error("stopping with events the outbox never took; the state file was not saved, so the next start detects them again",
			"events", n, "err", d.held.err, "state_file", d.opts.StateFile)
	}
}

// takeSnapDirty reports whether what the views show of the held events
// changed since the last call.
func (d *Daemon) takeSnapDirty() bool {
	c := d.held.dirty
	d.held.dirty = false
	return c
}

// conditionsLocked is the model's conditions plus, while events are held,
// the node condition that says so: the views never call a node healthy
// while an event about it cannot be delivered. Caller holds d.mu.
func (d *Daemon) conditionsLocked() []health.Condition {
	conds := d.model.Conditions()
	if len(d.held.evs) == 0 {
		return conds
	}
	c := health.Condition{Check: OutboxCheck, Entity: condition.OfNode("outbox"),
		Severity: health.NonFatal, Since: d.held.ep.Start(),
		Message: fmt.Sprintf("%d events cannot be written to the outbox in %s (%s); they are held in memory and retried, and the state file is not saved until they are: free space or make the directory writable",
			len(d.held.evs), d.ob.Dir(), d.held.err)}
	return health.InsertCondition(conds, c)
}

// undeliverable is the outbox condition's message, or "" (for /healthz).
func undeliverable(s *health.Snapshot) string {
	if s == nil {
		return ""
	}
	for i := range s.Conditions {
		if s.Conditions[i].Check == OutboxCheck {
			return s.Conditions[i].Message
		}
	}
	return ""
}

// statusOf is the STATUS= line: the verdict's summary, which names the
// outbox trouble itself when nothing worse leads it.
func statusOf(s *health.Snapshot) string {
	st := s.Status()
	if why := undeliverable(s); why != "" && (len(s.Conditions) == 0 || s.Conditions[0].Check != OutboxCheck) {
		st += "; events cannot be written to the outbox (see journalctl -u nichealthd)"
	}
	return st
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
