package outbox

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOutbox_UnsavedCursorDoesNotResend: when the cursor file cannot be
// written (here its path is a directory, as good as a full disk for
// rename), Ack still moves the sink past the batch, so a drainer does not
// send it again in a loop; a later Ack of the same seq retries the save.
func TestOutbox_UnsavedCursorDoesNotResend(t *testing.T) {
	dir := t.TempDir()
	o := mustOpen(t, dir, Options{Sinks: []string{"a"}})
	seqs := mustAppend(t, o, mkEvents(fatal, 0, 4))
	blocker := filepath.Join(dir, "cursor.a")
	if err := os.MkdirAll(filepath.Join(blocker, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	err := o.Ack("a", seqs[3])
	if !errors.Is(err, ErrCursorNotSaved) {
		t.Fatalf("Ack with an unwritable cursor: %v, want ErrCursorNotSaved", err)
	}
	if recs := readAll(t, o, "a"); len(recs) != 0 {
		t.Fatalf("Read after an unsaved Ack returned %d records again", len(recs))
	}
	if got := o.Stats().Sinks["a"].Cursor; got != seqs[3] {
		t.Fatalf("cursor %d, want %d", got, seqs[3])
	}
	if err := o.Ack("a", seqs[3]); !errors.Is(err, ErrCursorNotSaved) {
		t.Fatalf("repeated Ack while still blocked: %v", err)
	}
	if err := os.RemoveAll(blocker); err != nil {
		t.Fatal(err)
	}
	if err := o.Ack("a", seqs[3]); err != nil {
		t.Fatalf("Ack retrying the save: %v", err)
	}
	o.Close()
	o = mustOpen(t, dir, Options{Sinks: []string{"a"}})
	defer o.Close()
	if recs := readAll(t, o, "a"); len(recs) != 0 {
		t.Fatalf("after restart %d records resent; the retried save did not persist", len(recs))
	}
}

// TestOutbox_DamagedCursorPast2To62IsRebasedOnce: a cursor file with a
// number no Append handed out (at or past 2^62, or merely far beyond the
// segments) neither drags the next sequence number up (where the next
// Open would refuse it and hand it out again) nor makes the sink re-send
// everything at every start: it is rebased to 0 once, on disk.
func TestOutbox_DamagedCursorPast2To62IsRebasedOnce(t *testing.T) {
	for _, bad := range []string{"4611686018427387903", "4611686018427387904", "18446744073709551615", "99999999999", "-1", "fifo"} {
		t.Run(bad, func(t *testing.T) {
			dir := t.TempDir()
			o := mustOpen(t, dir, Options{Sinks: []string{"a", "b"}})
			mustAppend(t, o, mkEvents(fatal, 0, 3))
			if err := o.Ack("a", 2); err != nil {
				t.Fatal(err)
			}
			if err := o.Ack("b", 3); err != nil {
				t.Fatal(err)
			}
			o.Close()
			p := filepath.Join(dir, "cursor.a")
			os.Remove(p)
			if bad == "fifo" {
				if err := syscall.Mkfifo(p, 0o600); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(p, []byte(bad+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			log := &captured{}
			o = mustOpen(t, dir, Options{Sinks: []string{"a", "b"}, Logger: slog.New(log)})
			if w := log.warnings(); len(w) != 1 || !strings.Contains(w[0], "cursor.a") {
				t.Fatalf("warnings = %q, want one naming cursor.a", w)
			}
			// Re-sent once: a duplicate is better than a loss.
			if got := seqsOf(readAll(t, o, "a")); !equalSeqs(got, seqRange(1, 3)) {
				t.Fatalf("sink a reads %v after the rebase, want 1..3", got)
			}
			if got := readAll(t, o, "b"); len(got) != 0 {
				t.Fatalf("the healthy sink b re-reads %v", seqsOf(got))
			}
			if seqs := mustAppend(t, o, mkEvents(fatal, 3, 1)); seqs[0] != 4 {
				t.Fatalf("next seq %d, want 4", seqs[0])
			}
			o.Close()
			// Not acknowledged yet: the next start re-sends again, but
			// without a second warning, from the rebased file.
			log = &captured{}
			o = mustOpen(t, dir, Options{Sinks: []string{"a", "b"}, Logger: slog.New(log)})
			if w := log.warnings(); len(w) != 0 {
				t.Fatalf("warnings at the second start: %q", w)
			}
			if got := seqsOf(readAll(t, o, "a")); !equalSeqs(got, seqRange(1, 4)) {
				t.Fatalf("sink a reads %v, want 1..4", got)
			}
			if err := o.Ack("a", 4); err != nil {
				t.Fatal(err)
			}
			if seqs := mustAppend(t, o, mkEvents(fatal, 4, 1)); seqs[0] != 5 {
				t.Fatalf("next seq %d, want 5", seqs[0])
			}
			o.Close()
			o = mustOpen(t, dir, Options{Sinks: []string{"a", "b"}})
			defer o.Close()
			if got := seqsOf(readAll(t, o, "a")); !equalSeqs(got, []uint64{5}) {
				t.Fatalf("third start: sink a reads %v, want only 5", got)
			}
		})
	}
}

// TestOutbox_SegmentNamedPast2To62IsIgnored: a segment file whose name is
// at or past 2^62 does not set the next sequence number.
func TestOutbox_SegmentNamedPast2To62IsIgnored(t *testing.T) {
	dir := t.TempDir()
	o := mustOpen(t, dir, Options{Sinks: []string{"a"}})
	mustAppend(t, o, mkEvents(fatal, 0, 2))
	o.Close()
	if err := os.WriteFile(filepath.Join(dir, segmentName(maxSeq)), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	log := &captured{}
	o = mustOpen(t, dir, Options{Sinks: []string{"a"}, Logger: slog.New(log)})
	defer o.Close()
	if seqs := mustAppend(t, o, mkEvents(fatal, 2, 1)); seqs[0] != 3 {
		t.Fatalf("next seq %d, want 3", seqs[0])
	}
	if w := log.warnings(); len(w) != 1 {
		t.Fatalf("warnings = %q, want one", w)
	}
}

// TestOutbox_ParkedEventsPersistUntilUnparked: events a sink rejected as
// invalid stay in its dead-letter file across restarts, are counted in
// Stats, and leave it only when Unpark says they were delivered.
func TestOutbox_ParkedEventsPersistUntilUnparked(t *testing.T) {
	dir := t.TempDir()
	o := mustOpen(t, dir, Options{Sinks: []string{"connector", "jsonl"}})
	evs := mkEvents(fatal, 0, 3)
	seqs := mustAppend(t, o, evs)
	recs := readAll(t, o, "connector")
	why := "rpc error: code = InvalidArgument desc = entity NIC mlx5_1 unknown"
	if err := o.Park("connector", recs[1:3], []string{why, why}); err != nil {
		t.Fatal(err)
	}
	// Parking twice (a retry rejected again) keeps one copy.
	if err := o.Park("connector", recs[2:3], []string{"again"}); err != nil {
		t.Fatal(err)
	}
	if err := o.Ack("connector", seqs[2]); err != nil {
		t.Fatal(err)
	}
	if st := o.Stats(); st.Rejected != 2 || st.Sinks["connector"].Rejected != 2 || st.Sinks["jsonl"].Rejected != 0 {
		t.Fatalf("stats %+v", st)
	}
	o.Close()
	o = mustOpen(t, dir, Options{Sinks: []string{"connector", "jsonl"}})
	p := o.Parked("connector")
	if len(p) != 2 || p[0].Event.ID != evs[1].ID || p[1].Event.ID != evs[2].ID || p[0].Seq != seqs[1] ||
		!strings.Contains(p[0].Reason, "InvalidArgument") {
		t.Fatalf("parked after restart: %+v", p)
	}
	if o.Rejected() != 2 {
		t.Fatalf("Rejected() = %d", o.Rejected())
	}
	if err := o.Unpark("connector", []string{evs[1].ID}); err != nil {
		t.Fatal(err)
	}
	o.Close()
	o = mustOpen(t, dir, Options{Sinks: []string{"connector", "jsonl"}})
	if p := o.Parked("connector"); len(p) != 1 || p[0].Event.ID != evs[2].ID {
		t.Fatalf("parked after unpark and restart: %+v", p)
	}
	if err := o.Unpark("connector", []string{evs[2].ID}); err != nil {
		t.Fatal(err)
	}
	o.Close()
	if _, err := os.Stat(filepath.Join(dir, "rejected.connector")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("dead-letter file left behind empty: %v", err)
	}
}

// BenchmarkAppend_AtBoundFolding: appends to an outbox held at its 64 KiB
// minimum bound by a sink that never drains, so compaction folds
// superseded events (eight entities) as it goes.
func BenchmarkAppend_AtBoundFolding(b *testing.B) {
	o := mustOpen(b, b.TempDir(), Options{Sinks: []string{"connector"}, MaxBytes: 64 << 10})
	defer o.Close()
	evs := mkEvents(nonFatal, 0, 64)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := o.Append(evs[i%64 : i%64+1]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if st := o.Stats(); st.Bytes > 64<<10 {
		b.Fatalf("%d bytes above the bound", st.Bytes)
	}
	b.ReportMetric(float64(o.Stats().Folded)/float64(b.N), "folded/op")
}
