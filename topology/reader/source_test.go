package reader

import (
	"errors"
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
