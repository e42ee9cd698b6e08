package kmsg

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/internal/component"
)

// waitFor polls a condition; the deadline only bounds a broken test.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func rec(seq uint64, msg string) string {
	return string(Format(Record{Level: 3, Seq: seq, TS: time.Second, Message: msg}))
}

// fifo makes a FIFO and returns its path and a function writing to it
// (each call one open, one write, one close, as the simulator does).
func fifo(t *testing.T) (string, func(string)) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kmsg")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p, func(s string) {
		t.Helper()
		w, err := os.OpenFile(p, os.O_WRONLY, 0) // waits for the reader to open
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.WriteString(s); err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
}

func drainAll(t *testing.T, s *Source, n int) []Record {
	t.Helper()
	var out []Record
	waitFor(t, "records", func() bool {
		out = s.Drain(out, 0)
		return len(out) >= n
	})
	return out
}

func TestKmsg_SourceReadsAFIFOWhoseWritersComeAndGo(t *testing.T) {
	p, write := fifo(t)
	s := Open(Options{Path: p})
	defer s.Close()
	write(rec(1, "one") + rec(2, "two") + rec(3, "three"))
	r4 := rec(4, "split across two writes")
	write(r4[:10])
	write(r4[10:])
	got := drainAll(t, s, 4)
	var msgs []string
	for _, r := range got {
		msgs = append(msgs, r.Message)
		if r.Time.IsZero() || r.Time.After(time.Now()) {
			t.Errorf("record %d: wall time %v", r.Seq, r.Time)
		}
	}
	if strings.Join(msgs, "|") != "one|two|three|split across two writes" {
		t.Fatalf("records %q", msgs)
	}
	// Every writer has gone; the source still waits for the next one
	// instead of reading end-of-file.
	if st := s.Stats(); !st.Open || st.Err != "" || st.Read != 4 {
		t.Fatalf("stats %+v", st)
	}
	write(rec(5, "after the writers left"))
	if got := drainAll(t, s, 1); got[0].Seq != 5 {
		t.Fatalf("got %+v", got)
	}
}

func TestKmsg_SourceResumesAfterTheCursorAndReportsGaps(t *testing.T) {
	p, write := fifo(t)
	s := Open(Options{Path: p, Resume: true, After: 5})
	defer s.Close()
	write(rec(3, "judged") + rec(4, "judged") + rec(5, "judged") + rec(6, "new"))
	got := drainAll(t, s, 1)
	if len(got) != 1 || got[0].Seq != 6 {
		t.Fatalf("got %+v", got)
	}
	write(rec(10, "after a gap"))
	drainAll(t, s, 1)
	st := s.Stats()
	if st.Skipped != 3 || st.Lost != 3 || st.LastSeq != 10 {
		t.Fatalf("stats %+v", st)
	}
	if l := s.TakeLosses(); len(l) != 1 || l[0] != (Loss{From: 7, To: 9}) || l[0].N() != 3 {
		t.Fatalf("losses %+v", l)
	}
	if l := s.TakeLosses(); len(l) != 0 {
		t.Fatalf("losses reported twice: %+v", l)
	}
}

// TestBounded_8_ResumedReaderCountsTrueFromTheStart: after a restart the
// reader says the position it resumed at before any record arrives (the
// metric nichealth_kernel_log_sequence read 0), and the records the kernel
// hands out again, judged before the restart, count as skipped, not read.
func TestBounded_8_ResumedReaderCountsTrueFromTheStart(t *testing.T) {
	p, write := fifo(t)
	s := Open(Options{Path: p, Resume: true, After: 5})
	defer s.Close()
	if st := s.Stats(); st.LastSeq != 5 || st.Read != 0 {
		t.Fatalf("before any record: %+v, want the resume point 5 and nothing read", st)
	}
	write(rec(1, "judged") + rec(2, "judged") + rec(3, "judged") + rec(4, "judged") + rec(5, "judged") + rec(6, "new"))
	drainAll(t, s, 1)
	if st := s.Stats(); st.Read != 1 || st.Skipped != 5 || st.LastSeq != 6 {
		t.Fatalf("stats %+v, want 1 read, 5 skipped, last 6", st)
	}
}

// A full queue holds the reader back, not the caller: nothing is dropped,
// the records wait in the source (the kernel's ring, here the reader's
// buffer) and come in order as the queue is drained.
func TestKmsg_SourceQueueFullHoldsTheReaderBack(t *testing.T) {
	p, write := fifo(t)
	s := Open(Options{Path: p, QueueRecords: 2})
	defer s.Close()
	var b strings.Builder
	for i := uint64(1); i <= 5; i++ {
		b.WriteString(rec(i, "storm"))
	}
	write(b.String())
	waitFor(t, "the queue full", func() bool { return s.Queued() == 2 })
	if st := s.Stats(); st.Dropped != 0 || st.Read > 3 {
		t.Fatalf("stats %+v with a full queue", st)
	}
	var seqs []uint64
	waitFor(t, "all five drained", func() bool {
		for _, r := range s.Drain(nil, 1) {
			seqs = append(seqs, r.Seq)
		}
		return len(seqs) == 5
	})
	if fmt.Sprint(seqs) != "[1 2 3 4 5]" || s.Stats().Dropped != 0 {
		t.Fatalf("drained %v, stats %+v", seqs, s.Stats())
	}
}

