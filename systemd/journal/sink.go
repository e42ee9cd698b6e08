package journal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	sdjournal "github.com/coreos/go-systemd/v22/journal"

	"github.com/nichealth/nichealthd/event"
)

// SocketPath is where journald listens for native-protocol datagrams. The
// writer library has it fixed; it is named here for error messages.
const SocketPath = "/run/systemd/journal/socket"

// ErrNoJournal is returned by New when journald is not reachable.
var ErrNoJournal = errors.New("journal socket " + SocketPath + " is not available")

type sendFunc func(message string, priority sdjournal.Priority, fields map[string]string) error

// Sink writes one journal entry per event; it implements daemon/sink.Sink.
type Sink struct {
	logger *slog.Logger
	send   sendFunc
	// delivered holds IDs of events of a batch that failed part-way: the
	// drainer retries the whole batch, and these are not written twice.
	delivered map[string]struct{}
}

// New returns a journal sink, or an error wrapping ErrNoJournal when
// journald's socket is absent or refuses connections. The journal is a sink
// like any other: configured when wanted, and its absence at start is a
// configuration error (a box without journald, a container) reported once
// with the fix, rather than an outbox that fills with undeliverable events.
// Once running, a write failure (journald restarting) is transient.
func New(logger *slog.Logger) (*Sink, error) {
	if !sdjournal.Enabled() {
		return nil, fmt.Errorf("%w: journald is not running on this host; start systemd-journald, or set enabled = false under [sinks.journal] in the config", ErrNoJournal)
	}
	return newSink(logger, sdjournal.Send), nil
}

func newSink(logger *slog.Logger, send sendFunc) *Sink {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Sink{logger: logger, send: send, delivered: map[string]struct{}{}}
}

// Name implements sink.Sink.
func (s *Sink) Name() string { return "journal" }

// Send writes each event as one entry, in order. Outcomes (sink.Sink):
//
//	nil   - every event is in the journal;
//	error - transient: the socket write failed (journald restarting, socket
//	        gone) or ctx ended; events written before the failure are
//	        remembered by ID and skipped when the drainer retries the batch.
//
// The journal has no way to reject an entry for good, so Send never returns
// a Permanent error; an event too large for a datagram goes through a
// memfd, as the native protocol allows.
func (s *Sink) Send(ctx context.Context, events []event.Event) error {
	for i := range events {
		e := &events[i]
		if _, done := s.delivered[e.ID]; done && e.ID != "" {
			continue
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("journal: %d of %d events not written: %w", len(events)-i, len(events), err)
		}
		if err := s.send(e.Message, Priority(*e), Fields(*e)); err != nil {
			return fmt.Errorf("journal: write event %s (%s) to %s: %w", e.ID, e.Kind, SocketPath, err)
		}
		if e.ID != "" {
			s.delivered[e.ID] = struct{}{}
		}
	}
	clear(s.delivered)
	return nil
}

// Close implements sink.Sink. The writer's socket is shared by the process
// and needs no closing.
func (s *Sink) Close() error { return nil }
