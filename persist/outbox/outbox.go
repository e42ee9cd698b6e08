package outbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/internal/regularfile"
	"github.com/nichealth/nichealthd/persist"
)

// Defaults for Options.
const (
	DefaultMaxBytes     = 64 << 20
	DefaultSegmentBytes = 4 << 20
	DefaultRecentSize   = 1024
	// DefaultReadMax is what Read returns at most when max <= 0.
	DefaultReadMax = 1024
)

// maxSeq bounds sequence numbers read from disk. Appending at a million
// events a second would take 146 000 years to reach it; a number above it
// is damage, and accepting it would make the next seq wrap around.
const maxSeq = 1 << 62

// ErrClosed is returned by every method after Close.
var ErrClosed = errors.New("outbox is closed")

// Options tune an Outbox; the zero value is usable.
type Options struct {
	// MaxBytes bounds the segments on disk (default 64 MiB). Over it,
	// delivered records are removed first, then undelivered events that a
	// newer event of the same check and entity supersedes (folded), oldest
	// first; the latest event of every check and entity is never removed.
	MaxBytes int64
	// SegmentBytes is the size at which a new segment is started (default
	// 4 MiB; at most MaxBytes). A batch never straddles two segments.
	SegmentBytes int64
	// Sinks are the names of the destinations that drain the outbox, each
	// with its own cursor. Names are [A-Za-z0-9][A-Za-z0-9._-]*, at most
	// 64 bytes, as they name files.
	Sinks []string
	// RecentSize is how many of the latest records Recent and Since keep
	// in memory (default 1024).
	RecentSize int
	// Logger receives the warnings about damaged segments and the bound;
	// nil discards them.
	Logger *slog.Logger

	// files opens the segments Append writes to (nil: the real files).
	// Only the package's own tests set it, to record the order of the
	// writes and data syncs that makes an append durable.
	files segmentOpener
}

// Stats is a snapshot of the outbox for status output and metrics. Its
// Sinks map is shared by every caller of Stats: read it, never write it.
type Stats struct {
	LastSeq  uint64 // highest sequence number assigned; 0 before any
	Records  int    // records retained on disk
	Bytes    int64  // bytes of all segments
	Segments int
	// Folded counts undelivered events removed by the size bound since
	// Open because a newer event of the same check and entity superseded
	// them. Dropped counts events removed without such a successor; the
	// bound no longer does that, so it stays 0. Corrupt counts damaged
	// regions skipped since Open.
	Folded  uint64
	Dropped uint64
	Corrupt uint64
	// OverBound: the bound is exceeded because only the latest event of
	// each check and entity remains undelivered.
	OverBound bool
	// Rejected is the number of events parked because a sink rejected
	// them as invalid, over every sink.
	Rejected int
	Sinks    map[string]SinkStats
}

// SinkStats is one sink's position.
type SinkStats struct {
	Cursor   uint64 // last acknowledged sequence number
	Depth    int    // retained records after the cursor
	Rejected int    // events parked as rejected by this sink
}

type segment struct {
	base uint64 // from the file name: no record in it is below base
	path string
	size int64
	ents []entry
}

func (s *segment) lastSeq() uint64 {
	if len(s.ents) == 0 {
		return 0
	}
	return s.ents[len(s.ents)-1].seq
}

// Outbox is an open outbox directory. It is safe for concurrent use: the
// poll loop appends while one drainer per sink reads and acknowledges.
type Outbox struct {
	dir  string
	opts Options
	log  *slog.Logger

	mu        sync.Mutex
	closed    bool
	lock      *os.File
	segs      []*segment // oldest first; the last is the one appended to
	active    segmentFile
	bytes     int64
	nextSeq   uint64
	cursors   map[string]uint64 // registered sinks only
	unsaved   map[string]bool   // sinks whose cursor file lags behind cursors
	parked    map[string][]Parked
	notify    chan struct{}
	dropped   uint64
	folded    uint64
	corrupt   uint64
	overBound bool

	// The views read these without o.mu, which an Append holds for as
	// long as its write and data sync take: on a filesystem whose writes
	// hang, that is for ever, and the metrics endpoint, D-Bus and the
	// poll loop must go on answering. stats is published under o.mu at
	// the end of every change; recent has its own lock, held only to copy
	// records; maxBytes is a bound asked for by a reload, taken by the
	// next Append.
	stats    atomic.Pointer[Stats]
	recentMu sync.Mutex
	recent   []Record
	maxBytes atomic.Int64
}

