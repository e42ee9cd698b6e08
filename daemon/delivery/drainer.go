package delivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/nichealth/nichealthd/daemon/sink"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/internal/backoff"
	"github.com/nichealth/nichealthd/internal/repeats"
	"github.com/nichealth/nichealthd/persist/outbox"
)

// Drainer moves one sink's events out of the outbox, in order, with
// retry; one goroutine runs it (Run).
type Drainer struct {
	ob    *outbox.Outbox
	sink  sink.Sink
	log   *slog.Logger
	batch time.Duration // non-urgent events may wait this long to share a call

	sent, failed atomic.Uint64
	// retry asks for the parked (rejected) events to be offered again.
	retry chan struct{}
	// lastErr is the kind of the last delivery failure (errKind);
	// errLogs limits how often each kind is logged.
	lastErr string
	errLogs repeats.Limiter
	// panicked is told once when the sink's own code panics: the drainer
	// then stops until the next reload or restart.
	panicked func(sink string, p *Panic)
	// sizes is what the drainer has learned of the batch sizes the sink
	// takes (Run's goroutine only).
	sizes batchSizes
	// sleep waits between attempts (backoff.Sleep); a test passes one
	// that counts the waits instead of sleeping them.
	sleep func(ctx context.Context, d time.Duration) bool
}

// batchSizes is the drainer's memory of what the sink takes at once.
// A destination refuses a batch with ResourceExhausted both when it is
// above a message size limit and when it sheds load (sink.TooLarge):
// splitting helps the first, and only slows the second down. So a batch
// larger than any that went through is split, while one no larger than
// a batch that went through is taken for load shedding and retried
// whole, split only after refusalsToSplit refusals in a row (events can
// be larger than the ones that fitted). The size read from the outbox
// follows: halved by a split, doubled again after growAfter full batches
// went through without one (refusals taken for load shedding do not
// count against it), so one refused call does not send every later batch
// back to drainBatch events, nor does a size limit cost a refused call
// per batch.
type batchSizes struct {
	limit  int // how many records to read (0: drainBatch)
	fits   int // the largest batch the sink took; 0 before any
	streak int // full batches that went through since the last split
	// refused is the first seq of the batch refused last and how many
	// times in a row.
	refusedSeq uint64
	refusals   int
}

const (
	growAfter       = 4
	refusalsToSplit = 4
)

// read is how many records the next batch may hold.
func (b *batchSizes) read() int {
	if b.limit <= 0 {
		return drainBatch
	}
	return b.limit
}

// took records a batch of n the sink took.
func (b *batchSizes) took(n int) {
	b.fits = max(b.fits, n)
	b.refusals = 0
	if n < b.read() {
		return // the outbox had no more: says nothing of the limit
	}
	b.streak++
	if b.streak >= growAfter && b.read() < drainBatch {
		b.limit = min(2*b.read(), drainBatch)
		b.streak = 0
	}
}

// split reports whether a batch of recs refused as too large is to be
// halved (and then reads half as many from now on), or retried whole.
func (b *batchSizes) split(recs []outbox.Record) bool {
	if recs[0].Seq == b.refusedSeq {
		b.refusals++
	} else {
		b.refusedSeq, b.refusals = recs[0].Seq, 1
	}
	n := len(recs)
	if n <= b.fits && b.refusals < refusalsToSplit {
		return false
	}
	if n <= b.fits {
		// Refused again and again at a size that went through: the
		// events grew, or the limit shrank.
		b.fits = n / 2
	}
	b.refusals, b.streak = 0, 0
	b.limit = min(b.read(), max(n/2, 1))
	return true
}

// New returns the drainer of sink s; batch is how long non-urgent events
// may wait to share a call, and panicked (nil: nothing) is told when the
// sink's own code panics, which stops the drainer.
func New(ob *outbox.Outbox, s sink.Sink, log *slog.Logger, batch time.Duration, panicked func(sink string, p *Panic)) *Drainer {
	return &Drainer{ob: ob, sink: s, log: log, batch: batch, retry: make(chan struct{}, 1), errLogs: repeats.Limiter{Window: time.Minute},
		panicked: panicked, sleep: backoff.Sleep}
}

