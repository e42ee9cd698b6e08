package reader

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrStuck is the result of a file whose read missed its deadline or is
// still blocked from an earlier cycle.
var ErrStuck = errors.New("read did not return within the deadline")

// MaxValue is the longest attribute value kept. sysfs attributes are at most
// a page, and the ones we read are a few dozen bytes.
const MaxValue = 128

// File is one attribute file in a read plan. After Reader.Read, Value holds
// the bytes read and Err the outcome of this cycle.
type File struct {
	Path string
	Err  error

	val   [MaxValue]byte
	ext   []byte // a larger buffer for one-shot reads (ReadFile); nil in plans
	n     int
	cpath []byte // NUL-terminated for raw open without allocation
	fd    int32  // -1 when not kept open
	// oneShot files (ReadFile) are never kept open, whatever the policy:
	// nobody would read or close them again, so every one-shot read of a
	// sanity pass or a rediscovery would leak a descriptor until the
	// process ran out of them and every read failed with EMFILE.
	oneShot bool
	// keepOpen overrides the Reader's policy for this file (SetKeepOpen):
	// a plan can hold files of two trees, one of them real sysfs.
	keepOpen keepPolicy
	stuck    atomic.Bool
	src      Source // a driver call instead of a file (NewSource)
}

type keepPolicy uint8

const (
	keepByReader keepPolicy = iota
	keepAlways
	keepNever
)

// SetKeepOpen makes this file's descriptor kept between cycles (true:
// the file is on sysfs, where pread at offset 0 regenerates the value) or
// reopened every cycle (false), whatever the Reader's KeepOpen says. Set it
// before the first read.
func (f *File) SetKeepOpen(keep bool) {
	f.keepOpen = keepNever
	if keep {
		f.keepOpen = keepAlways
	}
}

// NewFile prepares a file for reading.
func NewFile(path string) *File {
	f := &File{Path: path, fd: -1}
	f.cpath = append([]byte(path), 0)
	return f
}

// Value returns the bytes of the last successful read. It aliases the
// file's buffer: copy it to keep it past the next cycle.
func (f *File) Value() []byte { return f.buf()[:f.n] }

func (f *File) buf() []byte {
	if f.ext != nil {
		return f.ext
	}
	return f.val[:]
}

// Stuck reports whether a read of this file is still blocked.
func (f *File) Stuck() bool { return f.stuck.Load() }

// Close releases a kept-open descriptor. It must not be called while a read
// of the file is stuck (the blocked reader still owns the descriptor).
func (f *File) Close() {
	if f.src != nil && !f.stuck.Load() {
		f.src.Close()
	}
	if f.fd >= 0 && !f.stuck.Load() {
		unix.Close(int(f.fd))
		f.fd = -1
	}
}

// Options tune a Reader.
type Options struct {
	// Timeout is the per-file deadline (default 1 s).
	Timeout time.Duration
	// MaxStuck bounds the goroutines left blocked in the kernel. When that
	// many reads are stuck, Read waits for the current one instead of
	// abandoning it: the poll loop then stops making progress and the
	// systemd watchdog restarts the daemon, which is the right answer to a
	// host whose sysfs has stopped answering.
	MaxStuck int
	// KeepOpen keeps descriptors open between cycles; only correct on real
	// sysfs, where pread at offset 0 regenerates the value.
	KeepOpen bool
	// Reprobe is how often a parked file is read again (DefaultReprobe
	// when zero); see ErrParked.
	Reprobe time.Duration
	// Faults, when set, replaces the outcome of chosen reads (tests only;
	// see Faults). It is fixed when the Reader is made: SetOptions keeps
	// the one New was given.
	Faults Faults
}

// Reader runs read plans. It is used by one poll loop at a time.
type Reader struct {
	stuckNow atomic.Int32
	keepOpen atomic.Bool

	mu     sync.Mutex // serialises Read, ReadFile and SetOptions
	opts   Options
	worker *worker
	timer  *time.Timer

	// stuckPaths holds the paths whose read is blocked in the kernel,
	// whichever File (plan entry, discovery read) started it. A plan
	// rebuilt by a reload or rediscovery makes new Files for the same
	// paths: they must be skipped too, or every rebuild would strand one
	// more goroutine (and OS thread) on the same hung file.
	pathMu     sync.Mutex
	stuckPaths map[string]struct{}

	// parks holds the failure streak of each path that failed with a
	// parking errno, and its parking (park.go); per path for the same
	// reason as stuckPaths. parkRecs counts its entries, so a cycle with
	// no failing file never takes the lock; parkedN counts parked paths.
	parks    map[string]*parkRec
	parkRecs atomic.Int32
	parkedN  atomic.Int32
	clock    func() time.Time
	faults   Faults // nil in production (Options.Faults)
}

// Who owns the file being read: the worker until the read returns, or the
// waiter once it gave up on it. One compare-and-swap decides, so a read that
// returns just as its deadline passes is either used or abandoned, never
// both.
const (
	claimIdle int32 = iota
	claimReading
	claimAbandoned
)

