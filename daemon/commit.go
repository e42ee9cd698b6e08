package daemon

import (
	"encoding/json"
	"fmt"
	"path/filepath"
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
//
// Nothing that holds d.mu waits on the state directory for longer than a
// poll interval: the append and the save that follows it run as one job
// on a goroutine of their own (one at a time), and the caller waits for
// it only briefly. A job that has not returned within writeDeadline is
// handled as a refused append: its events and every newer one are held in
// memory (folded at maxHeld), the state file is not saved, and the views
// say so, until the filesystem answers and the job returns.

// OutboxCheck names the node condition every view shows while events
// cannot be made durable. It is the daemon's own, never an event.
const OutboxCheck = "NICHealthOutbox"

// maxHeld bounds the events held in memory. Past it, an event that a
// newer held event of the same check and entity supersedes is folded
// into it, as the outbox does at its own bound: the latest word on every
// entity survives however long the disk refuses.
const maxHeld = 4096

// writeDeadline is how long a write to the state directory (an append
// and its data sync, a state save) may take before the daemon treats the
// directory as not answering. A healthy disk takes milliseconds; a hung
// network filesystem or a wedged disk never returns.
const writeDeadline = 2 * time.Second

// shutdownWriteWait is how long a stop waits for the state directory: a
// write that is still hung then is left behind, and the state file stays
// as it was (the next start re-detects what it had not recorded).
const shutdownWriteWait = 3 * time.Second

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
	// unsaved: a save was skipped (events held, or a job in flight).
	unsaved bool
	// job is the write in flight (nil: none); stalled is set once it has
	// taken longer than writeDeadline.
	job     *commitJob
	stalled bool
	// lastStamp is the newest event's time: every event is stamped after
	// it, at least a nanosecond apart, because NVSentinel's platform
	// connector sorts a batch by timestamp before folding it into node
	// conditions with a sort that need not keep the order of equal
	// timestamps, and a recovery followed by a new breach of the same
	// counter (DESIGN.md difference 11) must stay in that order.
	lastStamp time.Time
}

// commitJob is one trip to the state directory: the events appended to
// the outbox and, once they are durable, the state that produced them
// saved. The fields below done are the outcome, read after done closes.
type commitJob struct {
	evs   []event.Event
	st    *persist.State // nil: nothing to save
	start time.Time
	done  chan struct{}

	seqs    []uint64
	err     error // the append's: nothing of the job is durable
	saveErr error
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
	d.heldCount.Store(int64(d.heldLenLocked()))
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

// heldLenLocked is the number of events not yet durable, in flight
// included.
func (d *Daemon) heldLenLocked() int {
	n := len(d.held.evs)
	if j := d.held.job; j != nil {
		n += len(j.evs)
	}
	return n
}

// durableLocked reports whether every event built so far is in the
// outbox and the state that produced them was handed to a save.
func (d *Daemon) durableLocked() bool { return len(d.held.evs) == 0 && d.held.job == nil }

// commitLocked makes the held events durable, then saves the state when
// changed (or when an earlier save was skipped), and returns the events
// made durable. It waits for the state directory at most a poll interval
// (commitWait); a write that takes longer finishes in the background and
// a later call collects it. While the outbox refuses the events, or a
// write in flight has not returned, the state is not saved. Caller holds
// d.mu.
func (d *Daemon) commitLocked(changed bool) []emitted {
	return d.commitWithin(changed, d.commitWait())
}

// commitWait bounds how long a commit waits for its write: never past
// the poll interval, so a slow disk costs a poll its interval at most.
func (d *Daemon) commitWait() time.Duration { return min(d.cfg.PollInterval, writeDeadline) }

// commitWithin is commitLocked waiting at most wait for the job it
// starts. Caller holds d.mu.
func (d *Daemon) commitWithin(changed bool, wait time.Duration) []emitted {
	h := &d.held
	now := time.Now()
	var out []emitted
	if j := h.job; j != nil {
		select {
		case <-j.done:
			out = d.finishLocked(j)
		default:
			// The previous write has not returned: nothing else is
			// written meanwhile (it would wait behind it), and the
			// state waits for the events it produced.
			h.unsaved = h.unsaved || changed || d.modelDirty
			d.noteStallLocked(now)
			return nil
		}
	}
	if d.modelDirty {
		storeModel(d.st, d.model)
		d.modelDirty = false
		changed = true
	}
	if len(h.evs) > 0 && h.err != "" && now.Before(h.next) {
		// Refused a moment ago: wait for the backoff.
		h.unsaved = true
		return out
	}
	if !changed && len(out) == 0 && !h.unsaved && len(h.evs) == 0 {
		return out
	}
	j := &commitJob{evs: h.evs, start: now, done: make(chan struct{})}
	h.evs = nil
	// Every check's memory is taken now, on the goroutine that changes
	// it; the job encodes and writes its own copy.
	if err := d.run.Store(func(s string, b []byte) { d.st.SetSection(s, b) }); err != nil {
		j.saveErr = err
	} else {
		j.st = d.st.Clone()
	}
	h.unsaved = false
	h.job = j
	go d.runCommit(j)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-j.done:
		out = append(out, d.finishLocked(j)...)
	case <-t.C:
		d.noteStallLocked(time.Now())
	}
	return out
}

