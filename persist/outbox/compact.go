package outbox

import (
	"fmt"
	"os"

	"github.com/nichealth/nichealthd/persist"
)

// makeRoom keeps the segments within MaxBytes before need more bytes are
// appended; incoming are the fold keys of the events about to be appended.
// Oldest segment first, it rewrites segments without the records every
// sink has delivered (free) and without undelivered events that a newer
// one of the same check and entity supersedes (folded into it, counted),
// until there is room plus a margin of MaxBytes/16, so that a sustained
// overflow does not rewrite a segment on every append. The latest event of
// every check and entity survives, so each consumer's last word on every
// port is right when the destination comes back (DESIGN.md section 3);
// when only such events remain, the bound is exceeded and one warning
// says so.
func (o *Outbox) makeRoom(need int64, incoming []uint64) {
	excess := o.bytes + need - o.opts.MaxBytes
	if excess <= 0 {
		o.overBound = false
		return
	}
	target := excess + o.opts.MaxBytes/16
	delivered, ok := o.minCursor()
	if !ok {
		// No destination is configured to wait for anything: under
		// pressure every record is fair game, oldest first.
		delivered = o.nextSeq - 1
	}
	newest := o.newestByKey(delivered, incoming)
	var freed int64
	for k := 0; k < len(o.segs) && freed < target; k++ {
		s := o.segs[k]
		var keep []entry
		var folded uint64
		var gain int64
		for _, e := range s.ents {
			switch {
			case e.seq <= delivered:
				gain += int64(e.size)
			case e.key != 0 && e.seq < newest[e.key] && freed+gain < target:
				gain += int64(e.size)
				folded++
			default:
				keep = append(keep, e)
			}
		}
		if gain == 0 {
			continue
		}
		before := s.size
		removed, err := o.rewrite(k, keep)
		if err != nil {
			o.log.Warn(fmt.Sprintf("outbox segment %s: could not compact it to stay within %d bytes: %v", s.path, o.opts.MaxBytes, err),
				"segment", s.path, "err", err)
			break
		}
		o.folded += folded
		freed += before - s.size
		if removed {
			k--
		}
	}
	if o.bytes+need <= o.opts.MaxBytes {
		o.overBound = false
		return
	}
	if !o.overBound {
		o.overBound = true
		o.log.Warn(fmt.Sprintf("outbox %s holds %d bytes, above its bound of %d: only the latest event of each check and entity remains undelivered and those are never dropped; find out why sink %s is not draining",
			o.dir, o.bytes+need, o.opts.MaxBytes, o.slowestSink()),
			"dir", o.dir, "bytes", o.bytes+need, "max_bytes", o.opts.MaxBytes)
	}
}

// newestByKey maps each fold key to the highest undelivered sequence
// number carrying it, counting the incoming events (which get the next
// numbers). Records indexed at Open get their key here, once, by decoding
// their segment; one that cannot be decoded keeps key 0 and is never
// folded.
func (o *Outbox) newestByKey(delivered uint64, incoming []uint64) map[uint64]uint64 {
	newest := make(map[uint64]uint64)
	for _, s := range o.segs {
		if s.lastSeq() <= delivered {
			continue
		}
		o.keySegment(s)
		for _, e := range s.ents {
			if e.seq > delivered && e.key != 0 {
				newest[e.key] = max(newest[e.key], e.seq)
			}
		}
	}
	for i, k := range incoming {
		newest[k] = o.nextSeq + uint64(i)
	}
	return newest
}

// keySegment fills in the fold keys of a segment's records that lack one.
func (o *Outbox) keySegment(s *segment) {
	missing := false
	for _, e := range s.ents {
		if e.key == 0 {
			missing = true
			break
		}
	}
	if !missing {
		return
	}
	recs, err := o.readRange(s, 0, len(s.ents))
	if err != nil {
		o.log.Warn("outbox: could not read a segment to compact it", "segment", s.path, "err", err)
		return
	}
	keys := make(map[uint64]uint64, len(recs))
	for i := range recs {
		keys[recs[i].Seq] = FoldKey(&recs[i].Event)
	}
	for i := range s.ents {
		if s.ents[i].key == 0 {
			s.ents[i].key = keys[s.ents[i].seq]
		}
	}
}

func (o *Outbox) slowestSink() string {
	name, low := "", ^uint64(0)
	for n, c := range o.cursors {
		if c < low || c == low && n < name {
			name, low = n, c
		}
	}
	return name
}

// rewrite replaces segment k by one holding only keep, atomically (new
// file, data sync, rename, directory sync), or deletes it when keep is
// empty and it is not the newest. It reports whether the segment is gone.
func (o *Outbox) rewrite(k int, keep []entry) (bool, error) {
	s := o.segs[k]
	newest := k == len(o.segs)-1
	if len(keep) == 0 && !newest {
		if err := os.Remove(s.path); err != nil {
			return false, err
		}
		o.bytes -= s.size
		o.segs = append(o.segs[:k], o.segs[k+1:]...)
		return true, nil
	}
	old, err := os.ReadFile(s.path)
	if err != nil {
		return false, err
	}
	var buf []byte
	ents := make([]entry, 0, len(keep))
	for _, e := range keep {
		if e.off+int64(e.size) > int64(len(old)) {
			continue
		}
		ne := e
		ne.off = int64(len(buf))
		buf = append(buf, old[e.off:e.off+int64(e.size)]...)
		ents = append(ents, ne)
	}
	tmp := s.path + ".tmp"
	os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return false, err
	}
	if _, err = f.Write(buf); err == nil {
		err = datasync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, s.path)
	}
	if err != nil {
		os.Remove(tmp)
		return false, err
	}
	if err := persist.SyncDir(o.dir); err != nil {
		o.log.Warn("outbox: directory sync after compaction failed", "dir", o.dir, "err", err)
	}
	o.bytes += int64(len(buf)) - s.size
	s.size = int64(len(buf))
	s.ents = ents
	if newest {
		// The append handle still points at the replaced file; Append
		// reopens the new one.
		o.active.Close()
		o.active = nil
		if err := o.ensureActive(); err != nil {
			return false, err
		}
	}
	return false, nil
}

// settleBound clears the over-bound state once the sinks have drained
// enough that what remains undelivered fits the bound again: delivered
// records still on disk are freed by the next append, so they do not keep
// nichealth_outbox_over_bound (and its alert) up after the backlog is
// gone. Only makeRoom used to clear it, which a quiet node never calls.
func (o *Outbox) settleBound() {
	if !o.overBound {
		return
	}
	delivered, ok := o.minCursor()
	if !ok {
		return
	}
	var pending int64
	for _, s := range o.segs {
		if s.lastSeq() <= delivered {
			continue
		}
		for _, e := range s.ents {
			if e.seq > delivered {
				pending += int64(e.size)
			}
		}
	}
	if pending <= o.opts.MaxBytes {
		o.overBound = false
		o.log.Info(fmt.Sprintf("outbox %s: the undelivered events fit its bound of %d bytes again", o.dir, o.opts.MaxBytes),
			"dir", o.dir, "undelivered_bytes", pending, "max_bytes", o.opts.MaxBytes)
	}
}