type worker struct {
	req   chan []*File
	done  chan struct{}
	claim atomic.Int32
	// cur is the index of the file being read, or -1 between files. The
	// waiter, not the worker, keeps time: a per-file clock read would cost
	// more than the pread it guards.
	cur atomic.Int64
}

// New returns a Reader.
func New(opts Options) *Reader {
	if opts.Timeout <= 0 {
		opts.Timeout = time.Second
	}
	if opts.MaxStuck <= 0 {
		opts.MaxStuck = 4
	}
	if opts.Reprobe <= 0 {
		opts.Reprobe = DefaultReprobe
	}
	t := time.NewTimer(time.Hour)
	t.Stop()
	r := &Reader{opts: opts, timer: t, stuckPaths: map[string]struct{}{},
		parks: map[string]*parkRec{}, clock: time.Now, faults: opts.Faults}
	r.keepOpen.Store(opts.KeepOpen)
	return r
}

// SetOptions changes the deadline, the stuck bound and the descriptor
// policy in place, between cycles. Reads still blocked keep counting
// against MaxStuck and their files stay skipped: a reload must neither
// forget a hung file nor re-read it.
func (r *Reader) SetOptions(opts Options) {
	if opts.Timeout <= 0 {
		opts.Timeout = time.Second
	}
	if opts.MaxStuck <= 0 {
		opts.MaxStuck = 4
	}
	if opts.Reprobe <= 0 {
		opts.Reprobe = DefaultReprobe
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	opts.Faults = r.faults
	if opts.Reprobe < r.opts.Reprobe {
		r.shortenReprobes(opts.Reprobe)
	}
	r.opts = opts
	r.keepOpen.Store(opts.KeepOpen)
}

// PathStuck reports whether a read of path is still blocked.
func (r *Reader) PathStuck(path string) bool {
	if r.stuckNow.Load() == 0 {
		return false
	}
	r.pathMu.Lock()
	defer r.pathMu.Unlock()
	_, ok := r.stuckPaths[path]
	return ok
}

func (r *Reader) setPathStuck(path string, stuck bool) {
	r.pathMu.Lock()
	defer r.pathMu.Unlock()
	if stuck {
		r.stuckPaths[path] = struct{}{}
	} else {
		delete(r.stuckPaths, path)
	}
}

// MaxReadFile bounds ReadFile: sysfs attributes are at most a page.
const MaxReadFile = 4096

// ReadFile is a one-shot read of a small attribute file (discovery, the
// sanity passes) under the same deadline, worker and stuck accounting as
// the poll plans. It returns at most max bytes (MaxReadFile when max <= 0).
// A path whose earlier read is still blocked fails at once with ErrStuck;
// one that misses the deadline now fails with ErrStuck and stays skipped
// until that read returns.
func (r *Reader) ReadFile(path string, max int) ([]byte, error) {
	if r.PathStuck(path) {
		return nil, fmt.Errorf("read %s: %w", path, ErrStuck)
	}
	if max <= 0 || max > MaxReadFile {
		max = MaxReadFile
	}
	f := NewFile(path)
	f.ext = make([]byte, max)
	f.oneShot = true
	r.Read([]*File{f}, nil)
	if f.Err != nil {
		return nil, f.Err
	}
	return f.Value(), nil
}

// Close stops the idle worker goroutine. A worker still blocked in a stuck
// read exits by itself when that read returns.
func (r *Reader) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.worker != nil {
		close(r.worker.req)
		r.worker = nil
	}
}

// StuckCount is the number of reads currently blocked in the kernel.
func (r *Reader) StuckCount() int { return int(r.stuckNow.Load()) }

// IsSysfs reports whether dir is on a sysfs mount (statfs magic), which is
// where keeping descriptors open is correct.
func IsSysfs(dir string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return false
	}
	return st.Type == unix.SYSFS_MAGIC
}

// Read reads every file of the plan, filling Value/Err. Files already stuck
// are skipped with ErrStuck. It returns the files that became stuck during
// this call.
func (r *Reader) Read(files []*File, newlyStuck []*File) []*File {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.faults != nil {
		r.faults.Refresh()
	}
	start := 0
	for start < len(files) {
		w := r.worker
		if w == nil {
			w = r.spawn()
		}
		w.req <- files[start:]
		next, stuckFile := r.wait(w, files[start:])
		if stuckFile == nil {
			return newlyStuck
		}
		newlyStuck = append(newlyStuck, stuckFile)
		start += next
	}
	return newlyStuck
}

