package jsonl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"

	"github.com/nichealth/nichealthd/checks/event"
)

// Name is the sink's name in logs, metrics and its outbox cursor file.
const Name = "jsonl"

// Sink appends one JSON object per event to a file (or stdout). Each batch
// is one write, so a reader tailing the file sees whole lines.
type Sink struct {
	path string

	mu  sync.Mutex // Send runs on the drainer, Reopen on the reload path
	w   io.Writer
	f   *os.File
	dev uint64
	ino uint64
	buf []byte
}

// New opens path for appending ("-" is stdout). A path that is a
// directory, or that cannot be created, is an error naming the key to fix.
func New(path string) (*Sink, error) {
	if path == "-" {
		return &Sink{path: path, w: os.Stdout}, nil
	}
	s := &Sink{path: path}
	if err := s.open(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Sink) open() error {
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NONBLOCK, 0o640)
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
	st := fi.Sys().(*syscall.Stat_t)
	if s.f != nil {
		s.f.Close()
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
	s.buf = s.buf[:0]
	for i := range evs {
		b, err := json.Marshal(&evs[i])
		if err != nil {
			return fmt.Errorf("encode event %s: %w", evs[i].ID, err)
		}
		s.buf = append(append(s.buf, b...), '\n')
	}
	if _, err := s.w.Write(s.buf); err != nil {
		return fmt.Errorf("write %s: %w", s.path, err)
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
