package reader

import (
	"fmt"
	"runtime/debug"
)

// Source is a plan entry that is not a file: a driver call, such as the
// ethtool statistics ioctl, that ends in a firmware command and can hang in
// the kernel just like a sysfs read.
type Source interface {
	Read() error
	Close()
}

// NewSource makes a plan entry whose read is src.Read, run by the same
// worker under the same deadline and stuck accounting as the files: name
// stands for the path (stuck reports, the skip while a read hangs), so it
// must not collide with a file's path, e.g. "ethtool:eth2". The value stays
// in src; Value is empty. Close closes src unless its read is stuck, in
// which case the blocked call keeps it.
func NewSource(name string, src Source) *File {
	f := NewFile(name)
	f.src = src
	return f
}

// IsSource reports whether f is a driver call (NewSource) rather than a
// file: it has no path to open.
func (f *File) IsSource() bool { return f.src != nil }

// callSource runs a one-shot call as a plan entry.
type callSource func() error

func (c callSource) Read() error { return c() }
func (c callSource) Close()      {}

// Call runs a one-shot driver call (resolving the ethtool statistics'
// names at a plan build, say) under the deadline, worker and stuck
// accounting of ReadFile. A name whose earlier call still hangs fails at
// once with ErrStuck, so plan builds repeated against a hung driver never
// strand more than one call per name. A call that misses the deadline
// keeps running; whatever it produces is its own to release.
func (r *Reader) Call(name string, call func() error) error {
	if r.PathStuck(name) {
		return fmt.Errorf("%s: %w", name, ErrStuck)
	}
	f := NewSource(name, callSource(call))
	f.oneShot = true
	r.Read([]*File{f}, nil)
	return f.Err
}

// PanicError is the outcome of a Source whose Read panicked on the
// worker's goroutine, where nothing above could recover it and the whole
// daemon would have died with one driver call's bug. The panic is
// recovered there and becomes this error, as the File's Err, unwrapped:
// the caller re-raises it inside its own check's boundary (daemon), which
// disables that check alone.
type PanicError struct {
	Name  string // the source's name (NewSource), e.g. "ethtool:eth2"
	Value any    // what was passed to panic
	Stack []byte // the worker's stack at the panic
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("%s: panic: %v", e.Name, e.Value)
}

// readSource runs one Source read, turning a panic into a *PanicError.
func readSource(f *File) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Name: f.Path, Value: r, Stack: debug.Stack()}
		}
	}()
	return f.src.Read()
}
