package outbox

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/event"
)

// captured collects log records so tests can count warnings.
type captured struct {
	mu   sync.Mutex
	msgs []string
}

func (c *captured) Enabled(context.Context, slog.Level) bool { return true }
func (c *captured) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.Level >= slog.LevelWarn {
		c.msgs = append(c.msgs, r.Message)
	}
	return nil
}
func (c *captured) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *captured) WithGroup(string) slog.Handler      { return c }
func (c *captured) warnings() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.msgs...)
}

type sev int

const (
	nonFatal sev = iota
	fatal
	healthy
)

func mkEvent(s sev, i int) event.Event {
	spec := event.Spec{
		Kind:      event.KindCounterBreach,
		CheckName: event.InfiniBandDegradationCheck,
		Message:   fmt.Sprintf("symbol_error rate above threshold on mlx5_%d port 1 (#%d)", i%8, i),
		Device:    fmt.Sprintf("mlx5_%d", i%8),
		Port:      1,
		ErrorCode: []string{"symbol_error"},
		Metadata:  map[string]string{"n": fmt.Sprint(i)},
	}
	switch s {
	case fatal:
		spec.IsFatal, spec.Kind = true, event.KindPortFatal
	case healthy:
		spec.IsHealthy, spec.Kind = true, event.KindPortRecovered
	}
	return event.New(spec, event.Stamp{NodeName: "gpu-node-7", Strategy: event.StrategyExecuteRemediation, Now: time.Date(2025, 6, 15, 10, 30, 0, 0, time.UTC)})
}

func mkEvents(s sev, from, n int) []event.Event {
	out := make([]event.Event, n)
	for i := range out {
		out[i] = mkEvent(s, from+i)
	}
	return out
}