// Sink is the sink the drainer delivers to.
func (d *Drainer) Sink() sink.Sink { return d.sink }

// Sent and Failed count the events delivered and the failed attempts.
func (d *Drainer) Sent() uint64   { return d.sent.Load() }
func (d *Drainer) Failed() uint64 { return d.failed.Load() }

// RequestRetry makes the drainer offer its parked events again soon.
func (d *Drainer) RequestRetry() {
	select {
	case d.retry <- struct{}{}:
	default:
	}
}

// The retries' pace: a remote destination backs off from BackoffMin to
// BackoffMax. A cursor that cannot be saved is a local disk problem,
// usually fixed by an operator freeing space; retrying it more often than
// a remote destination costs one small write (SaveBackoffMax).
const (
	BackoffMin     = 200 * time.Millisecond
	BackoffMax     = 30 * time.Second
	SaveBackoffMax = 5 * time.Second
	drainBatch     = 256
)

// Run delivers until ctx is done or the sink panics.
func (d *Drainer) Run(ctx context.Context) {
	readEp := backoff.Episode{Min: BackoffMin, Max: BackoffMax}
	sendEp := backoff.Episode{Min: BackoffMin, Max: BackoffMax}
	for {
		recs, ok := d.next(ctx, &readEp)
		if !ok {
			return
		}
		if len(recs) > 0 && !d.deliver(ctx, recs, &sendEp) {
			return
		}
	}
}

// next returns the sink's next batch, after waiting for one when the
// outbox has nothing new for it; an empty batch means "look again". It
// handles operator retries of parked events, backs off while the outbox
// cannot be read, and lets non-fatal events gather for the batch interval.
// ok is false when ctx is done.
func (d *Drainer) next(ctx context.Context, readEp *backoff.Episode) ([]outbox.Record, bool) {
	name := d.sink.Name()
	select {
	case <-d.retry:
		if !d.retryParked(ctx) {
			return nil, false
		}
	default:
	}
	wake := d.ob.Wait()
	limit := d.sizes.read()
	recs, err := d.ob.Read(name, limit)
	if err != nil {
		first, wait := readEp.Fail()
		if first {
			d.log.Error("cannot read the outbox; retrying with backoff", "sink", name, "err", err)
		}
		return nil, d.sleep(ctx, wait)
	}
	if n, lasted := readEp.Recovered(); n > 0 {
		d.log.Info("outbox readable again", "sink", name, "failures", n, "lasted", lasted)
	}
	if len(recs) == 0 {
		select {
		case <-ctx.Done():
			return nil, false
		case <-wake:
		case <-d.retry:
			return nil, d.retryParked(ctx)
		}
		return nil, true
	}
	if d.batch > 0 && !anyUrgent(recs) && len(recs) < limit {
		// Seed 11.2: fatal and recovery events go at once; non-fatal
		// ones may share a call within a short interval.
		if !d.sleep(ctx, d.batch) {
			return nil, false
		}
		if more, err := d.ob.Read(name, limit); err == nil && len(more) > 0 {
			recs = more
		}
	}
	return recs, true
}

