package outbox

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"hash/fnv"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
)

const (
	headerSize = 24
	// maxPayload bounds one record. An event is a few hundred bytes; a
	// length field above this is damage, not data.
	maxPayload = 1 << 20
)

// magic starts every record. 0xFF and 0xFE are invalid in UTF-8, and
// encoding/json only emits valid UTF-8, so the pair never occurs inside a
// payload and a resynchronising scan cannot stop in the middle of one.
var magic = [4]byte{0xFF, 'N', 'H', 0xFE}

const (
	flagFatal   = 1 << 0
	flagHealthy = 1 << 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Record is one event as the outbox holds it: the sequence number assigned
// at Append and the event itself.
type Record struct {
	Seq   uint64      `json:"seq"`
	Event event.Event `json:"event"`
	// Condition is the event's key (event.Event.Condition), which the
	// wire format of the event leaves out; records written before events
	// carried one have none, and event.KeyOf derives it for them.
	Condition *condition.Key `json:"condition,omitempty"`
}

// entry locates a record inside a segment without decoding it.
type entry struct {
	seq   uint64
	off   int64
	size  int32 // header + payload
	flags uint8
	// key is FoldKey of the event; 0 until known (records indexed at
	// Open are keyed when compaction first needs it).
	key uint64
}

// FoldKey identifies what an event is the latest word on: the condition
// it raises or clears (event.KeyOf), the same key the health model holds
// it under. Under the size bound an undelivered event is folded into a
// newer one with the same key (DESIGN.md section 3); the daemon folds
// events it holds before the outbox takes them by the same rule. An event
// that names no condition is the only one of its key: never folded.
// Never 0.
func FoldKey(ev *event.Event) uint64 {
	h := fnv.New64a()
	k, ok := event.KeyOf(ev)
	if !ok {
		h.Write([]byte{0xff})
		h.Write([]byte(ev.ID))
		return max(h.Sum64(), 1)
	}
	for _, s := range []string{k.Check, string(k.Entity.Kind), k.Entity.Device, k.Entity.Card, k.Entity.Name, k.Entity.PCI} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	var port [8]byte
	binary.LittleEndian.PutUint64(port[:], uint64(k.Entity.Port))
	h.Write(port[:])
	return max(h.Sum64(), 1)
}

func flagsOf(ev *event.Event) uint8 {
	var f uint8
	if ev.IsFatal {
		f |= flagFatal
	}
	if ev.IsHealthy {
		f |= flagHealthy
	}
	return f
}

// appendRecord encodes one record onto dst.
func appendRecord(dst []byte, seq uint64, ev *event.Event) ([]byte, error) {
	r := Record{Seq: seq, Event: *ev}
	if ev.Condition.Known() {
		r.Condition = &ev.Condition
	}
	payload, err := json.Marshal(r)
	if err != nil {
		return dst, fmt.Errorf("encode event %s: %w", ev.ID, err)
	}
	if len(payload) > maxPayload {
		return dst, fmt.Errorf("event %s encodes to %d bytes, above the %d-byte record limit", ev.ID, len(payload), maxPayload)
	}
	var h [headerSize]byte
	copy(h[0:4], magic[:])
	binary.LittleEndian.PutUint32(h[4:8], uint32(len(payload)))
	binary.LittleEndian.PutUint64(h[12:20], seq)
	h[20] = flagsOf(ev)
	binary.LittleEndian.PutUint32(h[8:12], checksum(h[:], payload))
	dst = append(dst, h[:]...)
	return append(dst, payload...), nil
}

func checksum(h, payload []byte) uint32 {
	c := crc32.Update(0, castagnoli, h[4:8])
	c = crc32.Update(c, castagnoli, h[12:24])
	return crc32.Update(c, castagnoli, payload)
}

// parseAt checks the record starting at b[off:]: magic, a sane length, the
// bytes all present and the checksum right.
func parseAt(b []byte, off int) (entry, bool) {
	if off < 0 || len(b)-off < headerSize {
		return entry{}, false
	}
	h := b[off : off+headerSize]
	if !bytes.Equal(h[0:4], magic[:]) {
		return entry{}, false
	}
	n := binary.LittleEndian.Uint32(h[4:8])
	if n > maxPayload || int64(len(b)-off-headerSize) < int64(n) {
		return entry{}, false
	}
	payload := b[off+headerSize : off+headerSize+int(n)]
	if binary.LittleEndian.Uint32(h[8:12]) != checksum(h, payload) {
		return entry{}, false
	}
	return entry{
		seq:   binary.LittleEndian.Uint64(h[12:20]),
		off:   int64(off),
		size:  int32(headerSize + int(n)),
		flags: h[20],
	}, true
}

// span is a damaged region of a segment.
type span struct {
	off, n int64
	// tail: the region runs to the end of the file, as an interrupted
	// append leaves it.
	tail bool
}

// scan indexes every valid record of a segment's bytes and reports the
// damaged regions between them. It never fails: whatever is not a valid
// record is a damaged region.
func scan(b []byte) ([]entry, []span) {
	var ents []entry
	var bad []span
	off := 0
	for off < len(b) {
		if e, ok := parseAt(b, off); ok {
			ents = append(ents, e)
			off += int(e.size)
			continue
		}
		next := resync(b, off+1)
		if next < 0 {
			bad = append(bad, span{off: int64(off), n: int64(len(b) - off), tail: true})
			break
		}
		bad = append(bad, span{off: int64(off), n: int64(next - off)})
		off = next
	}
	return ents, bad
}

// resync finds the next offset at or after from where a valid record
// starts, or -1.
func resync(b []byte, from int) int {
	for from < len(b) {
		i := bytes.Index(b[from:], magic[:])
		if i < 0 {
			return -1
		}
		if _, ok := parseAt(b, from+i); ok {
			return from + i
		}
		from += i + 1
	}
	return -1
}

// decode reads the record whose entry is e from buf, which holds the
// segment bytes starting at file offset base.
func decode(buf []byte, base int64, e entry) (Record, error) {
	at := int(e.off - base)
	got, ok := parseAt(buf, at)
	if !ok || got.seq != e.seq {
		return Record{}, fmt.Errorf("checksum mismatch")
	}
	var r Record
	if err := json.Unmarshal(buf[at+headerSize:at+int(got.size)], &r); err != nil {
		return Record{}, fmt.Errorf("decode: %w", err)
	}
	if r.Seq != e.seq {
		return Record{}, fmt.Errorf("payload says seq %d, header %d", r.Seq, e.seq)
	}
	if r.Condition != nil {
		r.Event.Condition, r.Condition = *r.Condition, nil
	}
	return r, nil
}