// Open opens (creating it if needed) the outbox in dir. It truncates a torn
// tail left by an interrupted append, skips damaged regions with one
// warning each, and removes segments every registered sink has passed.
// Errors: dir not creatable, the outbox locked by another process, a
// segment that cannot be read, or a bad sink name.
func Open(dir string, opts Options) (*Outbox, error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.SegmentBytes <= 0 {
		opts.SegmentBytes = DefaultSegmentBytes
	}
	if opts.SegmentBytes > opts.MaxBytes {
		opts.SegmentBytes = opts.MaxBytes
	}
	if opts.RecentSize <= 0 {
		opts.RecentSize = DefaultRecentSize
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.files == nil {
		opts.files = osSegments{}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create outbox directory %s: %w (%s)", dir, err, persist.FixHint(dir, err))
	}
	o := &Outbox{dir: dir, opts: opts, log: log, notify: make(chan struct{}), cursors: map[string]uint64{}, unsaved: map[string]bool{}, parked: map[string][]Parked{}}
	if err := o.takeLock(); err != nil {
		return nil, err
	}
	if err := o.load(); err != nil {
		o.lock.Close()
		if o.active != nil {
			o.active.Close()
		}
		return nil, err
	}
	return o, nil
}

// takeLock keeps a second daemon on the same state directory from
// interleaving its appends with ours.
func (o *Outbox) takeLock() error {
	p := filepath.Join(o.dir, "lock")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open outbox lock %s: %w", p, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("outbox %s is in use by another process: is a second nichealthd running with the same state directory?", o.dir)
		}
		return fmt.Errorf("lock outbox %s: %w", p, err)
	}
	o.lock = f
	return nil
}

func (o *Outbox) load() error {
	names, err := os.ReadDir(o.dir)
	if err != nil {
		return fmt.Errorf("read outbox directory %s: %w", o.dir, err)
	}
	var cursorFiles []string
	for _, de := range names {
		n := de.Name()
		switch {
		case strings.HasSuffix(n, ".log.tmp") || (strings.HasPrefix(n, "cursor.") || strings.HasPrefix(n, "rejected.")) && strings.Contains(n, ".tmp-"):
			// A compaction, cursor or dead-letter write that never
			// reached its rename.
			os.Remove(filepath.Join(o.dir, n))
		case strings.HasPrefix(n, "rejected."):
			o.loadParked(filepath.Join(o.dir, n))
		case strings.HasPrefix(n, "cursor."):
			cursorFiles = append(cursorFiles, filepath.Join(o.dir, n))
		case strings.HasSuffix(n, ".log") && len(n) == 24 && de.Type().IsRegular():
			base, err := strconv.ParseUint(n[:20], 10, 64)
			if err != nil || base >= maxSeq {
				o.corrupt++
				o.log.Warn(fmt.Sprintf("outbox segment %s: the name is not a valid sequence number; ignoring the file (move it away)", filepath.Join(o.dir, n)),
					"segment", filepath.Join(o.dir, n))
				continue
			}
			o.segs = append(o.segs, &segment{base: base, path: filepath.Join(o.dir, n)})
		}
	}
	sort.Slice(o.segs, func(i, j int) bool { return o.segs[i].base < o.segs[j].base })

	var last uint64
	for i, s := range o.segs {
		if err := o.index(s, i == len(o.segs)-1, &last); err != nil {
			return err
		}
	}
	// The highest number the segments show was handed out.
	evidence := last
	if n := len(o.segs); n > 0 && o.segs[n-1].base > 0 {
		evidence = max(evidence, o.segs[n-1].base-1)
	}
	// Every plausible cursor, registered or not, bounds the next seq: a
	// number a sink has acknowledged must never be reused, or the sink
	// would skip the new event that gets it.
	var maxCursor uint64
	for _, p := range cursorFiles {
		if c, ok := o.checkCursor(p, evidence); ok {
			maxCursor = max(maxCursor, c)
		}
	}
	o.nextSeq = max(last+1, maxCursor+1)
	if n := len(o.segs); n > 0 {
		o.nextSeq = max(o.nextSeq, o.segs[n-1].base)
	}
	if err := o.setSinks(o.opts.Sinks); err != nil {
		return err
	}
	if len(o.segs) == 0 {
		if err := o.newSegment(); err != nil {
			return err
		}
	} else if err := o.ensureActive(); err != nil {
		return err
	}
	o.collect()
	o.loadRecent()
	o.publishLocked()
	return nil
}

