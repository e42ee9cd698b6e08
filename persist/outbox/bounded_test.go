package outbox

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/event"
)

// Issue 22 row 12: nichealth_outbox_over_bound stayed 1 after the
// backlog drained, because only makeRoom (an append) cleared it; a node
// that has gone quiet kept NICHealthOutboxOverBound firing for ever.
func TestBounded_12_OverBoundClearsWhenBacklogDrains(t *testing.T) {
	one, _ := appendRecord(nil, 1, &[]event.Event{mkEvent(fatal, 100)}[0])
	opts := Options{Sinks: []string{"connector"}, MaxBytes: int64(len(one)) * 10, SegmentBytes: int64(len(one)) * 3}
	o := mustOpen(t, t.TempDir(), opts)
	defer o.Close()
	var last uint64
	for i := 0; i < 30; i++ {
		ev := mkEvent(fatal, i)
		ev.EntitiesImpacted = []event.Entity{{Type: event.EntityNIC, Value: fmt.Sprintf("mlx5_%d", i)}, {Type: event.EntityNICPort, Value: "1"}}
		last = mustAppend(t, o, []event.Event{ev})[0]
	}
	if !o.Stats().OverBound {
		t.Fatal("the bound was never exceeded: the test tests nothing")
	}
	if err := o.Ack("connector", last-20); err != nil {
		t.Fatal(err)
	}
	if !o.Stats().OverBound {
		t.Fatal("cleared while 20 records above a bound of 10 are still undelivered")
	}
	if err := o.Ack("connector", last); err != nil {
		t.Fatal(err)
	}
	if st := o.Stats(); st.OverBound {
		t.Fatalf("still over bound after the backlog drained: %+v", st)
	}
}

// Issue 22 row 3: an event whose record is above the 1 MiB limit failed
// the whole Append, so the daemon retried the same batch for ever and
// every later event (a DOWN among them) stayed out of the outbox. It is
// parked instead, bounded, and the events around it are appended.
func TestBounded_3_UnfitRecordParkedNeverBlocks(t *testing.T) {
	dir := t.TempDir()
	o := mustOpen(t, dir, Options{Sinks: []string{"connector"}})
	huge := mkEvent(fatal, 1)
	// Past event.New's bounds on purpose: Append must not trust them.
	huge.Message = strings.Repeat("<", 300_000)
	seqs := mustAppend(t, o, []event.Event{mkEvent(fatal, 0), huge, mkEvent(fatal, 2)})
	if seqs[0] == 0 || seqs[1] != 0 || seqs[2] != seqs[0]+1 {
		t.Fatalf("seqs %v: want the oversized event parked (0) and its neighbours numbered in order", seqs)
	}
	got := readAll(t, o, "connector")
	if len(got) != 2 || got[0].Event.ID != mkEventID(t, got[0]) || got[1].Seq != seqs[2] {
		t.Fatalf("read %d records %v", len(got), seqsOf(got))
	}
	later := mustAppend(t, o, []event.Event{mkEvent(fatal, 3)})
	if later[0] != seqs[2]+1 {
		t.Fatalf("next seq %d after %d", later[0], seqs[2])
	}
	p := o.Parked(UnfitSink)
	if len(p) != 1 || p[0].Event.ID != huge.ID || !strings.Contains(p[0].Reason, "record limit") || len(p[0].Event.Message) > event.MaxMessageBytes {
		t.Fatalf("parked %+v", p)
	}
	if st := o.Stats(); st.Rejected != 1 {
		t.Fatalf("rejected %d, want the parked event counted", st.Rejected)
	}
	o.Close()
	o = mustOpen(t, dir, Options{Sinks: []string{"connector"}})
	defer o.Close()
	if len(o.Parked(UnfitSink)) != 1 || len(readAll(t, o, "connector")) != 3 {
		t.Fatal("the parked event or the records did not survive a restart")
	}
}

func mkEventID(t *testing.T, r Record) string {
	t.Helper()
	if r.Event.ID == "" {
		t.Fatal("record without an event id")
	}
	return r.Event.ID
}
