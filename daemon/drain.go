package daemon

import (
	"context"
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
	drainBatch = 256
)

func (d *drainer) run(ctx context.Context) {
	backoff := backoffMin
	for {
		recs, err := d.ob.Read(d.sink.Name(), drainBatch)
		if err != nil {
			d.log.Error("cannot read the outbox; retrying", "sink", d.sink.Name(), "err", err)
		}
		if len(recs) == 0 || err != nil {
			select {
			case <-ctx.Done():
				return
			case <-d.ob.Wait():
			case <-time.After(time.Second):
			}
			continue
		}
		if d.batch > 0 && !anyUrgent(recs) && len(recs) < drainBatch {
			// Seed 11.2: fatal and recovery events go at once; non-fatal
			// ones may share a call within a short interval.
			select {
			case <-ctx.Done():
				return
			case <-time.After(d.batch):
			}
			if more, err := d.ob.Read(d.sink.Name(), drainBatch); err == nil {
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
			backoff = backoffMin
			if err := d.ob.Ack(d.sink.Name(), last); err != nil {
				d.log.Error("cannot record delivery in the outbox; events may be sent again after a restart", "sink", d.sink.Name(), "err", err)
			}
		case sink.IsPermanent(err):
			d.failed.Add(uint64(len(evs)))
			for _, e := range evs {
				d.log.Error("sink rejected event permanently; moving past it", "sink", d.sink.Name(),
					"event_id", e.ID, "check", e.CheckName, "message", e.Message, "err", err)
			}
			if err := d.ob.Ack(d.sink.Name(), last); err != nil {
				d.log.Error("cannot record delivery in the outbox", "sink", d.sink.Name(), "err", err)
			}
		default:
			d.failed.Add(uint64(len(evs)))
			if backoff == backoffMin {
				d.log.Warn("sink unavailable; events stay queued in the outbox and are retried with backoff",
					"sink", d.sink.Name(), "pending_from_seq", recs[0].Seq, "err", err)
			}
			// Full jitter keeps a fleet of nodes from retrying in lockstep
			// when a shared connector comes back.
			wait := time.Duration(rand.Int64N(int64(backoff))) + backoff/2
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			backoff = min(backoff*2, backoffMax)
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