// cursorSlack is how far a cursor may lie beyond the highest sequence
// number the segments show. A sink can only acknowledge numbers that were
// handed out, so a cursor beyond them means the newest records were lost
// with their segment; within this slack it is still believed (and keeps
// those numbers from being reused), beyond it the file is damage.
const cursorSlack = 1 << 20

// checkCursor validates one cursor file at Open. A damaged one (not a
// number, or a number no Append handed out, such as one past 2^62) would
// otherwise either push the next sequence number towards the end of the
// range, where numbers are refused at the next start and handed out again,
// or make the sink re-send everything on every start; it is rebased to 0
// on disk, once, with one warning: the sink re-sends what is retained
// (a duplicate is better than a loss), and the next Ack stores a valid
// number.
func (o *Outbox) checkCursor(p string, evidence uint64) (uint64, bool) {
	c, err := parseCursor(p)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false
	}
	if err == nil && c > evidence+cursorSlack {
		err = fmt.Errorf("%d is beyond the last sequence number handed out (%d)", c, evidence)
	}
	if err == nil {
		return c, true
	}
	o.log.Warn(fmt.Sprintf("outbox cursor %s is damaged (%v): rebased to 0, so the sink re-sends the retained events once", p, err),
		"file", p)
	if werr := persist.WriteFileAtomic(p, []byte("0\n"), 0o600); werr != nil {
		o.log.Warn("outbox: could not rewrite the damaged cursor; it is rebased in memory only", "file", p, "err", werr)
	}
	return 0, false
}

// index reads a segment, keeps its valid records in sequence order and
// reports each damaged region once. A torn tail of the newest segment is
// cut off so that the next append starts on a record boundary.
func (o *Outbox) index(s *segment, newest bool, last *uint64) error {
	// Bounded: a file put there under a segment's name must not exhaust
	// memory. A real segment holds at most SegmentBytes plus one batch,
	// under the largest bound it was written with.
	b, err := regularfile.Read(s.path, 2*max(o.opts.MaxBytes, DefaultMaxBytes))
	if err != nil {
		return fmt.Errorf("read outbox segment %s: %w (move the file away to start without it)", s.path, err)
	}
	ents, bad := scan(b)
	size := int64(len(b))
	for _, sp := range bad {
		o.corrupt++
		if sp.tail && newest {
			o.log.Warn(fmt.Sprintf("outbox segment %s: cut %d bytes of an interrupted append at offset %d", s.path, sp.n, sp.off),
				"segment", s.path, "offset", sp.off, "bytes", sp.n)
			if err := os.Truncate(s.path, sp.off); err != nil {
				return fmt.Errorf("truncate torn tail of outbox segment %s at offset %d: %w", s.path, sp.off, err)
			}
			size = sp.off
			continue
		}
		o.log.Warn(fmt.Sprintf("outbox segment %s: skipped %d damaged bytes at offset %d", s.path, sp.n, sp.off),
			"segment", s.path, "offset", sp.off, "bytes", sp.n)
	}
	// Sequence numbers only grow. A record that breaks the order cannot
	// have been written by Append; keeping it would break cursors.
	kept := ents[:0]
	for _, e := range ents {
		if e.seq <= *last || e.seq >= maxSeq {
			o.corrupt++
			o.log.Warn(fmt.Sprintf("outbox segment %s: skipped a record out of sequence (seq %d after %d) at offset %d", s.path, e.seq, *last, e.off),
				"segment", s.path, "offset", e.off)
			continue
		}
		*last = e.seq
		kept = append(kept, e)
	}
	s.ents = kept
	s.size = size
	o.bytes += size
	return nil
}

