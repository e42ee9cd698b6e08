package daemon

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/nichealth/nichealthd/checks/event"
	"github.com/nichealth/nichealthd/daemon/sink"
	"github.com/nichealth/nichealthd/persist/outbox"
)

// drainer moves one sink's events out of the outbox, in order, with retry.
type drainer struct {
	ob    *outbox.Outbox
	sink  sink.Sink
	log   *slog.Logger
	batch time.Duration // non-urgent events may wait this long to share a call

	sent, failed atomic.Uint64
}

const (
	backoffMin = 200 * time.Millisecond
	backoffMax = 30 * time.Second
	// A cursor that cannot be saved is a local disk problem, usually
	// fixed by an operator freeing space; retrying it more often than a
	// remote destination costs one small write.
	saveBackoffMax = 5 * time.Second
	drainBatch     = 256
)

// episode is one run of consecutive failures of one kind. It backs off
// exponentially (capped, jittered) and tells the caller when to log, so an
// outage of any length costs two log lines: when it starts and when it
// ends, with the number of failures in between.
type episode struct {
	min, max time.Duration
	next     time.Duration
	fails    uint64
	start    time.Time
}

// fail records one failure; first reports whether it opened the episode,
// wait is how long to back off before the next attempt.
func (e *episode) fail() (first bool, wait time.Duration) {
	if e.fails == 0 {
		e.start = time.Now()
		e.next = e.min
	}
	e.fails++
	base := e.next
	e.next = min(2*e.next, e.max)
	// Jitter keeps a fleet of nodes from retrying in lockstep when a
	// shared connector comes back.
	return e.fails == 1, base/2 + time.Duration(rand.Int64N(int64(base)))
}

// recovered closes the episode; fails is 0 when there was none.
func (e *episode) recovered() (fails uint64, lasted time.Duration) {
	fails, e.fails = e.fails, 0
	if fails == 0 {
		return 0, 0
	}
	return fails, time.Since(e.start).Round(time.Millisecond)
}

// sleep waits d or until ctx is done; false means stop.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (d *drainer) run(ctx context.Context) {
	name := d.sink.Name()
	readEp := episode{min: backoffMin, max: backoffMax}
	sendEp := episode{min: backoffMin, max: backoffMax}
	for {
		wake := d.ob.Wait()
		recs, err := d.ob.Read(name, drainBatch)
		if err != nil {
			first, wait := readEp.fail()
			if first {
				d.log.Error("cannot read the outbox; retrying with backoff", "sink", name, "err", err)
			}
			if !sleep(ctx, wait) {
				return
			}
			continue
		}
		if n, lasted := readEp.recovered(); n > 0 {
			d.log.Info("outbox readable again", "sink", name, "failures", n, "lasted", lasted)
		}
		if len(recs) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-wake:
			}
			continue
		}
		if d.batch > 0 && !anyUrgent(recs) && len(recs) < drainBatch {
			// Seed 11.2: fatal and recovery events go at once; non-fatal
			// ones may share a call within a short interval.
			if !sleep(ctx, d.batch) {
				return
			}
			if more, err := d.ob.Read(name, drainBatch); err == nil && len(more) > 0 {
				recs = more
			}
		}
		evs := make([]event.Event, len(recs))
		for i, r := range recs {
			evs[i] = r.Event
		}
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err = d.sink.Send(sctx, evs)
		cancel()
		last := recs[len(recs)-1].Seq
		switch {
		case err == nil:
			d.sent.Add(uint64(len(evs)))
			if n, lasted := sendEp.recovered(); n > 0 {
				d.log.Info("sink delivering again", "sink", name, "failed_attempts", n, "lasted", lasted)
			}
			if !d.ack(ctx, last) {
				return
			}
		case sink.IsPermanent(err):
			d.failed.Add(uint64(len(evs)))
			for _, e := range evs {
				d.log.Error("sink rejected event permanently; moving past it", "sink", name,
					"event_id", e.ID, "check", e.CheckName, "message", e.Message, "err", err)
			}
			if !d.ack(ctx, last) {
				return
			}
		default:
			if ctx.Err() != nil {
				return
			}
			d.failed.Add(uint64(len(evs)))
			first, wait := sendEp.fail()
			if first {
				d.log.Warn("sink unavailable; events stay queued in the outbox and are retried with backoff",
					"sink", name, "pending_from_seq", recs[0].Seq, "err", err)
			}
			if !sleep(ctx, wait) {
				return
			}
		}
	}
}

// ack records delivery up to seq. While the cursor cannot be saved (a full
// or read-only state disk) delivery pauses and the save is retried with
// backoff: the outbox already knows the batch is delivered, so nothing is
// sent twice unless the daemon restarts before the save succeeds. It
// returns false when ctx is done.
func (d *drainer) ack(ctx context.Context, seq uint64) bool {
	name := d.sink.Name()
	ep := episode{min: backoffMin, max: saveBackoffMax}
	for {
		err := d.ob.Ack(name, seq)
		if err == nil {
			if n, lasted := ep.recovered(); n > 0 {
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
		first, wait := ep.fail()
		if first {
			d.log.Error("cannot save the sink's delivery position; delivery pauses and the save is retried with backoff",
				"sink", name, "err", err)
		}
		if !sleep(ctx, wait) {
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