// wait returns (index after the stuck file, stuck file) or (0, nil) when the
// worker finished the batch.
func (r *Reader) wait(w *worker, batch []*File) (int, *File) {
	tick := r.opts.Timeout / 4
	if tick < time.Millisecond {
		tick = time.Millisecond
	}
	// The index the worker was on at the last tick, and since when. A file
	// read for longer than Timeout keeps the same index across ticks; a
	// healthy batch moves on in microseconds.
	lastIdx, since := int64(-2), time.Time{}
	for {
		r.timer.Reset(tick)
		select {
		case <-w.done:
			if !r.timer.Stop() {
				select {
				case <-r.timer.C:
				default:
				}
			}
			return 0, nil
		case <-r.timer.C:
		}
		idx := w.cur.Load()
		if idx < 0 || idx != lastIdx {
			lastIdx, since = idx, time.Now()
			continue
		}
		if time.Since(since) < r.opts.Timeout {
			continue
		}
		if int(r.stuckNow.Load()) >= r.opts.MaxStuck {
			// Bounded: keep waiting on this read; see Options.MaxStuck.
			continue
		}
		i := int(idx)
		if i >= len(batch) {
			continue
		}
		if !w.claim.CompareAndSwap(claimReading, claimAbandoned) {
			continue // the read returned just now
		}
		f := batch[i]
		// Mark before abandoning so the worker, when it finally returns,
		// knows the file is no longer its to fill.
		f.stuck.Store(true)
		r.setPathStuck(f.Path, true)
		f.Err = fmt.Errorf("read %s: %w", f.Path, ErrStuck)
		r.stuckNow.Add(1)
		r.worker = nil
		return i + 1, f
	}
}

func (r *Reader) spawn() *worker {
	w := &worker{req: make(chan []*File), done: make(chan struct{})}
	r.worker = w
	go w.run(r)
	return w
}

func (w *worker) run(r *Reader) {
	for batch := range w.req {
		for i, f := range batch {
			if f.stuck.Load() || r.PathStuck(f.Path) {
				f.Err = ErrStuck
				continue
			}
			if r.parkRecs.Load() > 0 {
				if err := r.skipParked(f.Path); err != nil {
					f.n, f.Err = 0, err
					continue
				}
			}
			w.claim.Store(claimReading)
			w.cur.Store(int64(i))
			n, err := readOnce(f, r.keepOpen.Load())
			w.cur.Store(-1)
			if !w.claim.CompareAndSwap(claimReading, claimIdle) {
				// This read outlived its deadline. The main loop has moved on
				// and treats f as stuck; hand f back to future cycles and exit.
				if f.fd >= 0 && err != nil {
					unix.Close(int(f.fd))
					f.fd = -1
				}
				r.setPathStuck(f.Path, false)
				r.stuckNow.Add(-1)
				f.stuck.Store(false)
				return
			}
			// Only past the claim: an abandoned worker must not touch the
			// fault table or the parking records, which the next Read may
			// be updating.
			if r.faults != nil {
				// The real file was opened (opens stay countable); the
				// injected errno replaces the outcome.
				if e, ok := r.faults.Lookup(f.Path); ok {
					n, err = 0, &errPath{op: "read", path: f.Path, err: e}
				}
			}
			if err != nil || r.parkRecs.Load() > 0 {
				if pe := r.notePark(f.Path, err); pe != nil {
					n, err = 0, pe
				}
			}
			f.n = n
			f.Err = err
		}
		w.done <- struct{}{}
	}
}

func readOnce(f *File, keep bool) (int, error) {
	if f.src != nil {
		return 0, readSource(f)
	}
	switch f.keepOpen {
	case keepAlways:
		keep = true
	case keepNever:
		keep = false
	}
	keep = keep && !f.oneShot
	if keep && f.fd >= 0 {
		n, err := unix.Pread(int(f.fd), f.buf(), 0)
		if err == nil {
			return n, nil
		}
		// ENODEV/ESTALE: the device was removed or re-created under the
		// descriptor. Reopen once by path below.
		unix.Close(int(f.fd))
		f.fd = -1
	}
	fd, err := openNoAlloc(f.cpath)
	if err != nil {
		return 0, &errPath{op: "open", path: f.Path, err: err}
	}
	n, err := unix.Pread(fd, f.buf(), 0)
	if keep && err == nil {
		f.fd = int32(fd)
	} else {
		unix.Close(fd)
	}
	if err != nil {
		return 0, &errPath{op: "read", path: f.Path, err: err}
	}
	return n, nil
}

// openNoAlloc opens a NUL-terminated path read-only. unix.Open converts the
// Go string on every call, which would be the only allocation of a steady
// poll cycle.
func openNoAlloc(cpath []byte) (int, error) {
	dirfd := unix.AT_FDCWD
	fd, _, e := unix.Syscall6(unix.SYS_OPENAT, uintptr(dirfd),
		uintptr(unsafe.Pointer(&cpath[0])), uintptr(unix.O_RDONLY|unix.O_CLOEXEC), 0, 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}

// errPath is a preallocated-free *PathError equivalent: callers test it with
// errors.Is(err, fs.ErrNotExist) through Unwrap.
type errPath struct {
	op, path string
	err      error
}

func (e *errPath) Error() string { return e.op + " " + e.path + ": " + e.err.Error() }
func (e *errPath) Unwrap() error { return e.err }

// NewFileSize prepares a plan file whose values may be longer than
// MaxValue (up to max bytes), e.g. a multi-line counter table such as
// aer_dev_correctable. The buffer is allocated once, here.
func NewFileSize(path string, max int) *File {
	f := NewFile(path)
	if max > MaxValue {
		f.ext = make([]byte, max)
	}
	return f
}