func (o *Outbox) cursorPath(sink string) string { return filepath.Join(o.dir, "cursor."+sink) }

// readCursor returns a sink's cursor; a missing file is 0, a damaged one
// is 0 with a warning (the sink then resends what is retained: a duplicate
// is better than a loss).
func (o *Outbox) readCursor(sink string) (uint64, bool) {
	p := o.cursorPath(sink)
	c, err := parseCursor(p)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false
	}
	if err == nil && c >= o.nextSeq {
		// Open rebases the cursors it finds; this one appeared later.
		err = fmt.Errorf("%d is beyond the last sequence number handed out (%d)", c, o.nextSeq-1)
	}
	if err == nil {
		return c, true
	}
	o.log.Warn(fmt.Sprintf("outbox cursor %s unreadable, sink %s restarts from the oldest retained event: %v", p, sink, err),
		"file", p, "sink", sink)
	return 0, false
}

// maxCursorBytes bounds a cursor file: a number and a newline.
const maxCursorBytes = 64

func parseCursor(p string) (uint64, error) {
	b, err := regularfile.Read(p, maxCursorBytes)
	if err != nil {
		return 0, err
	}
	c, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || c >= maxSeq {
		return 0, fmt.Errorf("not a sequence number: %q", truncate(string(b), 40))
	}
	return c, nil
}

// SetSinks replaces the set of sinks (configuration reload). A sink new to
// the outbox starts from the oldest retained record, so nothing emitted
// before it was configured is lost; a sink that comes back resumes from
// its cursor file; a removed sink no longer holds back segment deletion.
func (o *Outbox) SetSinks(names []string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return ErrClosed
	}
	defer o.publishLocked()
	if err := o.setSinks(names); err != nil {
		return err
	}
	o.collect()
	return nil
}

// setSinks is SetSinks for a caller holding the lock.
func (o *Outbox) setSinks(names []string) error {
	for _, n := range names {
		if !validSink(n) {
			return fmt.Errorf("outbox sink name %q: use letters, digits, '.', '_' and '-' (at most 64)", n)
		}
	}
	next := make(map[string]uint64, len(names))
	for _, n := range names {
		if c, ok := o.cursors[n]; ok {
			next[n] = c
			continue
		}
		c, _ := o.readCursor(n)
		next[n] = c
	}
	o.cursors = next
	for n := range o.unsaved {
		if _, ok := next[n]; !ok {
			delete(o.unsaved, n)
		}
	}
	return nil
}

func validSink(n string) bool {
	// ".tmp" would make the cursor file look like a leftover temporary.
	if n == "" || len(n) > 64 || strings.Contains(n, ".tmp") {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return false
		}
	}
	return true
}

func segmentName(base uint64) string { return fmt.Sprintf("%020d.log", base) }

// ensureActive opens the newest segment for appending if it is not open.
func (o *Outbox) ensureActive() error {
	if o.active != nil {
		return nil
	}
	s := o.segs[len(o.segs)-1]
	f, err := o.opts.files.OpenAppend(s.path, false)
	if err != nil {
		return fmt.Errorf("open outbox segment %s: %w (%s)", s.path, err, persist.FixHint(o.dir, err))
	}
	o.active = f
	return nil
}

// newSegment starts the segment that the next record goes to. Its name is
// the next sequence number, which also keeps that number from being reused
// after a restart when every older record has been deleted.
func (o *Outbox) newSegment() error {
	p := filepath.Join(o.dir, segmentName(o.nextSeq))
	f, err := o.opts.files.OpenAppend(p, true)
	if err != nil {
		return fmt.Errorf("create outbox segment %s: %w (%s)", p, err, persist.FixHint(o.dir, err))
	}
	if err := persist.SyncDir(o.dir); err != nil {
		f.Close()
		os.Remove(p)
		return err
	}
	if o.active != nil {
		o.active.Close()
	}
	o.active = f
	o.segs = append(o.segs, &segment{base: o.nextSeq, path: p})
	return nil
}