// runCommit runs a job: the events to the outbox (write and data sync),
// then, only if they are durable, the state to its file. It takes no
// lock of the daemon's, so a write that hangs in the kernel holds this
// goroutine alone.
func (d *Daemon) runCommit(j *commitJob) {
	defer close(j.done)
	if len(j.evs) > 0 {
		seqs, err := d.ob.Append(j.evs)
		if err == nil && len(seqs) != len(j.evs) {
			// Append's contract is one sequence number per event;
			// anything else is kept and retried rather than
			// half-acknowledged.
			err = fmt.Errorf("outbox returned %d sequence numbers for %d events", len(seqs), len(j.evs))
		}
		if err != nil {
			j.err = err
			return
		}
		j.seqs = seqs
		out := make([]emitted, 0, len(seqs))
		for i, seq := range seqs {
			if seq != 0 {
				out = append(out, emitted{j.evs[i], seq})
				if j.st != nil {
					j.st.OutboxSeq = seq
				}
			}
		}
		// Durable now: signal D-Bus listeners before the state save (a
		// few ms of fsyncs); signals leave from the bus's own goroutine.
		d.announce(out)
	}
	if j.st != nil {
		_, j.saveErr = d.store.SaveIfChanged(j.st)
	}
}

// noteStallLocked marks the job in flight as stalled once it has taken
// longer than writeDeadline: from then on every view says the state
// directory does not answer. Caller holds d.mu.
func (d *Daemon) noteStallLocked(now time.Time) {
	h := &d.held
	if h.job == nil || h.stalled || now.Sub(h.job.start) < writeDeadline {
		return
	}
	h.stalled = true
	h.dirty = true
	d.log.Error("a write to the state directory has not returned; events are held in memory and written when it does, the state file is not saved until then, and monitoring goes on",
		"dir", filepath.Dir(d.opts.StateFile), "deadline", writeDeadline, "events", d.heldLenLocked())
}

