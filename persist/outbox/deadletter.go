package outbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/internal/regularfile"
	"github.com/nichealth/nichealthd/persist"
)

// Parked is an event a sink rejected as invalid (gRPC InvalidArgument):
// retrying it as it is cannot succeed, acknowledging it would lose it, so it
// waits in the sink's dead-letter file until an operator fixes the cause
// and asks for a retry (reload, nichealthctl events --retry-rejected).
type Parked struct {
	Seq    uint64      `json:"seq"`
	Reason string      `json:"reason"`
	Event  event.Event `json:"event"`
}

// maxParkedBytes bounds a dead-letter file read at Open.
const maxParkedBytes = 64 << 20

func (o *Outbox) parkedPath(sink string) string { return filepath.Join(o.dir, "rejected."+sink) }

// loadParked reads a dead-letter file at Open; a damaged line costs only
// itself.
func (o *Outbox) loadParked(p string) {
	sink := strings.TrimPrefix(filepath.Base(p), "rejected.")
	if !validSink(sink) {
		return
	}
	b, err := regularfile.Read(p, maxParkedBytes)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			o.corrupt++
			o.log.Warn(fmt.Sprintf("outbox dead-letter file %s unreadable: %v; its rejected events are not shown or retried (move it away)", p, err), "file", p)
		}
		return
	}
	var list []Parked
	for i, line := range bytes.Split(b, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var pk Parked
		if err := json.Unmarshal(line, &pk); err != nil {
			o.corrupt++
			o.log.Warn(fmt.Sprintf("outbox dead-letter file %s: skipped damaged line %d: %v", p, i+1, err), "file", p, "line", i+1)
			continue
		}
		list = append(list, pk)
	}
	if len(list) > 0 {
		o.parked[sink] = list
	}
}

// saveParked rewrites sink's dead-letter file atomically (or removes it
// when nothing is parked). Rejections are rare, so a whole rewrite is
// cheaper in code than an append log and never leaves half a line.
func (o *Outbox) saveParked(sink string, list []Parked) error {
	p := o.parkedPath(sink)
	if len(list) == 0 {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove outbox dead-letter file %s: %w", p, err)
		}
		return persist.SyncDir(o.dir)
	}
	var buf bytes.Buffer
	for i := range list {
		b, err := json.Marshal(&list[i])
		if err != nil {
			return fmt.Errorf("encode rejected event %s: %w", list[i].Event.ID, err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if err := persist.WriteFileAtomic(p, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("save outbox dead-letter file %s: %w (%s)", p, err, persist.FixHint(o.dir, err))
	}
	return nil
}

// Park stores recs durably as rejected by sink, reasons[i] being why
// recs[i] was. Only after it succeeds may the sink acknowledge them; on
// error nothing is parked. An event parked already keeps its first entry.
func (o *Outbox) Park(sink string, recs []Record, reasons []string) error {
	if len(reasons) != len(recs) {
		return fmt.Errorf("outbox: %d reasons for %d rejected events", len(reasons), len(recs))
	}
	if len(recs) == 0 {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return ErrClosed
	}
	defer o.publishLocked()
	ps := make([]Parked, len(recs))
	for i, r := range recs {
		ps[i] = Parked{Seq: r.Seq, Reason: reasons[i], Event: r.Event}
	}
	return o.parkLocked(sink, ps)
}

// parkLocked adds ps to sink's dead letters; o.mu held.
func (o *Outbox) parkLocked(sink string, ps []Parked) error {
	list := slices.Clone(o.parked[sink])
	for _, p := range ps {
		if !slices.ContainsFunc(list, func(q Parked) bool { return q.Event.ID == p.Event.ID }) {
			list = append(list, p)
		}
	}
	if err := o.saveParked(sink, list); err != nil {
		return err
	}
	o.parked[sink] = list
	return nil
}

// UnfitSink names the dead letters of events Append could not store as
// records. No sink drains them (a retry cannot make them fit); they are
// counted with the rejected events so that every view shows them.
const UnfitSink = "outbox"

// unfitParked is the dead letter of an event that could not be a record:
// its identity, flags and entities with the message cut to 4 KiB and the
// metadata left out, so the dead-letter file itself stays bounded.
func unfitParked(ev *event.Event, err error) Parked {
	e := *ev
	e.Message = event.Truncate(e.Message, event.MaxMessageBytes)
	e.Metadata = nil
	e.ErrorCode = slices.Clone(e.ErrorCode[:min(len(e.ErrorCode), event.MaxErrorCodes)])
	e.EntitiesImpacted = slices.Clone(e.EntitiesImpacted[:min(len(e.EntitiesImpacted), event.MaxEntities)])
	return Parked{Reason: "not stored as an outbox record: " + event.Truncate(err.Error(), 512), Event: e}
}

// Parked returns sink's rejected events, oldest first.
func (o *Outbox) Parked(sink string) []Parked {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.parked[sink])
}

// Unpark removes the events with the given IDs from sink's dead letters
// (they were delivered on a retry).
func (o *Outbox) Unpark(sink string, ids []string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return ErrClosed
	}
	defer o.publishLocked()
	list := slices.DeleteFunc(slices.Clone(o.parked[sink]), func(p Parked) bool { return slices.Contains(ids, p.Event.ID) })
	if err := o.saveParked(sink, list); err != nil {
		return err
	}
	if len(list) == 0 {
		delete(o.parked, sink)
	} else {
		o.parked[sink] = list
	}
	return nil
}

// Rejected is the number of parked events of every sink, as of the last
// change (lock-free, like Stats).
func (o *Outbox) Rejected() int { return o.Stats().Rejected }

// rejectedCount is the number of parked events of every sink; o.mu held.
func (o *Outbox) rejectedCount() int {
	n := 0
	for _, l := range o.parked {
		n += len(l)
	}
	return n
}