// Append stores evs durably, in order, and returns the sequence number
// assigned to each. All records of one call go to one segment with one
// data sync. Outcomes:
//   - (seqs, nil): every event is on stable storage; the caller may now
//     save the state that produced them. An event that cannot be a record
//     at all (it does not encode, or encodes above the 1 MiB record
//     limit) is parked instead, in the dead letters of UnfitSink with the
//     reason, and its seq is 0: it is durable there and shown as
//     rejected, and it never holds back the events after it;
//   - (nil, err): none is; the segment is cut back to where it was, and
//     the caller must not save that state (it keeps the events and
//     appends them again).
//
// Appending never refuses an event for lack of room: the bound is kept by
// dropping older non-fatal events (see Options.MaxBytes).
func (o *Outbox) Append(evs []event.Event) ([]uint64, error) {
	if len(evs) == 0 {
		return nil, nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil, ErrClosed
	}
	defer o.publishLocked()
	if n := o.maxBytes.Swap(0); n > 0 {
		o.opts.MaxBytes = n
		o.opts.SegmentBytes = min(o.opts.SegmentBytes, n)
	}
	if o.nextSeq+uint64(len(evs)) >= maxSeq {
		// Unreachable after Open's checks (a million events a second
		// for 146 000 years); refusing beats handing out a number the
		// next Open rejects.
		return nil, fmt.Errorf("outbox %s: sequence numbers exhausted at %d: move the directory away to start a new outbox", o.dir, o.nextSeq)
	}
	buf := make([]byte, 0, 512*len(evs))
	seqs := make([]uint64, len(evs))
	sizes := make([]int, len(evs))
	var unfit []Parked
	next := o.nextSeq
	for i := range evs {
		before := len(buf)
		rec, err := appendRecord(buf, next, &evs[i])
		if err != nil {
			// buf is unchanged: appendRecord adds nothing on failure.
			unfit = append(unfit, unfitParked(&evs[i], err))
			continue
		}
		buf = rec
		seqs[i] = next
		sizes[i] = len(buf) - before
		next++
	}
	if len(unfit) > 0 {
		// Parked first: if that fails, nothing of the call is durable and
		// the caller retries the whole batch.
		if err := o.parkLocked(UnfitSink, unfit); err != nil {
			return nil, err
		}
		o.log.Error(fmt.Sprintf("outbox %s: %d events could not be stored as records and were parked with the rejected events", o.dir, len(unfit)),
			"dir", o.dir, "events", len(unfit), "reason", unfit[0].Reason)
	}
	var keys []uint64
	for i := range evs {
		if seqs[i] != 0 {
			keys = append(keys, FoldKey(&evs[i]))
		}
	}
	if len(keys) == 0 {
		return seqs, nil
	}
	o.makeRoom(int64(len(buf)), keys)
	if err := o.ensureActive(); err != nil {
		return nil, fmt.Errorf("append to outbox: %w", err)
	}
	s := o.segs[len(o.segs)-1]
	if s.size > 0 && s.size+int64(len(buf)) > o.opts.SegmentBytes {
		if err := o.newSegment(); err != nil {
			return nil, fmt.Errorf("append to outbox: %w", err)
		}
		s = o.segs[len(o.segs)-1]
	}
	if err := o.write(s, buf); err != nil {
		return nil, err
	}
	off := s.size
	k := 0
	for i := range evs {
		if seqs[i] == 0 {
			continue
		}
		s.ents = append(s.ents, entry{seq: seqs[i], off: off, size: int32(sizes[i]), flags: flagsOf(&evs[i]), key: keys[k]})
		k++
		off += int64(sizes[i])
		o.remember(Record{Seq: seqs[i], Event: evs[i]})
	}
	o.bytes += int64(len(buf))
	s.size = off
	o.nextSeq = next
	close(o.notify)
	o.notify = make(chan struct{})
	return seqs, nil
}