// deliver sends one batch and settles it: delivered events are
// acknowledged, events the sink rejects as invalid are isolated and
// parked, anything else backs off and stays queued. A batch of which some
// events went through is progress, not an outage: the backoff starts
// again from its minimum, so a destination that sheds part of the load
// keeps draining at the pace it takes. It returns false when ctx is done.
func (d *Drainer) deliver(ctx context.Context, recs []outbox.Record, sendEp *backoff.Episode) bool {
	name := d.sink.Name()
	n, err := d.sendSplit(ctx, recs)
	if n > 0 {
		d.sent.Add(uint64(n))
		if !d.ack(ctx, recs[n-1].Seq) {
			return false
		}
	}
	if err == nil {
		if k, lasted := sendEp.Recovered(); k > 0 {
			d.log.Info("sink delivering again", "sink", name, "failed_attempts", k, "lasted", lasted)
		}
		return true
	}
	rest := recs[n:]
	pendingFrom := rest[0].Seq
	switch {
	case sink.IsPermanent(err):
		d.failed.Add(uint64(len(rest)))
		done, ierr := d.isolate(ctx, rest, err)
		if done > 0 && !d.ack(ctx, rest[done-1].Seq) {
			return false
		}
		if ierr == nil {
			return true
		}
		// Transient trouble half-way, or the dead-letter file could not
		// be written: the rest stays queued.
		err, pendingFrom = ierr, rest[done].Seq
	default:
		if ctx.Err() != nil {
			return false
		}
		d.failed.Add(uint64(len(rest)))
	}
	if sp, ok := err.(*Panic); ok {
		// The sink's own bug: retrying would panic again. Its events
		// stay in the outbox for the sink restarted by a reload.
		if d.panicked != nil {
			d.panicked(name, sp)
		}
		return false
	}
	if n > 0 {
		// Progress: the episode (if any) ends, and the next one starts
		// from the shortest wait.
		sendEp.Recovered()
	}
	first, wait := sendEp.Fail()
	// The outage's first error is logged, and then each different one
	// (a socket that appears but refuses, a size limit), at most once a
	// minute each: the log shows what is wrong now, not only what was.
	kind := errKind(err)
	if first || kind != d.lastErr {
		if ok, k := d.errLogs.Note(kind, time.Now()); ok {
			d.log.Warn("sink unavailable; events stay queued in the outbox and are retried with backoff",
				"sink", name, "pending_from_seq", pendingFrom, "delivered", n, "err", err, "failed_attempts", sendEp.Fails(), "repeats", k)
		}
	}
	d.lastErr = kind
	return d.sleep(ctx, wait)
}

