package jsonl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"syscall"

	"github.com/nichealth/nichealthd/event"
)

// Name is the sink's name in logs, metrics and its outbox cursor file.
const Name = "jsonl"

// Sink appends one JSON object per event to a file (or stdout). Each batch
// is one write, so a reader tailing the file sees whole lines.
type Sink struct {
	path string
	log  *slog.Logger

	mu  sync.Mutex // Send runs on the drainer, Reopen on the reload path
	w   io.Writer
	f   *os.File
	dev uint64
	ino uint64
	buf []byte
	// torn: a write was cut short (a full disk) and what it left could
	// not be cut yet; the file is cut back to tornAt before the next
	// write.
	torn   bool
	tornAt int64
}

// New opens path for appending ("-" is stdout). A path that is a
// directory, or that cannot be created, is an error naming the key to fix.
// log (nil: silent) hears of a torn last line removed at open.
func New(path string, log *slog.Logger) (*Sink, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if path == "-" {
		return &Sink{path: path, log: log, w: os.Stdout}, nil
	}
	s := &Sink{path: path, log: log}
	if err := s.open(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Sink) open() error {
	// Read-write, not write-only: a torn last line is found and cut.
	f, err := os.OpenFile(s.path, os.O_RDWR|os.O_APPEND|os.O_CREATE|syscall.O_NONBLOCK, 0o640)
	if err != nil {
		return fmt.Errorf("open JSON-lines sink %s: %w (check [sinks.jsonl] path)", s.path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("stat JSON-lines sink %s: %w", s.path, err)
	}
	if !fi.Mode().IsRegular() {
		// A FIFO or device would block or swallow events; stdout is "-".
		f.Close()
		return fmt.Errorf("JSON-lines sink %s is not a regular file (%s): set [sinks.jsonl] path to a file, or \"-\" for stdout", s.path, fi.Mode().Type())
	}
	if cut, err := cutTornLine(f, fi.Size()); err != nil {
		f.Close()
		return fmt.Errorf("JSON-lines sink %s: %w", s.path, err)
	} else if cut > 0 {
		s.log.Warn("JSON-lines sink ended in a partial line (the daemon was killed while writing it); the partial line was removed and its events are sent again from the outbox",
			"path", s.path, "bytes_removed", cut)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if s.f != nil {
		s.f.Close()
	}
	if s.torn && (uint64(st.Dev) != s.dev || st.Ino != s.ino) {
		s.torn = false // another file: the cut batch was in the old one
	}
	s.f, s.w, s.dev, s.ino = f, f, uint64(st.Dev), st.Ino
	return nil
}

// moved reports whether the path no longer names the open file (moved
// away, deleted, replaced).
func (s *Sink) moved() bool {
	var st syscall.Stat_t
	if err := syscall.Stat(s.path, &st); err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	return uint64(st.Dev) != s.dev || st.Ino != s.ino
}

// Name implements sink.Sink.
func (s *Sink) Name() string { return Name }

// Send writes evs as one batch of lines. A file moved or deleted since the
// last batch is reopened at the path first, so nothing goes to a deleted
// inode and counts as sent.
func (s *Sink) Send(_ context.Context, evs []event.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil && s.moved() {
		if err := s.open(); err != nil {
			return err
		}
	}
	if s.torn {
		if err := s.cutTorn(); err != nil {
			return err
		}
	}
	s.buf = s.buf[:0]
	for i := range evs {
		b, err := json.Marshal(&evs[i])
		if err != nil {
			return fmt.Errorf("encode event %s: %w", evs[i].ID, err)
		}
		s.buf = append(append(s.buf, b...), '\n')
	}
	var before int64 = -1
	if s.f != nil {
		if fi, err := s.f.Stat(); err == nil {
			before = fi.Size()
		}
	}
	if n, err := s.w.Write(s.buf); err != nil {
		if n > 0 && s.f != nil {
			// A full disk takes the first pages of a batch and refuses
			// the rest: the file now ends in part of a line, and the
			// retried batch would be glued to it (and its whole lines
			// written twice). The batch was not delivered, so all of it
			// is cut (now, or before the next write if the disk refuses
			// even that).
			s.torn, s.tornAt = true, before
			s.cutTorn()
		}
		return fmt.Errorf("write %s: %w", s.path, err)
	}
	return nil
}

// cutTorn removes what a short write left: back to the size before it,
// or, when that is unknown, the partial last line.
func (s *Sink) cutTorn() error {
	fi, err := s.f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s to cut a partial batch: %w", s.path, err)
	}
	var cut int64
	if s.tornAt >= 0 && fi.Size() >= s.tornAt {
		if err := s.f.Truncate(s.tornAt); err != nil {
			return fmt.Errorf("JSON-lines sink %s: cut a partial batch: %w", s.path, err)
		}
		cut = fi.Size() - s.tornAt
	} else if cut, err = cutTornLine(s.f, fi.Size()); err != nil {
		return fmt.Errorf("JSON-lines sink %s: %w", s.path, err)
	}
	s.torn = false
	if cut > 0 {
		s.log.Warn("JSON-lines sink: a write was cut short (disk full?); what it wrote was removed and its events are sent again from the outbox",
			"path", s.path, "bytes_removed", cut)
	}
	return nil
}

// Reopen closes and reopens the file at the path (SIGHUP, reload), as
// rsyslog does, whatever the inode check says.
func (s *Sink) Reopen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	return s.open()
}

// Close implements sink.Sink.
func (s *Sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		return s.f.Close()
	}
	return nil
}

// maxLine bounds the search for the last newline: an event is a few
// kilobytes; a tail longer than this without one is not ours to cut.
const maxLine = 1 << 20

// cutTornLine truncates the file after its last newline when it does not
// end in one, and returns how many bytes it removed. A batch is one
// write(2), but the kernel stops a write to a regular file between pages
// when the writer gets SIGKILL: the file is left with the first bytes of
// a line, and the next line appended would be glued to them, making both
// unparseable. The events of that batch were not confirmed, so the outbox
// sends them again; the fragment carries nothing that is lost. A tail
// longer than maxLine without a newline is not a torn batch of ours: it
// gets a newline instead, so our lines at least start clean.
func cutTornLine(f *os.File, size int64) (int64, error) {
	if size == 0 {
		return 0, nil
	}
	var last [1]byte
	if _, err := f.ReadAt(last[:], size-1); err != nil {
		return 0, fmt.Errorf("read its last byte: %w", err)
	}
	if last[0] == '\n' {
		return 0, nil
	}
	buf := make([]byte, 64<<10)
	for end := size; end > 0 && size-end < maxLine; {
		start := max(end-int64(len(buf)), 0)
		chunk := buf[:end-start]
		if _, err := f.ReadAt(chunk, start); err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("read its tail: %w", err)
		}
		for i := len(chunk) - 1; i >= 0; i-- {
			if chunk[i] == '\n' {
				keep := start + int64(i) + 1
				if err := f.Truncate(keep); err != nil {
					return 0, fmt.Errorf("cut the partial last line: %w", err)
				}
				return size - keep, nil
			}
		}
		if start == 0 {
			if err := f.Truncate(0); err != nil {
				return 0, fmt.Errorf("cut the partial last line: %w", err)
			}
			return size, nil
		}
		end = start
	}
	if _, err := f.Write([]byte{'\n'}); err != nil {
		return 0, fmt.Errorf("end its last line: %w", err)
	}
	return 0, nil
}
