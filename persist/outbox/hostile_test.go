package outbox

import (
	"errors"
	"os"
	"path/filepath"
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