// write appends buf to the active segment and syncs its data, or leaves
// the segment as it was: Append returns only after both, so a caller that
// saves its state next never saves it ahead of these records.
func (o *Outbox) write(s *segment, buf []byte) error {
	_, err := o.active.Write(buf)
	if err == nil {
		err = o.active.Datasync()
	}
	if err == nil {
		return nil
	}
	err = fmt.Errorf("append to outbox segment %s: %w (%s)", s.path, err, persist.FixHint(o.dir, err))
	if terr := o.active.Truncate(s.size); terr != nil {
		// The partial batch stays in the file; Open and Read skip it as a
		// damaged region. Later records go after it.
		if fi, serr := o.active.Stat(); serr == nil {
			o.bytes += fi.Size() - s.size
			s.size = fi.Size()
		}
	}
	return err
}

func (o *Outbox) remember(r Record) {
	o.recentMu.Lock()
	defer o.recentMu.Unlock()
	o.recent = append(o.recent, r)
	if len(o.recent) >= 2*o.opts.RecentSize {
		n := copy(o.recent, o.recent[len(o.recent)-o.opts.RecentSize:])
		clear(o.recent[n:])
		o.recent = o.recent[:n]
	}
}

// Wait returns a channel closed at the next successful Append (or at
// Close). Take it before Read so that an append between the two is not
// missed:
//
//	for {
//		ch := o.Wait()
//		recs, err := o.Read(name, 64)
//		if len(recs) == 0 { <-ch; continue }
//		...
//	}
func (o *Outbox) Wait() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.notify
}

// Read returns up to max records after sink's cursor, in sequence order
// (max <= 0 means DefaultReadMax). Reading does not move the cursor: until
// Ack, the same records are returned again. A record found damaged now is
// skipped with a warning. An unknown sink is an error.
func (o *Outbox) Read(sink string, max int) ([]Record, error) {
	if max <= 0 {
		max = DefaultReadMax
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil, ErrClosed
	}
	cur, ok := o.cursors[sink]
	if !ok {
		return nil, fmt.Errorf("outbox: unknown sink %q", sink)
	}
	return o.readAfterLocked(cur, max)
}

// ReadAfter returns up to max retained records with Seq > after, oldest
// first, whatever the sinks' cursors. The daemon replays them onto its
// state at start-up (see persist.State.OutboxSeq).
func (o *Outbox) ReadAfter(after uint64, max int) ([]Record, error) {
	if max <= 0 {
		max = DefaultReadMax
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil, ErrClosed
	}
	return o.readAfterLocked(after, max)
}

// readAfterLocked returns up to max records with Seq > after; o.mu held.
func (o *Outbox) readAfterLocked(after uint64, max int) ([]Record, error) {
	var out []Record
	for _, s := range o.segs {
		if len(out) >= max {
			break
		}
		if len(s.ents) == 0 || s.lastSeq() <= after {
			continue
		}
		i := sort.Search(len(s.ents), func(i int) bool { return s.ents[i].seq > after })
		j := min(len(s.ents), i+max-len(out))
		recs, err := o.readRange(s, i, j)
		if err != nil {
			return out, err
		}
		out = append(out, recs...)
	}
	return out, nil
}

// readRange decodes s.ents[i:j] with one read; entries that no longer
// verify are removed from the index after one warning.
func (o *Outbox) readRange(s *segment, i, j int) ([]Record, error) {
	if i >= j {
		return nil, nil
	}
	start := s.ents[i].off
	end := s.ents[j-1].off + int64(s.ents[j-1].size)
	f, err := os.Open(s.path)
	if err != nil {
		return nil, fmt.Errorf("read outbox segment %s: %w", s.path, err)
	}
	defer f.Close()
	buf := make([]byte, end-start)
	n, err := f.ReadAt(buf, start)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read outbox segment %s: %w", s.path, err)
	}
	buf = buf[:n]
	out := make([]Record, 0, j-i)
	var bad []uint64
	for _, e := range s.ents[i:j] {
		r, err := decode(buf, start, e)
		if err != nil {
			o.corrupt++
			o.log.Warn(fmt.Sprintf("outbox segment %s: skipped damaged record seq %d at offset %d: %v", s.path, e.seq, e.off, err),
				"segment", s.path, "offset", e.off, "seq", e.seq)
			bad = append(bad, e.seq)
			continue
		}
		out = append(out, r)
	}
	if len(bad) > 0 {
		s.ents = removeSeqs(s.ents, bad)
		o.publishLocked()
	}
	return out, nil
}

