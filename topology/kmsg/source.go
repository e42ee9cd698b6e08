package kmsg

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Queue bounds: what the reader holds for the poll loop. When they are
// reached the reader stops reading until the loop drains: the kernel's ring
// is the buffer beyond them (megabytes, and what a restart reads again),
// and dropping here would lose the newest records while the ring still
// had them (on the first start after install, a long ring would fill the
// queue at once). If the reader falls so far behind that the ring wraps,
// the loss is counted from the sequence numbers, as any overrun.
const (
	DefaultQueueRecords = 16384
	DefaultQueueBytes   = 8 << 20
)

// initialQueue is the queue's room before a burst grows it: a quiet host
// prints a few records a minute, and the queue doubles as records come
// faster than the loop drains them.
const initialQueue = 64

// Reopen backoff: a missing or unreadable source is retried, never in a
// tight loop.
const (
	reopenMin = time.Second
	reopenMax = time.Minute
)

// Options configure a Source.
type Options struct {
	// Path is <devRoot>/kmsg.
	Path string
	// Resume, when set, skips every record up to and including After:
	// what the caller judged before a restart in the same boot.
	Resume bool
	After  uint64
	// QueueRecords and QueueBytes bound the queue (0: the defaults).
	QueueRecords int
	QueueBytes   int
	Log          *slog.Logger
}

// Loss is a run of records the reader never saw: the kernel's ring
// overwrote them first (Overrun: the read said EPIPE), or they were gone
// when the reader started after a restart.
type Loss struct {
	From, To uint64 // sequence numbers, inclusive
	Overrun  bool
}

// N is how many records were lost.
func (l Loss) N() uint64 { return l.To - l.From + 1 }

// Stats are the reader's totals since it started.
type Stats struct {
	Open bool // the source is open and being read
	// Read are the records parsed past the resume point: a record the
	// kernel hands out again after a restart (it was judged before) is
	// Skipped, not read.
	Read      uint64
	Skipped   uint64 // at or before the resume point (judged before a restart)
	Dropped   uint64 // not queued: the source was closed while the queue was full
	Oversized uint64 // longer than MaxRecord
	Malformed uint64 // not in the kernel's format
	Lost      uint64 // overwritten by the ring before they were read
	// LastSeq is the newest sequence number read, or the resume point
	// until a record past it is: the position is the caller's state, so it
	// is true from the start after a restart.
	LastSeq uint64
	Err     string // why the source is not open, "" while it is
}

// Source reads a kmsg device (or a FIFO or file in its format) on its own
// goroutine into a bounded queue.
type Source struct {
	opts Options
	log  *slog.Logger

	mu       sync.Mutex
	q        []Record // ring
	qhead    int
	qn       int
	qbytes   int
	losses   []Loss
	stats    Stats
	hi       uint64 // newest sequence number seen (or the resume point)
	haveHi   bool
	overrun  bool // EPIPE seen: the next gap is the ring's doing
	f, w     *os.File
	closed   bool
	space    *sync.Cond // signalled when Drain makes room, or on Close
	done     chan struct{}
	stop     chan struct{}
	lastErr  string
	monoBase func() (time.Time, time.Duration)
	// sp is used by the reading goroutine only.
	sp Splitter
}

// Open starts reading. It never fails: a source that cannot be opened is
// retried with backoff and Stats says why.
func Open(opts Options) *Source {
	if opts.QueueRecords <= 0 {
		opts.QueueRecords = DefaultQueueRecords
	}
	if opts.QueueBytes <= 0 {
		opts.QueueBytes = DefaultQueueBytes
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Source{opts: opts, log: log, done: make(chan struct{}), stop: make(chan struct{}),
		q: make([]Record, min(initialQueue, opts.QueueRecords)), hi: opts.After, haveHi: opts.Resume, monoBase: clocks}
	s.space = sync.NewCond(&s.mu)
	if opts.Resume {
		s.stats.LastSeq = opts.After
	}
	go s.run()
	return s
}

// clocks returns the wall clock and the monotonic clock the kernel stamps
// records with, read together.
func clocks() (time.Time, time.Duration) {
	var ts unix.Timespec
	now := time.Now()
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return now, -1
	}
	return now, time.Duration(ts.Nano())
}