func mustOpen(t testing.TB, dir string, opts Options) *Outbox {
	t.Helper()
	o, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func mustAppend(t testing.TB, o *Outbox, evs []event.Event) []uint64 {
	t.Helper()
	seqs, err := o.Append(evs)
	if err != nil {
		t.Fatal(err)
	}
	return seqs
}

func readAll(t testing.TB, o *Outbox, sink string) []Record {
	t.Helper()
	recs, err := o.Read(sink, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func seqsOf(recs []Record) []uint64 {
	out := make([]uint64, len(recs))
	for i, r := range recs {
		out[i] = r.Seq
	}
	return out
}

func seqRange(from, to uint64) []uint64 {
	var out []uint64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

func equalSeqs(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestOutbox_AppendReadAckAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	sinks := []string{"journal", "connector"}
	o := mustOpen(t, dir, Options{Sinks: sinks})
	evs := append(mkEvents(fatal, 0, 3), mkEvents(nonFatal, 3, 7)...)
	seqs := mustAppend(t, o, evs)
	if !equalSeqs(seqs, seqRange(1, 10)) {
		t.Fatalf("seqs = %v", seqs)
	}
	got := readAll(t, o, "journal")
	if !equalSeqs(seqsOf(got), seqRange(1, 10)) {
		t.Fatalf("journal read %v", seqsOf(got))
	}
	for i, r := range got {
		if r.Event.ID != evs[i].ID || r.Event.Message != evs[i].Message || r.Event.IsFatal != evs[i].IsFatal {
			t.Fatalf("record %d = %+v; want event %+v", i, r.Event, evs[i])
		}
	}
	// Reading again without an ack returns the same records.
	if again := readAll(t, o, "journal"); !equalSeqs(seqsOf(again), seqRange(1, 10)) {
		t.Fatalf("re-read %v", seqsOf(again))
	}
	if err := o.Ack("journal", 7); err != nil {
		t.Fatal(err)
	}
	if err := o.Ack("connector", 3); err != nil {
		t.Fatal(err)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}

	o = mustOpen(t, dir, Options{Sinks: sinks})
	defer o.Close()
	if got := seqsOf(readAll(t, o, "journal")); !equalSeqs(got, seqRange(8, 10)) {
		t.Fatalf("journal after restart read %v", got)
	}
	if got := readAll(t, o, "connector"); !equalSeqs(seqsOf(got), seqRange(4, 10)) || got[0].Event.ID != evs[3].ID {
		t.Fatalf("connector after restart read %v", seqsOf(got))
	}
	if seqs := mustAppend(t, o, mkEvents(healthy, 10, 2)); !equalSeqs(seqs, []uint64{11, 12}) {
		t.Fatalf("seqs after restart = %v", seqs)
	}
	st := o.Stats()
	if st.LastSeq != 12 || st.Sinks["journal"].Depth != 5 || st.Sinks["connector"].Depth != 9 || st.Sinks["journal"].Cursor != 7 {
		t.Fatalf("stats = %+v", st)
	}
	if got, _ := o.Read("journal", 2); !equalSeqs(seqsOf(got), []uint64{8, 9}) {
		t.Fatalf("Read max 2 = %v", seqsOf(got))
	}
}

func TestOutbox_AckRules(t *testing.T) {
	o := mustOpen(t, t.TempDir(), Options{Sinks: []string{"a"}})
	defer o.Close()
	mustAppend(t, o, mkEvents(fatal, 0, 3))
	if err := o.Ack("a", 4); err == nil {
		t.Errorf("ack beyond the last seq accepted")
	}
	if err := o.Ack("b", 1); err == nil || !strings.Contains(err.Error(), `"b"`) {
		t.Errorf("ack of unknown sink = %v", err)
	}
	if _, err := o.Read("b", 1); err == nil {
		t.Errorf("read of unknown sink accepted")
	}
	if err := o.Ack("a", 2); err != nil {
		t.Fatal(err)
	}
	if err := o.Ack("a", 1); err != nil {
		t.Errorf("ack below the cursor = %v; want a no-op", err)
	}
	if c := o.Stats().Sinks["a"].Cursor; c != 2 {
		t.Errorf("cursor moved back to %d", c)
	}
	for _, bad := range []string{"", "../x", "a b", ".hidden", strings.Repeat("x", 65)} {
		if _, err := Open(t.TempDir(), Options{Sinks: []string{bad}}); err == nil {
			t.Errorf("sink name %q accepted", bad)
		}
	}
}

func TestOutbox_SinkAddedLaterStartsAtOldestRetained(t *testing.T) {
	dir := t.TempDir()
	// Tiny segments: every batch starts a new one.
	opts := Options{Sinks: []string{"journal"}, SegmentBytes: 1}
	o := mustOpen(t, dir, opts)
	for i := 0; i < 5; i++ {
		mustAppend(t, o, mkEvents(nonFatal, i*2, 2))
	}
	if n := o.Stats().Segments; n != 5 {
		t.Fatalf("segments = %d; want 5", n)
	}
	if err := o.Ack("journal", 6); err != nil {
		t.Fatal(err)
	}
	// Segments holding 1-2, 3-4, 5-6 are delivered everywhere and deleted.
	if st := o.Stats(); st.Segments != 2 || st.Records != 4 {
		t.Fatalf("after ack: %+v", st)
	}
	if err := o.SetSinks([]string{"journal", "connector"}); err != nil {
		t.Fatal(err)
	}
	if got := seqsOf(readAll(t, o, "connector")); !equalSeqs(got, seqRange(7, 10)) {
		t.Fatalf("new sink read %v; want the retained 7..10", got)
	}
	// The new sink now holds back deletion...
	if err := o.Ack("journal", 10); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, o, mkEvents(nonFatal, 10, 1))
	if st := o.Stats(); st.Records != 5 {
		t.Fatalf("records = %d; want 5 held for the new sink", st.Records)
	}
	// ...until it is configured away.
	if err := o.SetSinks([]string{"journal"}); err != nil {
		t.Fatal(err)
	}
	if st := o.Stats(); st.Segments != 1 || st.Records != 1 {
		t.Fatalf("after removing the slow sink: %+v", st)
	}
	o.Close()
	// Reopening with the removed sink again resumes from its cursor file
	// (it never acknowledged, so from the oldest retained).
	o = mustOpen(t, dir, Options{Sinks: []string{"journal", "connector"}})
	defer o.Close()
	if got := seqsOf(readAll(t, o, "connector")); !equalSeqs(got, []uint64{11}) {
		t.Fatalf("returning sink read %v", got)
	}
}

// TestOutbox_OpenWithoutSinksDeletesNothing: a daemon that opens the
// outbox first and registers its sinks afterwards must not lose what they
// had not delivered before the restart.
func TestOutbox_OpenWithoutSinksDeletesNothing(t *testing.T) {
	dir := t.TempDir()
	o := mustOpen(t, dir, Options{Sinks: []string{"journal"}, SegmentBytes: 1})
	for i := 0; i < 4; i++ {
		mustAppend(t, o, mkEvents(fatal, i, 1))
	}
	o.Close()
	o = mustOpen(t, dir, Options{SegmentBytes: 1})
	defer o.Close()
	if st := o.Stats(); st.Records != 4 || st.Segments != 4 {
		t.Fatalf("after Open without sinks: %+v; want all 4 records kept", st)
	}
	if err := o.SetSinks([]string{"journal"}); err != nil {
		t.Fatal(err)
	}
	if got := seqsOf(readAll(t, o, "journal")); !equalSeqs(got, seqRange(1, 4)) {
		t.Fatalf("journal read %v", got)
	}
}

func TestOutbox_SeqNeverReused(t *testing.T) {
	dir := t.TempDir()
	o := mustOpen(t, dir, Options{Sinks: []string{"a"}, SegmentBytes: 1})
	mustAppend(t, o, mkEvents(fatal, 0, 4))
	if err := o.Ack("a", 4); err != nil {
		t.Fatal(err)
	}
	o.Close()
	o = mustOpen(t, dir, Options{Sinks: []string{"a"}, SegmentBytes: 1})
	if seqs := mustAppend(t, o, mkEvents(fatal, 4, 1)); seqs[0] != 5 {
		t.Fatalf("seq after reopen = %d; want 5", seqs[0])
	}
	o.Close()
	// Even with every segment gone, a sink's cursor keeps its numbers
	// from being handed out again (they would be skipped as delivered).
	segs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, s := range segs {
		os.Remove(s)
	}
	o = mustOpen(t, dir, Options{Sinks: []string{"a"}})
	defer o.Close()
	if seqs := mustAppend(t, o, mkEvents(fatal, 5, 1)); seqs[0] <= 4 {
		t.Fatalf("seq %d reused below the acknowledged 4", seqs[0])
	}
	if got := readAll(t, o, "a"); len(got) != 1 {
		t.Fatalf("new event not readable: %v", seqsOf(got))
	}
}

func onlySegment(t *testing.T, dir string) string {
	t.Helper()
	segs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(segs) != 1 {
		t.Fatalf("segments = %v", segs)
	}
	return segs[0]
}

func TestOutbox_TornTailIsCutOnOpen(t *testing.T) {
	dir := t.TempDir()
	o := mustOpen(t, dir, Options{Sinks: []string{"a"}})
	mustAppend(t, o, mkEvents(fatal, 0, 3))
	o.Close()
	seg := onlySegment(t, dir)
	fi, _ := os.Stat(seg)
	good := fi.Size()
	// Half a record, as a crash in the middle of a write leaves it.
	rec, _ := appendRecord(nil, 4, &[]event.Event{mkEvent(fatal, 3)}[0])
	f, _ := os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0)
	f.Write(rec[:len(rec)/2])
	f.Close()

	log := &captured{}
	o = mustOpen(t, dir, Options{Sinks: []string{"a"}, Logger: slog.New(log)})
	w := log.warnings()
	if len(w) != 1 || !strings.Contains(w[0], seg) || !strings.Contains(w[0], fmt.Sprintf("offset %d", good)) {
		t.Fatalf("warnings = %q; want one naming %s at offset %d", w, seg, good)
	}
	if fi, _ := os.Stat(seg); fi.Size() != good {
		t.Fatalf("segment is %d bytes; want the torn tail cut to %d", fi.Size(), good)
	}
	if seqs := mustAppend(t, o, mkEvents(fatal, 3, 1)); seqs[0] != 4 {
		t.Fatalf("seq after torn tail = %d", seqs[0])
	}
	o.Close()
	log = &captured{}
	o = mustOpen(t, dir, Options{Sinks: []string{"a"}, Logger: slog.New(log)})
	defer o.Close()
	if w := log.warnings(); len(w) != 0 {
		t.Fatalf("warnings after clean append: %q", w)
	}
	if got := seqsOf(readAll(t, o, "a")); !equalSeqs(got, seqRange(1, 4)) {
		t.Fatalf("read %v", got)
	}
}

func TestOutbox_CorruptRecordInTheMiddleIsSkipped(t *testing.T) {
	dir := t.TempDir()
	o := mustOpen(t, dir, Options{Sinks: []string{"a"}})
	mustAppend(t, o, mkEvents(nonFatal, 0, 5))
	third := o.segs[0].ents[2]
	o.Close()
	seg := onlySegment(t, dir)
	b, _ := os.ReadFile(seg)
	b[third.off+headerSize+10] ^= 0x55 // a flipped bit inside the JSON
	os.WriteFile(seg, b, 0o600)

	log := &captured{}
	o = mustOpen(t, dir, Options{Sinks: []string{"a"}, Logger: slog.New(log)})
	defer o.Close()
	w := log.warnings()
	if len(w) != 1 || !strings.Contains(w[0], seg) || !strings.Contains(w[0], fmt.Sprintf("offset %d", third.off)) {
		t.Fatalf("warnings = %q; want one naming the segment and offset %d", w, third.off)
	}
	if got := seqsOf(readAll(t, o, "a")); !equalSeqs(got, []uint64{1, 2, 4, 5}) {
		t.Fatalf("read %v; want 1 2 4 5", got)
	}
	if st := o.Stats(); st.Corrupt != 1 {
		t.Fatalf("corrupt = %d", st.Corrupt)
	}
	// The damage is not at the tail: nothing was cut, appends continue.
	if seqs := mustAppend(t, o, mkEvents(fatal, 5, 1)); seqs[0] != 6 {
		t.Fatalf("next seq = %d", seqs[0])
	}
}

func TestOutbox_DamageAfterOpenIsSkippedAtRead(t *testing.T) {
	dir := t.TempDir()
	log := &captured{}
	o := mustOpen(t, dir, Options{Sinks: []string{"a"}, Logger: slog.New(log)})
	defer o.Close()
	mustAppend(t, o, mkEvents(fatal, 0, 3))
	second := o.segs[0].ents[1]
	f, _ := os.OpenFile(onlySegment(t, dir), os.O_WRONLY, 0)
	f.WriteAt([]byte("XX"), second.off+headerSize+5)
	f.Close()
	if got := seqsOf(readAll(t, o, "a")); !equalSeqs(got, []uint64{1, 3}) {
		t.Fatalf("read %v", got)
	}
	if got := seqsOf(readAll(t, o, "a")); !equalSeqs(got, []uint64{1, 3}) {
		t.Fatalf("second read %v", got)
	}
	if w := log.warnings(); len(w) != 1 || !strings.Contains(w[0], fmt.Sprintf("offset %d", second.off)) {
		t.Fatalf("warnings = %q; want exactly one", w)
	}
}

func TestOutbox_DamagedCursorResendsRatherThanLoses(t *testing.T) {
	dir := t.TempDir()
	o := mustOpen(t, dir, Options{Sinks: []string{"a"}})
	mustAppend(t, o, mkEvents(fatal, 0, 3))
	o.Ack("a", 2)
	o.Close()
	os.WriteFile(filepath.Join(dir, "cursor.a"), []byte("garbage"), 0o600)
	log := &captured{}
	o = mustOpen(t, dir, Options{Sinks: []string{"a"}, Logger: slog.New(log)})
	defer o.Close()
	if got := seqsOf(readAll(t, o, "a")); !equalSeqs(got, seqRange(1, 3)) {
		t.Fatalf("read %v", got)
	}
	if w := log.warnings(); len(w) != 1 || !strings.Contains(w[0], "cursor.a") {
		t.Fatalf("warnings = %q", w)
	}
}

// TestOutbox_BoundFoldsSupersededKeepsLatestPerEntity: under the size
// bound, undelivered events that a newer event of the same check and
// entity supersedes are folded away, oldest first, whatever their
// severity; the newest event of every entity always survives, so the
// consumer's last word on each port is right (DESIGN.md section 3).
func TestOutbox_BoundFoldsSupersededKeepsLatestPerEntity(t *testing.T) {
	dir := t.TempDir()
	one, _ := appendRecord(nil, 1, &[]event.Event{mkEvent(nonFatal, 100)}[0])
	opts := Options{Sinks: []string{"connector"}, MaxBytes: int64(len(one)) * 40, SegmentBytes: int64(len(one)) * 8}
	o := mustOpen(t, dir, opts)
	var appended []event.Event
	latest := map[string]uint64{} // device -> seq of its newest event
	for i := 0; i < 200; i++ {
		s := nonFatal
		switch i % 10 {
		case 3:
			s = fatal
		case 7:
			s = healthy
		}
		ev := mkEvent(s, i)
		seqs := mustAppend(t, o, []event.Event{ev})
		latest[ev.Device()] = seqs[0]
		appended = append(appended, ev)
		if st := o.Stats(); st.Bytes > opts.MaxBytes && !st.OverBound {
			t.Fatalf("after %d appends: %d bytes > bound %d", i+1, st.Bytes, opts.MaxBytes)
		}
	}
	check := func(o *Outbox, folded bool) {
		t.Helper()
		got := readAll(t, o, "connector")
		present := map[uint64]bool{}
		for _, r := range got {
			present[r.Seq] = true
			if want := appended[r.Seq-1].ID; r.Event.ID != want {
				t.Fatalf("seq %d carries event %s; want %s", r.Seq, r.Event.ID, want)
			}
		}
		for dev, q := range latest {
			if !present[q] {
				t.Fatalf("%s: its newest event (seq %d) was removed", dev, q)
			}
		}
		if len(got) >= 200 {
			t.Fatalf("nothing was folded; the test did not reach the bound")
		}
		st := o.Stats()
		if folded && st.Folded != uint64(200-len(got)) {
			t.Fatalf("Folded = %d; %d events are missing", st.Folded, 200-len(got))
		}
		if st.Dropped != 0 {
			t.Fatalf("Dropped = %d", st.Dropped)
		}
	}
	check(o, true)
	o.Close()
	// Compaction is durable: the same picture after a restart.
	o = mustOpen(t, dir, opts)
	defer o.Close()
	check(o, false)
	// Keys of records indexed at Open are found when needed.
	for i := 200; i < 240; i++ {
		ev := mkEvent(nonFatal, i)
		seqs := mustAppend(t, o, []event.Event{ev})
		latest[ev.Device()] = seqs[0]
		appended = append(appended, ev)
	}
	if st := o.Stats(); st.Bytes > opts.MaxBytes || st.Folded == 0 {
		t.Fatalf("after restart: %+v", st)
	}
}

// TestOutbox_BoundNeverFoldsTheLatestWord: when every undelivered event is
// the only one of its check and entity, nothing is removed: the bound is
// exceeded with one warning naming the slow sink.
func TestOutbox_BoundNeverFoldsTheLatestWord(t *testing.T) {
	one, _ := appendRecord(nil, 1, &[]event.Event{mkEvent(fatal, 100)}[0])
	log := &captured{}
	opts := Options{Sinks: []string{"connector"}, MaxBytes: int64(len(one)) * 10, SegmentBytes: int64(len(one)) * 3, Logger: slog.New(log)}
	o := mustOpen(t, t.TempDir(), opts)
	defer o.Close()
	for i := 0; i < 30; i++ {
		s := fatal
		if i%2 == 1 {
			s = healthy
		}
		ev := mkEvent(s, i)
		// Thirty distinct ports: no event supersedes another.
		ev.EntitiesImpacted = []event.Entity{{Type: event.EntityNIC, Value: fmt.Sprintf("mlx5_%d", i)}, {Type: event.EntityNICPort, Value: "1"}}
		mustAppend(t, o, []event.Event{ev})
	}
	st := o.Stats()
	if st.Folded != 0 || st.Records != 30 || !st.OverBound || st.Bytes <= opts.MaxBytes {
		t.Fatalf("stats = %+v", st)
	}
	if got := readAll(t, o, "connector"); len(got) != 30 {
		t.Fatalf("read %d records; want all 30", len(got))
	}
	w := log.warnings()
	if len(w) != 1 || !strings.Contains(w[0], "connector") || !strings.Contains(w[0], "never dropped") {
		t.Fatalf("warnings = %q; want one naming the slow sink", w)
	}
}

func TestOutbox_BoundFreesDeliveredRecordsFirst(t *testing.T) {
	one, _ := appendRecord(nil, 1, &[]event.Event{mkEvent(nonFatal, 100)}[0])
	// One segment can hold everything, so nothing is deleted by acks
	// alone: only compaction makes room.
	opts := Options{Sinks: []string{"a", "b"}, MaxBytes: int64(len(one)) * 20, SegmentBytes: int64(len(one)) * 20}
	o := mustOpen(t, t.TempDir(), opts)
	defer o.Close()
	mustAppend(t, o, mkEvents(nonFatal, 0, 15))
	o.Ack("a", 15)
	o.Ack("b", 10)
	mustAppend(t, o, mkEvents(nonFatal, 15, 5))
	st := o.Stats()
	if st.Dropped != 0 {
		t.Fatalf("dropped %d undelivered events although delivered ones could make room: %+v", st.Dropped, st)
	}
	if got := seqsOf(readAll(t, o, "b")); !equalSeqs(got, seqRange(11, 20)) {
		t.Fatalf("b read %v", got)
	}
}

func TestOutbox_WaitWakesOnAppend(t *testing.T) {
	o := mustOpen(t, t.TempDir(), Options{Sinks: []string{"a"}})
	ch := o.Wait()
	select {
	case <-ch:
		t.Fatal("woken before any append")
	default:
	}
	mustAppend(t, o, mkEvents(fatal, 0, 1))
	<-ch // would hang (test timeout) if Append did not notify
	ch = o.Wait()
	o.Close()
	<-ch
	if _, err := o.Read("a", 1); err != ErrClosed {
		t.Fatalf("Read after Close = %v", err)
	}
	if _, err := o.Append(mkEvents(fatal, 0, 1)); err != ErrClosed {
		t.Fatalf("Append after Close = %v", err)
	}
}

func TestOutbox_RecentAndSince(t *testing.T) {
	dir := t.TempDir()
	o := mustOpen(t, dir, Options{Sinks: []string{"a"}, RecentSize: 5})
	evs := mkEvents(nonFatal, 0, 12)
	for i := 0; i < 12; i += 3 {
		mustAppend(t, o, evs[i:i+3])
	}
	if got := seqsOf(o.Recent(3)); !equalSeqs(got, []uint64{10, 11, 12}) {
		t.Fatalf("Recent(3) = %v", got)
	}
	if got := seqsOf(o.Recent(100)); !equalSeqs(got, seqRange(8, 12)) {
		t.Fatalf("Recent(100) = %v; want the 5 remembered", got)
	}
	if got := seqsOf(o.Since(9, 2)); !equalSeqs(got, []uint64{10, 11}) {
		t.Fatalf("Since(9,2) = %v", got)
	}
	if got := o.Since(12, 0); len(got) != 0 {
		t.Fatalf("Since(last) = %v", seqsOf(got))
	}
	o.Close()
	// After a restart the history is rebuilt from disk.
	o = mustOpen(t, dir, Options{Sinks: []string{"a"}, RecentSize: 5})
	defer o.Close()
	got := o.Recent(5)
	if !equalSeqs(seqsOf(got), seqRange(8, 12)) || got[4].Event.ID != evs[11].ID {
		t.Fatalf("Recent after restart = %v", seqsOf(got))
	}
}

func TestOutbox_SecondOpenIsRefused(t *testing.T) {
	dir := t.TempDir()
	o := mustOpen(t, dir, Options{})
	if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second Open = %v", err)
	}
	o.Close()
	o2 := mustOpen(t, dir, Options{})
	o2.Close()
}

func TestOutbox_OpenErrorNamesDirectory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	_, err := Open(filepath.Join(file, "outbox"), Options{})
	if err == nil || !strings.Contains(err.Error(), file) {
		t.Fatalf("Open under a file = %v", err)
	}
}

