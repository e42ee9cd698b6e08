package outbox

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/event"
)

// orderSegments opens real segments whose writes and data syncs are
// written to a log, so a test can check the order that makes an append
// durable; failSync makes the next data sync fail.
type orderSegments struct {
	mu       sync.Mutex
	log      []string
	failSync error
	// hold, when set, makes writes wait until it is closed (a hung
	// filesystem); held is told each time one starts waiting.
	hold chan struct{}
	held chan struct{}
}

func (o *orderSegments) note(s string) {
	o.mu.Lock()
	o.log = append(o.log, s)
	o.mu.Unlock()
}

func (o *orderSegments) since(n int) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.log[n:])
}

func (o *orderSegments) len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.log)
}

func (o *orderSegments) OpenAppend(path string, create bool) (segmentFile, error) {
	f, err := osSegments{}.OpenAppend(path, create)
	if err != nil {
		return nil, err
	}
	o.note("open " + filepath.Base(path))
	return &orderSegment{segmentFile: f, o: o}, nil
}

type orderSegment struct {
	segmentFile
	o *orderSegments
}

func (s *orderSegment) Write(b []byte) (int, error) {
	s.o.note("write")
	s.o.mu.Lock()
	hold, held := s.o.hold, s.o.held
	s.o.mu.Unlock()
	if hold != nil {
		held <- struct{}{}
		<-hold
	}
	return s.segmentFile.Write(b)
}

func (s *orderSegment) Datasync() error {
	s.o.note("datasync")
	s.o.mu.Lock()
	err := s.o.failSync
	s.o.failSync = nil
	s.o.mu.Unlock()
	if err != nil {
		return err
	}
	return s.segmentFile.Datasync()
}

func (s *orderSegment) Truncate(n int64) error {
	s.o.note("truncate")
	return s.segmentFile.Truncate(n)
}

// DESIGN.md section 3: an event is on stable storage before the state
// that produced it is saved, and the caller saves that state as soon as
// Append returns. So every Append writes its records and then syncs
// their data before it returns; a kill -9 test cannot tell an fdatasync
// from none (the page cache survives a killed process), only the order
// of the calls can. A new segment is synced the same way.
func TestDurability_AppendSyncsItsDataBeforeReturning(t *testing.T) {
	rec := &orderSegments{}
	dir := filepath.Join(t.TempDir(), "outbox")
	o, err := Open(dir, Options{SegmentBytes: 4 << 10, Sinks: []string{"s"}, files: rec})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	for i := 0; i < 40; i++ {
		before := rec.len()
		if _, err := o.Append([]event.Event{mkEvent(fatal, i), mkEvent(nonFatal, i)}); err != nil {
			t.Fatal(err)
		}
		got := rec.since(before)
		// A batch may first open a new segment; then exactly one write
		// of the whole batch and its data sync, the sync last.
		calls := slices.DeleteFunc(slices.Clone(got), func(s string) bool { return strings.HasPrefix(s, "open ") })
		if !slices.Equal(calls, []string{"write", "datasync"}) {
			t.Fatalf("append %d: calls %v, want the batch written and then its data synced before Append returns", i, got)
		}
	}
	if o.Stats().Segments < 2 {
		t.Fatalf("%d segments: the test must cover an append to a new segment", o.Stats().Segments)
	}
}

// A data sync that fails means the records may not be on disk: Append
// refuses the batch (so the caller does not save its state), cuts the
// segment back, and a later Open shows none of it.
func TestDurability_FailedDatasyncRefusesTheBatch(t *testing.T) {
	rec := &orderSegments{}
	dir := filepath.Join(t.TempDir(), "outbox")
	o, err := Open(dir, Options{Sinks: []string{"s"}, files: rec})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Append([]event.Event{mkEvent(fatal, 1)}); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	rec.failSync = syscall.EIO
	rec.mu.Unlock()
	before := rec.len()
	seqs, err := o.Append([]event.Event{mkEvent(fatal, 2), mkEvent(fatal, 3)})
	if err == nil || !errors.Is(err, syscall.EIO) || seqs != nil {
		t.Fatalf("Append with a failing data sync: seqs %v err %v, want the batch refused with EIO", seqs, err)
	}
	if got := rec.since(before); !slices.Equal(got, []string{"write", "datasync", "truncate"}) {
		t.Fatalf("calls %v, want the batch cut back after the failed sync", got)
	}
	o.Close()
	o2, err := Open(dir, Options{Sinks: []string{"s"}})
	if err != nil {
		t.Fatal(err)
	}
	defer o2.Close()
	recs, err := o2.Read("s", 0)
	if err != nil || len(recs) != 1 {
		t.Fatalf("after reopening: %d records (%v), want only the first, synced, event", len(recs), err)
	}
}

// Issue 32 row 4: an Append whose write hangs in the kernel (a hung
// filesystem) held the outbox's lock, and the metrics endpoint's Stats
// waited on it: /metrics answered 503 and the stall could not be seen.
// The views' reads (Stats, Rejected, Recent, Since) and a reload's
// SetMaxBytes never wait for an Append in progress; Stats shows the
// outbox as of the last change, and the hung batch once it is written.
func TestBounded_4_ViewsDoNotWaitForAHungAppend(t *testing.T) {
	rec := &orderSegments{}
	dir := filepath.Join(t.TempDir(), "outbox")
	o, err := Open(dir, Options{Sinks: []string{"s"}, files: rec})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if _, err := o.Append([]event.Event{mkEvent(fatal, 1)}); err != nil {
		t.Fatal(err)
	}
	hold, held := make(chan struct{}), make(chan struct{}, 1)
	rec.mu.Lock()
	rec.hold, rec.held = hold, held
	rec.mu.Unlock()
	appended := make(chan error, 1)
	go func() {
		_, err := o.Append([]event.Event{mkEvent(fatal, 2)})
		appended <- err
	}()
	<-held // the Append holds the lock and waits in its write
	views := make(chan Stats, 1)
	go func() {
		o.SetMaxBytes(32 << 20)
		_ = o.Rejected()
		_ = o.Recent(10)
		_ = o.Since(0, 10)
		views <- o.Stats()
	}()
	select {
	case st := <-views:
		if st.LastSeq != 1 || st.Sinks["s"].Depth != 1 {
			t.Fatalf("stats during the hung append: last seq %d, depth %d; want the outbox as it was (1, 1)", st.LastSeq, st.Sinks["s"].Depth)
		}
	case <-time.After(time.Minute):
		t.Fatal("the views waited for an Append hung in its write")
	}
	rec.mu.Lock()
	rec.hold = nil
	rec.mu.Unlock()
	close(hold)
	if err := <-appended; err != nil {
		t.Fatal(err)
	}
	if st := o.Stats(); st.LastSeq != 2 || st.Sinks["s"].Depth != 2 {
		t.Fatalf("stats after the write returned: last seq %d, depth %d; want 2, 2", st.LastSeq, st.Sinks["s"].Depth)
	}
	if r := o.Recent(10); len(r) != 2 {
		t.Fatalf("%d recent records, want 2", len(r))
	}
}
