package journal

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	sdjournal "github.com/coreos/go-systemd/v22/journal"

	"github.com/nichealth/nichealthd/daemon/sink"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/internal/component"
)

var _ sink.Sink = (*Sink)(nil)

type entry struct {
	msg    string
	prio   sdjournal.Priority
	fields map[string]string
}

// recorder stands in for the journal socket; failAt makes the n-th write
// (0-based, counting all writes) fail once.
type recorder struct {
	entries []entry
	writes  int
	failAt  map[int]error
}

func (r *recorder) send(msg string, prio sdjournal.Priority, fields map[string]string) error {
	n := r.writes
	r.writes++
	if err, ok := r.failAt[n]; ok {
		return err
	}
	r.entries = append(r.entries, entry{msg, prio, fields})
	return nil
}

func TestJournal_3_OneEntryPerEvent(t *testing.T) {
	rec := &recorder{}
	s := newSink(nil, rec.send)
	if s.Name() != "journal" {
		t.Errorf("Name() = %q", s.Name())
	}
	batch := []event.Event{portFatal(), counterBreach("mlx5_1", false, "symbol_error")}
	if err := s.Send(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	if len(rec.entries) != 2 {
		t.Fatalf("%d entries, want 2", len(rec.entries))
	}
	for i, e := range batch {
		got := rec.entries[i]
		if got.msg != e.Message || got.prio != Priority(e) || got.fields[FieldEventID] != e.ID {
			t.Errorf("entry %d = %q prio %d id %s; want %q prio %d id %s", i, got.msg, got.prio, got.fields[FieldEventID], e.Message, Priority(e), e.ID)
		}
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
}

// The drainer retries a failed batch whole (daemon/sink contract); events
// the journal already took are not written a second time.
func TestJournal_3_RetryAfterPartialFailureWritesNoDuplicates(t *testing.T) {
	rec := &recorder{failAt: map[int]error{1: syscall.ECONNREFUSED}}
	s := newSink(nil, rec.send)
	batch := []event.Event{portFatal(), counterBreach("mlx5_0", true, "link_downed"), counterBreach("mlx5_1", false, "symbol_error")}
	err := s.Send(context.Background(), batch)
	if err == nil || sink.IsPermanent(err) {
		t.Fatalf("Send with a refused write = %v, want a transient error", err)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), SocketPath) || !strings.Contains(err.Error(), batch[1].ID) {
		t.Errorf("error %q should wrap the cause and name the socket and the event", err)
	}
	if err := s.Send(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range rec.entries {
		ids = append(ids, e.fields[FieldEventID])
	}
	want := []string{batch[0].ID, batch[1].ID, batch[2].ID}
	if strings.Join(ids, ",") != strings.Join(want, ",") {
		t.Errorf("journal got %v, want each event once in order %v", ids, want)
	}
	// What was remembered of the failed batch is dropped once it is through.
	if len(s.delivered) != 0 {
		t.Errorf("%d delivered IDs kept after a full success", len(s.delivered))
	}
}

func TestJournal_3_CancelledContextIsTransient(t *testing.T) {
	rec := &recorder{}
	s := newSink(nil, rec.send)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Send(ctx, []event.Event{portFatal()})
	if !errors.Is(err, context.Canceled) || sink.IsPermanent(err) {
		t.Fatalf("Send on a cancelled context = %v", err)
	}
	if len(rec.entries) != 0 {
		t.Error("an entry was written after cancellation")
	}
}

// hideJournalEnv tells the re-executed test binary that it runs in a
// private mount namespace where it may hide the host's journald.
const hideJournalEnv = "NICHEALTH_JOURNAL_HIDDEN"

func TestJournal_3_NewWithoutJournaldSaysSo(t *testing.T) {
	if _, err := os.Stat(SocketPath); err == nil {
		if os.Getenv(hideJournalEnv) == "" {
			runWithJournalHidden(t)
			return
		}
		// A tmpfs over the socket's directory, in this process's own mount
		// namespace only: the host's journald is untouched.
		if err := syscall.Mount("tmpfs", filepath.Dir(SocketPath), "tmpfs", 0, "size=16k"); err != nil {
			t.Fatalf("hide %s in the private mount namespace: %v", SocketPath, err)
		}
	}
	s, err := New(nil)
	if err == nil || s != nil {
		t.Fatalf("New without journald = %v, %v; want ErrNoJournal", s, err)
	}
	if !errors.Is(err, ErrNoJournal) || !strings.Contains(err.Error(), "systemd-journald") {
		t.Errorf("error %q should wrap ErrNoJournal and say how to fix it", err)
	}
}

// runWithJournalHidden runs TestJournal_3_NewWithoutJournaldSaysSo again
// in a child with a private mount namespace, where the running journald's
// socket can be hidden: a host with journald must still check the case of
// a host without it.
func runWithJournalHidden(t *testing.T) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestJournal_3_NewWithoutJournaldSaysSo$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), hideJournalEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		component.Missing(t, "journald runs here (%s exists) and hiding it in a private mount namespace needs root or CAP_SYS_ADMIN: %v", SocketPath, err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("with journald hidden: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "--- PASS: TestJournal_3_NewWithoutJournaldSaysSo") {
		t.Fatalf("with journald hidden, the test did not pass:\n%s", out.String())
	}
}