// finishLocked takes in a job that has returned and returns the events
// it made durable. A refused append puts its events back ahead of the
// newer held ones and backs off. Caller holds d.mu.
func (d *Daemon) finishLocked(j *commitJob) []emitted {
	h := &d.held
	h.job = nil
	defer func() { d.heldCount.Store(int64(d.heldLenLocked())) }()
	if h.stalled {
		h.stalled = false
		h.dirty = true
		d.log.Info("the state directory answers again", "dir", filepath.Dir(d.opts.StateFile),
			"waited", time.Since(j.start).Round(time.Millisecond))
	}
	if j.err != nil {
		h.evs = append(j.evs, h.evs...)
		if len(h.evs) > maxHeld {
			d.foldHeldLocked()
		}
		h.unsaved = true
		first, wait := h.ep.Fail()
		h.next = time.Now().Add(wait)
		msg := j.err.Error()
		// Logged when an outage starts and when its error changes (a
		// full disk becoming a read-only one), never once per retry.
		if (first || msg != h.err) && h.logs < 20 {
			h.logs++
			d.log.Error("cannot append events to the outbox; they are held in memory and retried with backoff, and the state file is not saved until they are durable",
				"err", j.err, "events", len(h.evs), "dir", d.ob.Dir())
		}
		if msg != h.err {
			h.dirty = true
		}
		h.err = msg
		return nil
	}
	var out []emitted
	if len(j.evs) > 0 {
		if n, lasted := h.ep.Recovered(); n > 0 {
			d.log.Info("outbox appends work again; the held events are durable", "failed_attempts", n, "lasted", lasted,
				"events", len(j.evs), "folded", h.folded)
		}
		if h.err != "" {
			h.dirty = true
		}
		h.err, h.logs, h.folded = "", 0, 0
		out = make([]emitted, 0, len(j.evs))
		for i, seq := range j.seqs {
			if seq == 0 {
				// Parked by the outbox as a dead letter: durable there,
				// shown as rejected, never sent.
				e := &j.evs[i]
				d.log.Error("event could not be stored in the outbox and was parked with the rejected events",
					"event_id", e.ID, "check", e.CheckName, "device", e.Device(), "port", e.Port())
				continue
			}
			out = append(out, emitted{j.evs[i], seq})
			d.st.OutboxSeq = max(d.st.OutboxSeq, seq)
		}
	}
	if j.saveErr != nil {
		h.unsaved = true
		if d.saveErr == "" {
			d.log.Error("cannot save state; monitoring continues and saving is retried every poll", "err", j.saveErr)
		}
		d.saveErr = j.saveErr.Error()
		d.saveFails++
	} else if j.st != nil && d.saveErr != "" {
		d.log.Info("state saved again", "file", d.opts.StateFile, "failed_saves", d.saveFails)
		d.saveErr = ""
		d.saveFails = 0
	}
	return out
}

// commitAtShutdownLocked makes a last attempt to append the held events
// and saves the state only if they are durable; otherwise the state on
// disk stays the one that produced no undelivered event, and the next
// start detects the same conditions again. It waits for the state
// directory at most shutdownWriteWait in all, and reports false when a
// write is still hung in the kernel then (the outbox's lock with it).
func (d *Daemon) commitAtShutdownLocked() bool {
	deadline := time.Now().Add(shutdownWriteWait)
	if j := d.held.job; j != nil {
		select {
		case <-j.done:
		case <-time.After(time.Until(deadline)):
		}
	}
	d.held.next = time.Time{}
	d.commitWithin(true, max(time.Until(deadline), 0))
	if j := d.held.job; j != nil {
		d.log.Error("stopping while a write to the state directory has not returned; the state file was not saved, so the next start detects what it had not recorded again",
			"events", d.heldLenLocked(), "dir", filepath.Dir(d.opts.StateFile), "waited", time.Since(j.start).Round(time.Millisecond))
		return false
	}
	if n := len(d.held.evs); n > 0 {
		d.log.Error("stopping with events the outbox never took; the state file was not saved, so the next start detects them again",
			"events", n, "err", d.held.err, "state_file", d.opts.StateFile)
	}
	return true
}

// takeSnapDirty reports whether what the views show of the held events
// changed since the last call.
func (d *Daemon) takeSnapDirty() bool {
	c := d.held.dirty
	d.held.dirty = false
	return c
}

// conditionsLocked is the model's conditions plus, while events are held
// because the outbox refuses them or the state directory does not
// answer, the node condition that says so: the views never call a node
// healthy while an event about it cannot be delivered. Caller holds d.mu.
func (d *Daemon) conditionsLocked() []health.Condition {
	conds := d.model.Conditions()
	h := &d.held
	var c health.Condition
	switch {
	case h.stalled && h.job != nil:
		c = health.Condition{Check: OutboxCheck, Entity: condition.OfNode("outbox"),
			Severity: health.NonFatal, Since: h.job.start,
			Message: fmt.Sprintf("a write to the state directory %s has not returned within %s (is its filesystem hung?); %d events are held in memory and written when it answers, and the state file is not saved until they are: find out why the filesystem does not answer",
				filepath.Dir(d.opts.StateFile), writeDeadline, d.heldLenLocked())}
	case h.err != "":
		c = health.Condition{Check: OutboxCheck, Entity: condition.OfNode("outbox"),
			Severity: health.NonFatal, Since: h.ep.Start(),
			Message: fmt.Sprintf("%d events cannot be written to the outbox in %s (%s); they are held in memory and retried, and the state file is not saved until they are: free space or make the directory writable",
				d.heldLenLocked(), d.ob.Dir(), h.err)}
	default:
		return conds
	}
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
