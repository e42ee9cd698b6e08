package reader

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type blockingSource struct {
	block   chan struct{}
	reads   int
	closed  bool
	release bool
}

func (s *blockingSource) Read() error {
	s.reads++
	if !s.release {
		<-s.block
	}
	return nil
}

func (s *blockingSource) Close() { s.closed = true }

// A driver call that hangs is abandoned at the deadline like a hung file,
// skipped while it hangs, and read again once it returned.
func TestSource_HungDriverCallIsBounded(t *testing.T) {
	r := New(Options{Timeout: 20 * time.Millisecond, MaxStuck: 2})
	defer r.Close()
	src := &blockingSource{block: make(chan struct{})}
	f := NewSource("ethtool:eth9", src)
	other := NewFile(t.TempDir() + "/absent")
	stuck := r.Read([]*File{f, other}, nil)
	if len(stuck) != 1 || stuck[0] != f || !errors.Is(f.Err, ErrStuck) {
		t.Fatalf("stuck = %v, err %v; want the source stuck", stuck, f.Err)
	}
	if other.Err == nil || errors.Is(other.Err, ErrStuck) {
		t.Fatalf("the file after the hung source was not read: %v", other.Err)
	}
	r.Read([]*File{f}, nil)
	if !errors.Is(f.Err, ErrStuck) || !r.PathStuck("ethtool:eth9") {
		t.Fatalf("a hung source was read again: %v", f.Err)
	}
	f.Close()
	close(src.block)
	for r.StuckCount() != 0 {
		time.Sleep(time.Millisecond) // wait for the abandoned call to return
	}
	if src.closed {
		t.Fatal("Close closed a source whose call was still blocked")
	}
	src.release = true
	r.Read([]*File{f}, nil)
	if f.Err != nil || src.reads != 2 {
		t.Fatalf("after return: err %v, reads %d; want nil, 2", f.Err, src.reads)
	}
	f.Close()
	if !src.closed {
		t.Fatal("Close did not close the source")
	}
}

// TestCall_HungCallIsBoundedAndNotRepeated: a one-shot driver call that
// hangs fails with ErrStuck at the deadline, and a second call of the same
// name while it hangs fails at once without running: plan builds against a
// hung driver strand one call, not one each. Once it returns, the name is
// called again.
func TestCall_HungCallIsBoundedAndNotRepeated(t *testing.T) {
	r := New(Options{Timeout: 20 * time.Millisecond, MaxStuck: 2})
	defer r.Close()
	block := make(chan struct{})
	calls := 0
	hung := func() error { calls++; <-block; return nil }
	if err := r.Call("ethtool-names:eth9", hung); !errors.Is(err, ErrStuck) {
		t.Fatalf("hung call: %v, want ErrStuck", err)
	}
	if err := r.Call("ethtool-names:eth9", hung); !errors.Is(err, ErrStuck) {
		t.Fatalf("second call while hung: %v, want ErrStuck", err)
	}
	close(block)
	for r.StuckCount() != 0 {
		time.Sleep(time.Millisecond) // wait for the abandoned call to return
	}
	if calls != 1 {
		t.Fatalf("the hung name was called %d times, want 1", calls)
	}
	if err := r.Call("ethtool-names:eth9", func() error { calls++; return nil }); err != nil || calls != 2 {
		t.Fatalf("after return: %v, calls %d", err, calls)
	}
}

type panickingSource struct{ reads int }

func (p *panickingSource) Read() error {
	p.reads++
	var m map[string]int
	m["driver bug"]++ // a nil map write, as a driver wrapper's bug would be
	return nil
}
func (p *panickingSource) Close() {}

// A source that panics on the worker's goroutine does not take the
// process down: its File fails with a *PanicError carrying the value and
// the stack, the other entries of the plan are read, and so is a Call.
func TestSource_PanicBecomesPanicError(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state")
	if err := os.WriteFile(p, []byte("4: ACTIVE\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := New(Options{Timeout: 5 * time.Second})
	defer r.Close()
	src := &panickingSource{}
	bad, good := NewSource("ethtool:eth9", src), NewFile(p)
	for i := 0; i < 3; i++ {
		r.Read([]*File{bad, good}, nil)
		pe, ok := bad.Err.(*PanicError)
		if !ok || pe.Name != "ethtool:eth9" || !strings.Contains(fmt.Sprint(pe.Value), "nil map") ||
			!strings.Contains(string(pe.Stack), "panickingSource") {
			t.Fatalf("read %d: err %#v", i, bad.Err)
		}
		if good.Err != nil || string(good.Value()) != "4: ACTIVE\n" {
			t.Fatalf("read %d: the file after the source: %v %q", i, good.Err, good.Value())
		}
	}
	err := r.Call("ethtool-names:eth9", func() error { panic("resolving names") })
	if pe, ok := err.(*PanicError); !ok || pe.Value != "resolving names" {
		t.Fatalf("Call: %#v", err)
	}
}