func removeSeqs(ents []entry, seqs []uint64) []entry {
	drop := make(map[uint64]bool, len(seqs))
	for _, q := range seqs {
		drop[q] = true
	}
	kept := ents[:0]
	for _, e := range ents {
		if !drop[e.seq] {
			kept = append(kept, e)
		}
	}
	return kept
}

// ErrCursorNotSaved is wrapped by Ack's error when the delivery itself is
// recorded (Read no longer returns those records) but the cursor file could
// not be written (a full or read-only disk). Only a restart before a later
// Ack succeeds would send them again; the caller should back off and Ack
// again, which retries the write.
var ErrCursorNotSaved = errors.New("outbox cursor not saved")

// Ack records that sink has delivered everything up to seq, durably, and
// deletes segments that every sink has passed. Acknowledging a seq at or
// below the cursor is a no-op unless an earlier save failed, in which case
// the save is retried; beyond the last appended seq is an error.
//
// The position moves in memory even when its file cannot be written: a
// sink that re-sent what it has just delivered because the disk is full
// would spin, sending the same batch thousands of times a second.
func (o *Outbox) Ack(sink string, seq uint64) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return ErrClosed
	}
	cur, ok := o.cursors[sink]
	if !ok {
		return fmt.Errorf("outbox: unknown sink %q", sink)
	}
	if seq >= o.nextSeq {
		return fmt.Errorf("outbox: sink %s acknowledged seq %d, beyond the last appended (%d)", sink, seq, o.nextSeq-1)
	}
	if seq <= cur && !o.unsaved[sink] {
		return nil
	}
	seq = max(seq, cur)
	o.cursors[sink] = seq
	o.collect()
	o.settleBound()
	// Published before the cursor file is written: the delivery itself
	// is recorded, and a write that hangs must not hide it.
	o.publishLocked()
	p := o.cursorPath(sink)
	if err := persist.WriteFileAtomic(p, []byte(strconv.FormatUint(seq, 10)+"\n"), 0o600); err != nil {
		o.unsaved[sink] = true
		return fmt.Errorf("save outbox cursor %s: %w (%s): %w", p, err, persist.FixHint(o.dir, err), ErrCursorNotSaved)
	}
	delete(o.unsaved, sink)
	return nil
}

// minCursor is the highest seq every registered sink has delivered; ok is
// false when no sink is registered.
func (o *Outbox) minCursor() (m uint64, ok bool) {
	if len(o.cursors) == 0 {
		return 0, false
	}
	m = ^uint64(0)
	for _, c := range o.cursors {
		m = min(m, c)
	}
	return m, true
}

// collect deletes segments whose records every sink has delivered. The
// newest segment stays: it is appended to, and its name carries the next
// sequence number across restarts. With no sink registered (Open without
// Options.Sinks, before SetSinks) nothing counts as delivered: deleting
// then would lose what the sinks configured next have not yet sent.
func (o *Outbox) collect() {
	m, ok := o.minCursor()
	if !ok {
		return
	}
	kept := o.segs[:0]
	for i, s := range o.segs {
		if i < len(o.segs)-1 && s.lastSeq() <= m {
			if err := os.Remove(s.path); err == nil || errors.Is(err, fs.ErrNotExist) {
				o.bytes -= s.size
				continue
			}
		}
		kept = append(kept, s)
	}
	clear(o.segs[len(kept):])
	o.segs = kept
}