// TestOutbox_ConcurrentDrainers runs the daemon's shape: one appender, one
// drainer goroutine per sink; each sink sees every event once, in order.
func TestOutbox_ConcurrentDrainers(t *testing.T) {
	o := mustOpen(t, t.TempDir(), Options{Sinks: []string{"journal", "connector", "jsonl"}, SegmentBytes: 4096})
	defer o.Close()
	const total = 300
	var wg sync.WaitGroup
	results := map[string][]uint64{}
	var mu sync.Mutex
	for _, name := range []string{"journal", "connector", "jsonl"} {
		wg.Add(1)
		go func(name string) {
			defer wg.Done()
			var got []uint64
			for len(got) < total {
				ch := o.Wait()
				recs, err := o.Read(name, 7)
				if err != nil {
					t.Error(err)
					return
				}
				if len(recs) == 0 {
					<-ch
					continue
				}
				got = append(got, seqsOf(recs)...)
				if err := o.Ack(name, recs[len(recs)-1].Seq); err != nil {
					t.Error(err)
					return
				}
			}
			mu.Lock()
			results[name] = got
			mu.Unlock()
		}(name)
	}
	for i := 0; i < total; i += 5 {
		mustAppend(t, o, mkEvents(nonFatal, i, 5))
	}
	wg.Wait()
	for name, got := range results {
		if !equalSeqs(got, seqRange(1, total)) {
			t.Errorf("%s received %d records, not 1..%d in order", name, len(got), total)
		}
	}
	if st := o.Stats(); st.Segments != 1 {
		t.Errorf("segments after everything was delivered = %d; want 1", st.Segments)
	}
}