// Drain moves up to max queued records (max <= 0: all) to dst, oldest
// first, and returns it.
func (s *Source) Drain(dst []Record, max int) []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.qn
	if max > 0 && n > max {
		n = max
	}
	for i := 0; i < n; i++ {
		r := &s.q[s.qhead]
		dst = append(dst, *r)
		s.qbytes -= recordBytes(r)
		*r = Record{}
		s.qhead = (s.qhead + 1) % len(s.q)
	}
	s.qn -= n
	if s.qn == 0 && len(s.q) > initialQueue {
		// A storm grew the queue; once it is drained the room goes back
		// (a full queue of 16,384 records is 1.8 MB the daemon would
		// otherwise hold for the rest of its life).
		s.q, s.qhead = make([]Record, initialQueue), 0
	}
	if n > 0 {
		s.space.Broadcast()
	}
	return dst
}

// grow doubles the queue up to QueueRecords, oldest record first. Caller
// holds s.mu.
func (s *Source) grow() {
	q := make([]Record, min(2*len(s.q), s.opts.QueueRecords))
	for i := 0; i < s.qn; i++ {
		q[i] = s.q[(s.qhead+i)%len(s.q)]
	}
	s.q, s.qhead = q, 0
}

// Queued is how many records wait to be drained.
func (s *Source) Queued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.qn
}

// TakeLosses returns the losses seen since the last call.
func (s *Source) TakeLosses() []Loss {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.losses
	s.losses = nil
	return out
}

// Stats returns the totals.
func (s *Source) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Close stops the reader and waits for its goroutine.
func (s *Source) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.done
		return
	}
	s.closed = true
	close(s.stop)
	s.space.Broadcast()
	if s.f != nil {
		s.f.Close() // unblocks the read
	}
	s.mu.Unlock()
	<-s.done
}

func (s *Source) run() {
	defer close(s.done)
	buf := make([]byte, 64<<10)
	wait := reopenMin
	for {
		f, w, err := s.open()
		if err != nil {
			s.fail(err)
			if !s.sleep(wait) {
				return
			}
			wait = min(wait*2, reopenMax)
			continue
		}
		if !s.setOpen(f, w) {
			return
		}
		err = s.readAll(f, buf)
		s.setClosedFile()
		if s.isClosed() {
			return
		}
		s.fail(err)
		if !s.sleep(wait) {
			return
		}
		wait = min(wait*2, reopenMax)
	}
}

// open opens the path for reading without blocking (so Close can wake a
// pending read). A FIFO additionally gets a write end that is held and
// never written: a FIFO without a writer reads as end-of-file at once,
// which would have the reader spin or sleep between a writer's visits;
// holding one makes it wait in the poller exactly as /dev/kmsg does
// between records. /dev/kmsg itself is opened read-only (an unprivileged
// daemon may read it with CAP_SYSLOG but not write it).
func (s *Source) open() (*os.File, *os.File, error) {
	f, err := os.OpenFile(s.opts.Path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if fi.IsDir() {
		f.Close()
		return nil, nil, fmt.Errorf("%s is a directory", s.opts.Path)
	}
	var w *os.File
	if fi.Mode()&os.ModeNamedPipe != 0 {
		if w, err = os.OpenFile(s.opts.Path, os.O_WRONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0); err != nil {
			s.log.Warn("cannot hold a write end of the kernel log FIFO; it is reopened whenever its writers have gone",
				"file", s.opts.Path, "err", err)
			w = nil
		}
	}
	return f, w, nil
}

func (s *Source) setOpen(f, w *os.File) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		f.Close()
		if w != nil {
			w.Close()
		}
		return false
	}
	s.f, s.w = f, w
	s.stats.Open, s.stats.Err = true, ""
	s.sp.Reset()
	if s.lastErr != "" {
		s.log.Info("reading the kernel log again", "file", s.opts.Path)
		s.lastErr = ""
	}
	return true
}

