package jsonl

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/internal/component"
)

func ev(i int) event.Event {
	return event.New(event.Spec{Kind: event.KindPortFatal, CheckName: event.InfiniBandStateCheck, IsFatal: true,
		Message: "Port mlx5_3 port 1: state DOWN, phys_state Disabled", Device: "mlx5_3", Port: 1},
		event.Stamp{NodeName: "gpu-node-7", Now: time.Date(2025, 6, 15, 10, 30, i, 0, time.UTC)})
}

func lines(t *testing.T, path string) []event.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []event.Event
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e event.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

func send(t *testing.T, s *Sink, i int) event.Event {
	t.Helper()
	e := ev(i)
	if err := s.Send(context.Background(), []event.Event{e}); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestJSONL_ReopensAfterRotation: logrotate moves the file away (and
// later deletes it); the next batch goes to a new file at the path, not to
// the moved or deleted inode.
func TestJSONL_ReopensAfterRotation(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "events.jsonl")
	s, err := New(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e1 := send(t, s, 1)
	if err := os.Rename(p, p+".1"); err != nil {
		t.Fatal(err)
	}
	e2 := send(t, s, 2)
	if got := lines(t, p+".1"); len(got) != 1 || got[0].ID != e1.ID {
		t.Fatalf("rotated file holds %d events", len(got))
	}
	if got := lines(t, p); len(got) != 1 || got[0].ID != e2.ID {
		t.Fatalf("new file holds %d events, want the one sent after the move", len(got))
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	e3 := send(t, s, 3)
	if got := lines(t, p); len(got) != 1 || got[0].ID != e3.ID {
		t.Fatalf("after delete the path holds %d events", len(got))
	}
	// Reopen (SIGHUP) keeps appending to the same path.
	if err := s.Reopen(); err != nil {
		t.Fatal(err)
	}
	send(t, s, 4)
	if got := lines(t, p); len(got) != 2 {
		t.Fatalf("after Reopen the path holds %d events, want 2", len(got))
	}
}

// TestJSONL_RefusesDirectoryAndFIFO: neither blocks nor swallows events.
func TestJSONL_RefusesDirectoryAndFIFO(t *testing.T) {
	dir := t.TempDir()
	if _, err := New(dir, nil); err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("directory: %v", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := New(fifo, nil); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), fifo) {
			t.Fatalf("FIFO: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("opening a FIFO without a reader blocked")
	}
}

// TestJSONL_TornLastLineIsCutAtOpen: a daemon killed while writing a batch
// leaves the first bytes of a line (the kernel stops a write between
// pages on SIGKILL). Opening the sink cuts them, so the next line is not
// glued to them, and says how much it removed; whole files, empty files
// and a file that is only a fragment are handled.
func TestJSONL_TornLastLineIsCutAtOpen(t *testing.T) {
	whole := `{"id":"a"}` + "\n" + `{"id":"b"}` + "\n"
	for _, tc := range []struct {
		name, before, want string
		cut                bool
	}{
		{"whole lines stay", whole, whole, false},
		{"empty file", "", "", false},
		{"torn last line", whole + `{"id":"c`, whole, true},
		{"only a fragment", `{"id":"b`, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "events.jsonl")
			if err := os.WriteFile(p, []byte(tc.before), 0o640); err != nil {
				t.Fatal(err)
			}
			var logged strings.Builder
			s, err := New(p, slog.New(slog.NewTextHandler(&logged, nil)))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.Send(context.Background(), []event.Event{{ID: "d"}}); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(p)
			want := tc.want + `{"id":"d"`
			if !strings.HasPrefix(string(got), want) || strings.Count(string(got), "\n") != strings.Count(tc.want, "\n")+1 {
				t.Fatalf("file after open and one event:\n%q\nwant it to start %q", got, want)
			}
			for _, line := range strings.Split(strings.TrimSuffix(string(got), "\n"), "\n") {
				if !json.Valid([]byte(line)) {
					t.Fatalf("line %q is not JSON", line)
				}
			}
			if tc.cut != strings.Contains(logged.String(), "partial line") {
				t.Fatalf("log %q (cut %v)", logged.String(), tc.cut)
			}
		})
	}
}

// Issue 22 row 4: on a full disk a batch's write is cut short, leaving
// part of a line, and the retried batch was glued to it (1 of 114 lines
// unparseable after the disk freed). The partial line is cut at once, so
// every line of the file parses and each event is there once.
func TestBounded_4_ShortWriteLeavesNoTornLine(t *testing.T) {
	if os.Geteuid() != 0 {
		component.Missing(t, "mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir).CombinedOutput(); err != nil {
		component.Missing(t, "mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	p := filepath.Join(dir, "events.jsonl")
	s, err := New(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Fill all but about one page, so that a batch of several pages is
	// written in part.
	fill, err := os.Create(filepath.Join(dir, "fill"))
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := fill.Write(make([]byte, 4096)); err != nil {
			break
		}
	}
	fill.Close()
	if err := os.Truncate(filepath.Join(dir, "fill"), mustSize(t, filepath.Join(dir, "fill"))-3*4096); err != nil {
		t.Fatal(err)
	}
	var batch []event.Event
	for i := 0; i < 60; i++ {
		batch = append(batch, ev(i))
	}
	short := false
	for try := 0; try < 5; try++ {
		if err := s.Send(context.Background(), batch); err != nil {
			short = true
			break
		}
	}
	if !short {
		t.Fatal("the disk never refused a write: the test tested nothing")
	}
	if b, _ := os.ReadFile(p); len(b) > 0 && b[len(b)-1] != '\n' {
		t.Fatalf("the file ends in a partial line after the short write (%d bytes)", len(b))
	}
	os.Remove(filepath.Join(dir, "fill"))
	if err := s.Send(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	got := lines(t, p) // fails on an unparseable line
	seen := map[string]int{}
	for _, e := range got {
		seen[e.ID]++
	}
	// Each successful Send wrote the batch once; the failed one nothing.
	for _, e := range batch {
		if seen[e.ID] != seen[batch[0].ID] {
			t.Fatalf("event %s written %d times, the first %d times: a failed batch left lines behind", e.ID, seen[e.ID], seen[batch[0].ID])
		}
	}
}

func mustSize(t *testing.T, p string) int64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
