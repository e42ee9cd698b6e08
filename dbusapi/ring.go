package dbusapi

import (
	"encoding/json"
	"fmt"

	"github.com/nichealth/nichealthd/event"
)

// EventRecord is one entry of ListEvents and of the HealthEvent signal: the
// daemon's sequence number and the event as the JSON of event.Event (the
// same schema as the JSON-lines sink). On the wire it is the struct (ts).
type EventRecord struct {
	Seq  uint64
	JSON string
}

// Event decodes the record's JSON.
func (r EventRecord) Event() (event.Event, error) {
	var ev event.Event
	if err := json.Unmarshal([]byte(r.JSON), &ev); err != nil {
		return ev, fmt.Errorf("event %d: %w", r.Seq, err)
	}
	return ev, nil
}

// ring keeps the newest events, oldest first. It is not safe for concurrent
// use; Server.mu guards it.
type ring struct {
	buf   []EventRecord
	start int
	n     int
}

func newRing(size int) ring { return ring{buf: make([]EventRecord, size)} }

func (r *ring) add(rec EventRecord) {
	if len(r.buf) == 0 {
		return
	}
	// Sequence numbers only grow; an event already kept (backfilled from
	// the outbox and then published) is not kept twice.
	if r.n > 0 && rec.Seq <= r.buf[(r.start+r.n-1)%len(r.buf)].Seq {
		return
	}
	if r.n < len(r.buf) {
		r.buf[(r.start+r.n)%len(r.buf)] = rec
		r.n++
		return
	}
	r.buf[r.start] = rec
	r.start = (r.start + 1) % len(r.buf)
}

// since returns, oldest first, the kept records whose Seq is greater than
// seq. A caller that sees the first returned Seq jump past seq+1 has lost
// events to the ring's bound (and should read the journal for them).
func (r *ring) since(seq uint64) []EventRecord {
	out := []EventRecord{}
	for i := 0; i < r.n; i++ {
		rec := r.buf[(r.start+i)%len(r.buf)]
		if rec.Seq > seq {
			out = append(out, rec)
		}
	}
	return out
}
