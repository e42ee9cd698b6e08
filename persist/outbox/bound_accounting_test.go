package outbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/event"
)

// segmentBytesOnDisk sums the sizes of the segment files in dir.
func segmentBytesOnDisk(t *testing.T, dir string) int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".log") {
			continue
		}
		fi, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

// TestOutbox_11_2_BoundAccountingMatchesDisk: the byte count the size
// bound is judged on is the bytes on disk, through compactions that drop
// records from inside segments, after a restart, and after appends to a
// compacted newest segment.
func TestOutbox_11_2_BoundAccountingMatchesDisk(t *testing.T) {
	dir := t.TempDir()
	one, _ := appendRecord(nil, 1, &[]event.Event{mkEvent(nonFatal, 100)}[0])
	opts := Options{Sinks: []string{"connector"}, MaxBytes: int64(len(one)) * 40, SegmentBytes: int64(len(one)) * 8}
	o := mustOpen(t, dir, opts)
	for i := 0; i < 120; i++ {
		s := nonFatal
		if i%4 == 1 {
			s = fatal
		}
		mustAppend(t, o, []event.Event{mkEvent(s, i)})
		if st, disk := o.Stats(), segmentBytesOnDisk(t, dir); st.Bytes != disk {
			t.Fatalf("after %d appends: Stats().Bytes = %d, segments on disk %d", i+1, st.Bytes, disk)
		}
	}
	st := o.Stats()
	if st.Dropped == 0 && st.Folded == 0 {
		t.Fatal("the bound was never reached (nothing folded or dropped)")
	}
	if st.Bytes > opts.MaxBytes {
		t.Fatalf("%d bytes above the bound %d with droppable records left: %+v", st.Bytes, opts.MaxBytes, st)
	}
	records := len(readAll(t, o, "connector"))
	o.Close()
	o = mustOpen(t, dir, opts)
	defer o.Close()
	if st2 := o.Stats(); st2.Bytes != st.Bytes || st2.Records != records {
		t.Fatalf("after a restart: %+v; before: %+v with %d records", st2, st, records)
	}
	seqs := mustAppend(t, o, []event.Event{mkEvent(fatal, 500)})
	got := readAll(t, o, "connector")
	if last := got[len(got)-1]; last.Seq != seqs[0] || last.Event.Message != mkEvent(fatal, 500).Message {
		t.Fatalf("append after compaction and restart: last record %+v", last)
	}
	if st, disk := o.Stats(), segmentBytesOnDisk(t, dir); st.Bytes != disk {
		t.Fatalf("Stats().Bytes = %d, segments on disk %d", st.Bytes, disk)
	}
}