func (s *Source) setClosedFile() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil && !s.closed {
		s.f.Close()
	}
	if s.w != nil {
		s.w.Close()
	}
	s.f, s.w = nil, nil
	s.stats.Open = false
}

func (s *Source) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// readAll reads until an error other than an overrun. The ring overwrote
// records before this reader got to them when a read says EPIPE; the
// kernel has then moved the reader to the oldest record still held, and
// the gap in sequence numbers says how many were lost.
func (s *Source) readAll(f io.Reader, buf []byte) error {
	for {
		n, err := f.Read(buf)
		if n > 0 {
			s.sp.Feed(buf[:n], s.record)
			s.mu.Lock()
			s.stats.Oversized = s.sp.Oversized
			s.mu.Unlock()
		}
		switch {
		case err == nil:
			continue
		case errors.Is(err, syscall.EPIPE):
			s.mu.Lock()
			s.overrun = true
			s.mu.Unlock()
			continue
		case errors.Is(err, io.EOF):
			return fmt.Errorf("%s ended (no writer holds it, or it is a file): reopened after a pause", s.opts.Path)
		}
		return err
	}
}

// record queues one complete record (called by the splitter).
func (s *Source) record(b []byte) {
	r, err := Parse(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.stats.Malformed++
		return
	}
	if s.haveHi && r.Seq <= s.hi {
		s.stats.Skipped++
		return
	}
	s.stats.Read++
	if s.haveHi && r.Seq > s.hi+1 {
		l := Loss{From: s.hi + 1, To: r.Seq - 1, Overrun: s.overrun}
		s.stats.Lost += l.N()
		if len(s.losses) < 64 {
			s.losses = append(s.losses, l)
		} else {
			// Keep the count; merge into the last run reported.
			last := &s.losses[len(s.losses)-1]
			last.To, last.Overrun = l.To, last.Overrun || l.Overrun
		}
	}
	s.overrun = false
	s.hi, s.haveHi = r.Seq, true
	s.stats.LastSeq = r.Seq
	now, mono := s.monoBase()
	r.Time = now
	if mono >= 0 && r.TS <= mono {
		r.Time = now.Add(r.TS - mono)
	}
	size := recordBytes(&r)
	if s.qn == len(s.q) && len(s.q) < s.opts.QueueRecords {
		s.grow()
	}
	for !s.closed && (s.qn == len(s.q) || s.qn > 0 && s.qbytes+size > s.opts.QueueBytes) {
		s.space.Wait()
	}
	if s.closed {
		s.stats.Dropped++
		return
	}
	s.q[(s.qhead+s.qn)%len(s.q)] = r
	s.qn++
	s.qbytes += size
}

func recordBytes(r *Record) int {
	return len(r.Message) + len(r.Subsystem) + len(r.Device) + 96
}

// fail notes why the source is not being read; each new reason is logged
// once, with the fix.
func (s *Source) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || err == nil {
		return
	}
	msg := err.Error()
	s.stats.Err = msg
	if msg == s.lastErr {
		return
	}
	s.lastErr = msg
	fix := "the kernel log is read again as soon as it can be opened"
	switch {
	case errors.Is(err, os.ErrPermission):
		fix = "with kernel.dmesg_restrict=1 reading " + s.opts.Path + " needs CAP_SYSLOG: the packaged unit grants it (AmbientCapabilities=CAP_SYSLOG); a drop-in or a container that removes it blinds this check"
	case errors.Is(err, os.ErrNotExist):
		fix = "no kernel log device here (a container without /dev/kmsg, or devRoot pointing elsewhere): set devRoot, or set kernelLog.enabled = false"
	}
	s.log.Warn("cannot read the kernel log; the kernel-log check sees nothing until it can", "file", s.opts.Path, "err", msg, "fix", fix)
}

func (s *Source) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.stop:
		return false
	case <-t.C:
		return true
	}
}
