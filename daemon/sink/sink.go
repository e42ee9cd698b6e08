package sink

import (
	"context"
	"errors"
	"fmt"

	"github.com/nichealth/nichealthd/event"
)

// Sink delivers events to one destination. The daemon's outbox drainer
// calls Send from a single goroutine per sink, in outbox order, and retries
// with backoff on any error that is not Permanent; so Send need not be
// safe for concurrent use, and must not buffer events it has acknowledged
// (returning nil means "delivered").
type Sink interface {
	// Name identifies the sink in logs, metrics and the outbox cursor file.
	Name() string
	// Send delivers a batch (one or more events). Outcomes:
	//   nil                 - every event was delivered;
	//   Permanent(err)      - the destination rejected the batch as invalid
	//                         (e.g. gRPC InvalidArgument): the drainer offers
	//                         each event alone and parks the ones rejected
	//                         again (dead letters, retried on operator
	//                         request), never acknowledging them silently;
	//   TooLarge(err)       - the batch is larger than the destination
	//                         takes at once (gRPC ResourceExhausted): the
	//                         drainer sends it in halves, in order; a
	//                         single event too large is Permanent too;
	//   any other error     - transient (socket missing, Unavailable): keep
	//                         the events and retry later.
	Send(ctx context.Context, events []event.Event) error
	// Close releases connections. Send is not called after Close.
	Close() error
}

// PermanentError marks a rejection that retrying cannot fix.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return fmt.Sprintf("permanent: %v", e.Err) }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent wraps err so that IsPermanent reports true.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

// IsPermanent reports whether err (or anything it wraps) is Permanent.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p)
}

// TooLargeError marks a batch the destination refused for its size.
type TooLargeError struct{ Err error }

func (e *TooLargeError) Error() string { return fmt.Sprintf("too large: %v", e.Err) }
func (e *TooLargeError) Unwrap() error { return e.Err }

// TooLarge wraps err so that IsTooLarge reports true.
func TooLarge(err error) error {
	if err == nil {
		return nil
	}
	return &TooLargeError{Err: err}
}

// IsTooLarge reports whether err (or anything it wraps) is TooLarge.
func IsTooLarge(err error) bool {
	var t *TooLargeError
	return errors.As(err, &t)
}