type scripted struct {
	reads []any // string or error
}

func (r *scripted) Read(b []byte) (int, error) {
	if len(r.reads) == 0 {
		return 0, io.ErrUnexpectedEOF
	}
	x := r.reads[0]
	r.reads = r.reads[1:]
	if err, ok := x.(error); ok {
		return 0, err
	}
	return copy(b, x.(string)), nil
}

// An overrun cannot be provoked on this machine's /dev/kmsg without
// flooding its kernel log, so the reads of one are scripted: EPIPE, then
// the oldest record the ring still holds.
func TestKmsg_OverrunReportedOnceWithTheLostCount(t *testing.T) {
	s := &Source{opts: Options{QueueRecords: 8, QueueBytes: DefaultQueueBytes}, q: make([]Record, 8), monoBase: clocks}
	s.space = sync.NewCond(&s.mu)
	err := s.readAll(&scripted{reads: []any{rec(100, "a"), rec(101, "b"), syscall.EPIPE, rec(160, "c"), rec(161, "d")}}, make([]byte, 4096))
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatal(err)
	}
	l := s.TakeLosses()
	if len(l) != 1 || l[0] != (Loss{From: 102, To: 159, Overrun: true}) || s.Stats().Lost != 58 || s.Queued() != 4 {
		t.Fatalf("losses %+v stats %+v", l, s.Stats())
	}
}

func TestKmsg_SourceWaitsForAMissingDevice(t *testing.T) {
	p := filepath.Join(t.TempDir(), "kmsg")
	s := Open(Options{Path: p})
	defer s.Close()
	waitFor(t, "the missing device reported", func() bool { return s.Stats().Err != "" })
	if st := s.Stats(); st.Open || !strings.Contains(st.Err, "no such file") {
		t.Fatalf("stats %+v", st)
	}
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the device opened after its backoff", func() bool { return s.Stats().Open })
}

func TestKmsg_CloseEndsAPendingRead(t *testing.T) {
	p, _ := fifo(t)
	s := Open(Options{Path: p})
	waitFor(t, "open", func() bool { return s.Stats().Open })
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not end the reader")
	}
}

// The real device: the ring from its start, then a record written to it
// from user space, which the kernel gives the user facility.
func TestKmsg_RealDevKmsgUserRecordsGetTheUserFacility(t *testing.T) {
	if os.Geteuid() != 0 {
		component.Missing(t, "needs root to write /dev/kmsg (and to read it under kernel.dmesg_restrict=1)")
	}
	if _, err := os.Stat("/dev/kmsg"); err != nil {
		component.Missing(t, "no /dev/kmsg: %v", err)
	}
	s := Open(Options{Path: "/dev/kmsg"})
	defer s.Close()
	var id [6]byte
	rand.Read(id[:])
	tag := "nichealth-kmsg-test " + hex.EncodeToString(id[:])
	w, err := os.OpenFile("/dev/kmsg", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Write([]byte("<3>" + tag + "\n")); err != nil {
		t.Fatalf("write /dev/kmsg: %v (kernel.printk_devkmsg=%s)", err, bytes.TrimSpace(mustRead("/proc/sys/kernel/printk_devkmsg")))
	}
	var mine *Record
	var kernel bool
	var got []Record
	waitFor(t, "the written record", func() bool {
		got = s.Drain(got[:0], 0)
		for i := range got {
			if got[i].Facility == FacilityKernel {
				kernel = true
			}
			if got[i].Message == tag {
				r := got[i]
				mine = &r
			}
		}
		return mine != nil
	})
	if mine.Facility != FacilityUser || mine.Level != 3 {
		t.Fatalf("record written from user space: %+v", *mine)
	}
	if !kernel {
		t.Error("the ring from its start holds no kernel-facility record")
	}
}

func mustRead(p string) []byte {
	b, _ := os.ReadFile(p)
	return b
}

// The queue takes the room a burst needs, up to QueueRecords, and gives it
// back once drained: a quiet host holds 64 records' room, not 16,384
// (1.8 MB for the daemon's life).
func TestBounded_QueueGrowsForABurstAndShrinksWhenDrained(t *testing.T) {
	s := &Source{opts: Options{QueueRecords: 1000, QueueBytes: DefaultQueueBytes}, q: make([]Record, initialQueue), monoBase: clocks}
	s.space = sync.NewCond(&s.mu)
	var reads []any
	for i := 0; i < 1000; i++ {
		reads = append(reads, rec(uint64(100+i), "burst"))
	}
	if err := s.readAll(&scripted{reads: reads}, make([]byte, 4096)); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatal(err)
	}
	if s.Queued() != 1000 || len(s.q) != 1000 {
		t.Fatalf("queued %d in room for %d, want 1000 in 1000 (the bound)", s.Queued(), len(s.q))
	}
	got := s.Drain(nil, 0)
	for i, r := range got {
		if r.Seq != uint64(100+i) {
			t.Fatalf("record %d is seq %d: the growth reordered the queue", i, r.Seq)
		}
	}
	if len(s.q) != 64 {
		t.Fatalf("room for %d records once drained, want 64", len(s.q))
	}
}
