package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/nichealth/nichealthd/checks/event"
)

// jsonlSink appends one JSON object per event to a file (or stdout). Each
// batch is one write, so a reader tailing the file sees whole lines.
type jsonlSink struct {
	path string
	w    io.Writer
	f    *os.File
	buf  []byte
}

func newJSONLSink(path string) (*jsonlSink, error) {
	if path == "-" {
		return &jsonlSink{path: path, w: os.Stdout}, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("open JSON-lines sink %s: %w (check [sinks.jsonl] path)", path, err)
	}
	return &jsonlSink{path: path, w: f, f: f}, nil
}

func (s *jsonlSink) Name() string { return "jsonl" }

func (s *jsonlSink) Send(_ context.Context, evs []event.Event) error {
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

func (s *jsonlSink) Close() error {
	if s.f != nil {
		return s.f.Close()
	}
	return nil
}
