package reader

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// ErrParked is the result of a file that failed with a parking errno
// ParkAfter times in a row and is not read until its next re-probe. The
// error also wraps the last errno: errors.Is(err, unix.EACCES) holds for a
// file parked on EACCES.
var ErrParked = errors.New("file parked after repeated read errors")

// ParkAfter is how many consecutive failures with a parking errno park a
// file.
const ParkAfter = 3

// DefaultReprobe is how often a parked file is read again when
// Options.Reprobe is not set.
const DefaultReprobe = 10 * time.Minute

// parkingErrno reports whether err says the file will keep failing however
// often it is read, so reading it each cycle only costs (and, on a
// restricted mlx5 function, makes the kernel log an ACCESS_REG error every
// time):
//   - EACCES and EPERM: this caller may not read it. EPERM is parked like
//     EACCES: sysfs show functions return it for capability and lockdown
//     checks and for restricted VF/PF functions, none of which heal by
//     retrying each second, and a permission granted later is still seen
//     at the next re-probe;
//   - EOPNOTSUPP (ENOTSUP on Linux): the function does not implement it;
//   - EINVAL, EIO: the driver or firmware rejects the query.
//
// ENOENT (a vanished device: discovery decides) and hung reads (ErrStuck,
// reported on their own) are not parking errors.
func parkingErrno(err error) (unix.Errno, bool) {
	// Unwrapped by hand: errors.As would move its target to the heap on
	// every successful read of a cycle that has a failing file.
	var e unix.Errno
	for err != nil {
		if x, ok := err.(unix.Errno); ok {
			e = x
			break
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return 0, false
		}
		err = u.Unwrap()
	}
	switch e {
	case unix.EINVAL, unix.EIO, unix.EOPNOTSUPP, unix.EACCES, unix.EPERM:
		return e, true
	}
	return 0, false
}

// parkedError is the Err of a parked file. One is kept per parked path and
// errno, so a parked file costs no allocation per cycle.
type parkedError struct {
	path    string
	errno   unix.Errno
	reprobe time.Duration
}

func (e *parkedError) Error() string {
	return fmt.Sprintf("read %s: %v, %d times in a row; parked, re-probed every %v", e.path, e.errno, ParkAfter, e.reprobe)
}

func (e *parkedError) Is(target error) bool { return target == ErrParked }
func (e *parkedError) Unwrap() error        { return e.errno }

// parkRec is the failure streak of one path, and its parking once the
// streak reaches ParkAfter.
type parkRec struct {
	fails  int
	parked bool
	next   time.Time // next re-probe of a parked path
	err    *parkedError
}

// ParkedCount is the number of paths parked now.
func (r *Reader) ParkedCount() int { return int(r.parkedN.Load()) }

// PathParked reports whether path is parked, and the errno that parked it.
func (r *Reader) PathParked(path string) (unix.Errno, bool) {
	if r.parkedN.Load() == 0 {
		return 0, false
	}
	r.pathMu.Lock()
	defer r.pathMu.Unlock()
	if rec := r.parks[path]; rec != nil && rec.parked {
		return rec.err.errno, true
	}
	return 0, false
}

// skipParked returns the error of a parked path whose re-probe is not due,
// or nil when the path must be read (not parked, or its re-probe is due).
func (r *Reader) skipParked(path string) error {
	r.pathMu.Lock()
	defer r.pathMu.Unlock()
	rec := r.parks[path]
	if rec == nil || !rec.parked || !r.clock().Before(rec.next) {
		return nil
	}
	return rec.err
}

// notePark records the outcome of a read of path. It returns the parked
// error when this read parks the path or was a re-probe that failed again,
// nil otherwise. Any outcome other than a parking errno ends the streak: a
// success resumes a parked path.
func (r *Reader) notePark(path string, err error) error {
	errno, parking := parkingErrno(err)
	r.pathMu.Lock()
	defer r.pathMu.Unlock()
	rec := r.parks[path]
	if !parking {
		if rec != nil {
			r.dropPark(path, rec)
		}
		return nil
	}
	if rec == nil {
		rec = &parkRec{}
		r.parks[path] = rec
		r.parkRecs.Add(1)
	}
	rec.fails++
	if !rec.parked && rec.fails < ParkAfter {
		return nil
	}
	if !rec.parked {
		rec.parked = true
		r.parkedN.Add(1)
	}
	rec.next = r.clock().Add(r.opts.Reprobe)
	if rec.err == nil || rec.err.errno != errno || rec.err.reprobe != r.opts.Reprobe {
		rec.err = &parkedError{path: path, errno: errno, reprobe: r.opts.Reprobe}
	}
	return rec.err
}

// shortenReprobes brings the parked paths' next re-probe within the new,
// shorter interval: an operator who lowers it expects the parked files to
// be tried within it, not at the end of the old one.
func (r *Reader) shortenReprobes(reprobe time.Duration) {
	r.pathMu.Lock()
	defer r.pathMu.Unlock()
	limit := r.clock().Add(reprobe)
	for _, rec := range r.parks {
		if rec.parked && rec.next.After(limit) {
			rec.next = limit
		}
	}
}

func (r *Reader) dropPark(path string, rec *parkRec) {
	if rec.parked {
		r.parkedN.Add(-1)
	}
	delete(r.parks, path)
	r.parkRecs.Add(-1)
}