// sendSplit sends recs, in order, halving a batch the sink finds too
// large (sink.TooLarge) until the halves fit, unless batchSizes takes the
// refusal for load shedding (the batch is no larger than one the sink
// took): then it stops, and the batch is retried whole after a pause. It
// returns how many leading records were delivered and the error that
// stopped it: those n, and only those, may be acknowledged.
func (d *Drainer) sendSplit(ctx context.Context, recs []outbox.Record) (int, error) {
	evs := make([]event.Event, len(recs))
	for i, r := range recs {
		evs[i] = r.Event
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err := d.send(sctx, evs)
	cancel()
	if err == nil {
		d.sizes.took(len(recs))
		return len(recs), nil
	}
	if !sink.IsTooLarge(err) || len(recs) == 1 || ctx.Err() != nil || !d.sizes.split(recs) {
		return 0, err
	}
	if ok, _ := d.errLogs.Note("split", time.Now()); ok {
		d.log.Info("sink refused a batch as too large; it is sent in smaller batches", "sink", d.sink.Name(), "events", len(recs), "err", err)
	}
	half := len(recs) / 2
	n, err := d.sendSplit(ctx, recs[:half])
	if err != nil {
		return n, err
	}
	m, err := d.sendSplit(ctx, recs[half:])
	return half + m, err
}

// errKind is an error's text without its numbers, so that "3 events not
// delivered" and "5 events not delivered" are one kind of failure.
func errKind(err error) string {
	s := err.Error()
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			if len(b) == 0 || b[len(b)-1] != '#' {
				b = append(b, '#')
			}
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

// ack records delivery up to seq. While the cursor cannot be saved (a full
// or read-only state disk) delivery pauses and the save is retried with
// backoff: the outbox already knows the batch is delivered, so nothing is
// sent twice unless the daemon restarts before the save succeeds. It
// returns false when ctx is done.
func (d *Drainer) ack(ctx context.Context, seq uint64) bool {
	name := d.sink.Name()
	ep := backoff.Episode{Min: BackoffMin, Max: SaveBackoffMax}
	for {
		err := d.ob.Ack(name, seq)
		if err == nil {
			if n, lasted := ep.Recovered(); n > 0 {
				d.log.Info("sink delivery position saved again", "sink", name, "failed_saves", n, "lasted", lasted)
			}
			return true
		}
		if !errors.Is(err, outbox.ErrCursorNotSaved) {
			// Closed, or the sink was removed by a reload: the drainer
			// is being stopped.
			d.log.Warn("cannot record delivery in the outbox", "sink", name, "err", err)
			return ctx.Err() == nil
		}
		first, wait := ep.Fail()
		if first {
			d.log.Error("cannot save the sink's delivery position; delivery pauses and the save is retried with backoff",
				"sink", name, "err", err)
		}
		if !d.sleep(ctx, wait) {
			return false
		}
	}
}

func anyUrgent(recs []outbox.Record) bool {
	for i := range recs {
		if recs[i].Event.Urgent() {
			return true
		}
	}
	return false
}

// isolate handles a batch the sink rejected as invalid. The rejection may
// concern one event of many, so each is offered alone: delivered ones are
// done, each one rejected again is parked in the dead-letter file (with
// the sink's reason) and logged with its id; never silently acknowledged.
// It returns how many leading records are settled (delivered or parked);
// err is set when it stopped early (transient failure, or the dead letter
// could not be saved), and the remaining records stay queued.
func (d *Drainer) isolate(ctx context.Context, recs []outbox.Record, batchErr error) (int, error) {
	name := d.sink.Name()
	var rejected []outbox.Record
	var reasons []string
	done := len(recs)
	var stop error
	for i := range recs {
		err := batchErr
		if len(recs) > 1 {
			sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			err = d.send(sctx, []event.Event{recs[i].Event})
			cancel()
		}
		if err == nil {
			d.sent.Add(1)
			continue
		}
		if !sink.IsPermanent(err) {
			done, stop = i, err
			break
		}
		rejected = append(rejected, recs[i])
		reasons = append(reasons, err.Error())
	}
	// One durable write for the whole batch: a connector that rejects
	// everything must not cost one fsync per event.
	if err := d.ob.Park(name, rejected, reasons); err != nil {
		// Not parked: nothing of the batch is settled; what was
		// delivered is sent again later (a receiver drops repeats by id).
		return 0, err
	}
	for i := range rejected {
		e := &rejected[i].Event
		d.log.Error("sink rejected event as invalid; parked it with the rejected events (nichealthctl events --retry-rejected offers them again)",
			"sink", name, "event_id", e.ID, "seq", rejected[i].Seq, "check", e.CheckName, "device", e.Device(), "port", e.Port(),
			"message", e.Message, "reason", reasons[i]) //nolint:nilaway // reasons has one entry per rejected record, appended together
	}
	return done, stop
}

// retryParked offers the sink's parked events again, one by one, oldest
// first: delivered ones leave the dead letters, ones rejected again stay.
// A transient failure keeps the request pending and backs off. It returns
// false when ctx is done.
func (d *Drainer) retryParked(ctx context.Context) bool {
	name := d.sink.Name()
	parked := d.ob.Parked(name)
	if len(parked) == 0 {
		return true
	}
	var delivered []string
	again := 0
	var transient error
	for _, p := range parked {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := d.send(sctx, []event.Event{p.Event})
		cancel()
		if err == nil {
			d.sent.Add(1)
			delivered = append(delivered, p.Event.ID)
			continue
		}
		d.failed.Add(1)
		if !sink.IsPermanent(err) {
			transient = err
			break
		}
		again++
	}
	if err := d.ob.Unpark(name, delivered); err != nil {
		// Delivered but still listed: the next retry sends them again,
		// which a receiver drops by id.
		d.log.Error("cannot update the rejected events file", "sink", name, "err", err)
	}
	d.log.Info("retried rejected events", "sink", name, "delivered", len(delivered), "rejected_again", again,
		"not_tried", len(parked)-len(delivered)-again)
	if transient != nil {
		d.log.Warn("sink unavailable while retrying rejected events; retrying again with backoff", "sink", name, "err", transient)
		d.RequestRetry()
		return d.sleep(ctx, BackoffMax/4)
	}
	return ctx.Err() == nil
}

// Panic is a panic in a sink's Send (encoding an event, say), recovered
// on the drainer's goroutine where it would have ended the daemon.
type Panic struct {
	Value any
	Stack []byte
}

func (p *Panic) Error() string { return fmt.Sprintf("sink panicked: %v", p.Value) }

// send is Sink.Send inside the sink's boundary.
func (d *Drainer) send(ctx context.Context, evs []event.Event) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &Panic{Value: r, Stack: debug.Stack()}
		}
	}()
	return d.sink.Send(ctx, evs)
}