// Recent returns up to the n latest records, oldest first, from memory
// (for D-Bus ListEvents). Records dropped from disk by the bound still
// show here. It never waits for an Append in progress.
func (o *Outbox) Recent(n int) []Record {
	o.recentMu.Lock()
	defer o.recentMu.Unlock()
	n = min(n, len(o.recent), o.opts.RecentSize)
	if n <= 0 {
		return nil
	}
	return append([]Record(nil), o.recent[len(o.recent)-n:]...)
}

// Since returns up to max remembered records with Seq > seq, oldest
// first (max <= 0: all remembered). Records older than the memory holds
// are not returned. It never waits for an Append in progress.
func (o *Outbox) Since(seq uint64, max int) []Record {
	o.recentMu.Lock()
	defer o.recentMu.Unlock()
	win := o.recent
	if len(win) > o.opts.RecentSize {
		win = win[len(win)-o.opts.RecentSize:]
	}
	i := sort.Search(len(win), func(i int) bool { return win[i].Seq > seq })
	win = win[i:]
	if max > 0 && len(win) > max {
		win = win[:max]
	}
	if len(win) == 0 {
		return nil
	}
	return append([]Record(nil), win...)
}

// loadRecent fills the in-memory history from the newest retained records.
func (o *Outbox) loadRecent() {
	want := o.opts.RecentSize
	var parts [][]Record
	for k := len(o.segs) - 1; k >= 0 && want > 0; k-- {
		s := o.segs[k]
		i := max(0, len(s.ents)-want)
		recs, err := o.readRange(s, i, len(s.ents))
		if err != nil {
			o.log.Warn("outbox: could not read recent events for the event history", "segment", s.path, "err", err)
			break
		}
		parts = append(parts, recs)
		want -= len(recs)
	}
	o.recentMu.Lock()
	defer o.recentMu.Unlock()
	for _, recs := range slices.Backward(parts) {
		o.recent = append(o.recent, recs...)
	}
}

// Stats reports sizes, positions and counters as of the last change. It
// takes no lock: an Append whose write hangs in the kernel holds the
// outbox's lock, and the views that show the outbox (the metrics
// endpoint, D-Bus, the daemon's conditions) must not hang with it.
func (o *Outbox) Stats() Stats {
	if st := o.stats.Load(); st != nil {
		return *st
	}
	return Stats{}
}

// publishLocked publishes the statistics Stats returns; o.mu held.
func (o *Outbox) publishLocked() {
	st := &Stats{
		LastSeq:   o.nextSeq - 1,
		Bytes:     o.bytes,
		Segments:  len(o.segs),
		Folded:    o.folded,
		Dropped:   o.dropped,
		Corrupt:   o.corrupt,
		OverBound: o.overBound,
		Rejected:  o.rejectedCount(),
		Sinks:     make(map[string]SinkStats, len(o.cursors)),
	}
	for _, s := range o.segs {
		st.Records += len(s.ents)
	}
	for name, c := range o.cursors {
		st.Sinks[name] = SinkStats{Cursor: c, Depth: o.depth(c), Rejected: len(o.parked[name])}
	}
	o.stats.Store(st)
}

func (o *Outbox) depth(cur uint64) int {
	n := 0
	for _, s := range o.segs {
		i := sort.Search(len(s.ents), func(i int) bool { return s.ents[i].seq > cur })
		n += len(s.ents) - i
	}
	return n
}

// Dir is the outbox's directory.
func (o *Outbox) Dir() string { return o.dir }

// SetMaxBytes changes the size bound (configuration reload); it applies
// from the next Append. <= 0 is the default. It never waits: a reload
// runs on the poll loop, and an Append may be hung in the kernel.
func (o *Outbox) SetMaxBytes(n int64) {
	if n <= 0 {
		n = DefaultMaxBytes
	}
	o.maxBytes.Store(n)
}

// Close releases the files and the lock and wakes every Wait. Records are
// already durable; Close writes nothing.
func (o *Outbox) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil
	}
	o.closed = true
	close(o.notify)
	var err error
	if o.active != nil {
		err = o.active.Close()
	}
	if lerr := o.lock.Close(); err == nil {
		err = lerr
	}
	return err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
