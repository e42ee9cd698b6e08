package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/event"
)

// arrival is one event as an observer saw it, and when.
type arrival struct {
	ev event.Event
	at time.Time
}

// lineSplitter cuts a byte stream into complete lines; a line still being
// written stays pending until its newline arrives.
type lineSplitter struct{ pending []byte }

// feed appends b and returns the complete lines it finished, without
// their newlines. The returned slices are only valid until the next call.
func (s *lineSplitter) feed(b []byte) [][]byte {
	s.pending = append(s.pending, b...)
	var lines [][]byte
	for {
		i := bytes.IndexByte(s.pending, '\n')
		if i < 0 {
			break
		}
		lines = append(lines, s.pending[:i])
		s.pending = s.pending[i+1:]
	}
	if len(s.pending) == 0 {
		s.pending = s.pending[:0:0]
	}
	return lines
}

// decodeLines parses JSON-lines events; a line that is not an event (a
// torn write, garbage) is counted, not fatal.
func decodeLines(lines [][]byte, at time.Time, out []arrival) ([]arrival, int) {
	bad := 0
	for _, l := range lines {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		var ev event.Event
		if err := json.Unmarshal(l, &ev); err != nil {
			bad++
			continue
		}
		out = append(out, arrival{ev: ev, at: at})
	}
	return out, bad
}

// tailJSONL follows path from its start and sends every event with the
// time its line was read. inotify wakes it on each write; a 2 ms poll
// covers file systems without inotify. It returns when ctx ends.
func tailJSONL(ctx context.Context, path string, out chan<- arrival) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("tail %s: %w", path, err)
	}
	defer f.Close()
	var wake <-chan fsnotify.Event
	if w, err := fsnotify.NewWatcher(); err == nil {
		defer w.Close()
		if w.Add(path) == nil {
			wake = w.Events
		}
	}
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	var sp lineSplitter
	buf := make([]byte, 64<<10)
	var batch []arrival
	for {
		for {
			n, err := f.Read(buf)
			if n > 0 {
				batch, _ = decodeLines(sp.feed(buf[:n]), time.Now(), batch[:0])
				for _, a := range batch {
					select {
					case out <- a:
					case <-ctx.Done():
						return nil
					}
				}
			}
			if err == io.EOF || n == 0 {
				break
			}
			if err != nil {
				return fmt.Errorf("tail %s: %w", path, err)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		case <-tick.C:
		}
	}
}

// watchBus subscribes to the HealthEvent signal and sends every event with
// the time its signal arrived.
func watchBus(ctx context.Context, addr string, out chan<- arrival) (func(), error) {
	c, err := dbusapi.Dial(addr)
	if err != nil {
		return nil, err
	}
	recs, err := c.WatchEvents(ctx)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("subscribe to HealthEvent on %s: %w", addr, err)
	}
	go func() {
		for rec := range recs {
			at := time.Now()
			ev, err := rec.Event()
			if err != nil {
				continue
			}
			select {
			case out <- arrival{ev: ev, at: at}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() { c.Close() }, nil
}
