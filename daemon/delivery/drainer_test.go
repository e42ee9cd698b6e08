package delivery

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/daemon/sink"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/internal/backoff"
	"github.com/nichealth/nichealthd/persist/outbox"
)

// rejectingSink refuses, as invalid, any batch holding one of the bad
// event IDs, and delivers every other batch.
type rejectingSink struct {
	mu        sync.Mutex
	bad       map[string]bool
	delivered []string
}

func (s *rejectingSink) Name() string { return "rejecting" }
func (s *rejectingSink) Close() error { return nil }
func (s *rejectingSink) Send(_ context.Context, evs []event.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range evs {
		if s.bad[e.ID] {
			return sink.Permanent(errors.New("InvalidArgument: rejected by the destination"))
		}
	}
	for _, e := range evs {
		s.delivered = append(s.delivered, e.ID)
	}
	return nil
}

func (s *rejectingSink) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.delivered)
}

// A batch the destination rejects as invalid is taken apart: every event it
// accepts alone is delivered, in order, and only the one it rejects again
// is parked as a dead letter, never acknowledged silently. One deliver call,
// no backoff, so a broken isolation fails in well under a second.
func TestDrainer_InvalidArgumentIsolatesAndParksOnlyTheBadEvent(t *testing.T) {
	ob, err := outbox.Open(filepath.Join(t.TempDir(), "outbox"), outbox.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ob.Close() })
	s := &rejectingSink{bad: map[string]bool{}}
	if err := ob.SetSinks([]string{s.Name()}); err != nil {
		t.Fatal(err)
	}
	var evs []event.Event
	var ids []string
	for i := 0; i < 5; i++ {
		e := event.New(event.Spec{Kind: event.KindPortFatal, CheckName: event.InfiniBandStateCheck, IsFatal: true,
			Device: "mlx5_0", Port: 1, Message: "down"}, event.Stamp{NodeName: "n", Now: time.Unix(1_800_000_000, int64(i))})
		evs = append(evs, e)
		ids = append(ids, e.ID)
	}
	s.bad[ids[2]] = true
	if _, err := ob.Append(evs); err != nil {
		t.Fatal(err)
	}
	d := New(ob, s, slog.New(slog.NewTextHandler(io.Discard, nil)), 0, nil)
	recs, err := ob.Read(s.Name(), drainBatch)
	if err != nil || len(recs) != 5 {
		t.Fatalf("read %d records: %v", len(recs), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ep := backoff.Episode{Min: BackoffMin, Max: BackoffMax}
	if !d.deliver(ctx, recs, &ep) {
		t.Fatal("deliver gave up")
	}
	want := []string{ids[0], ids[1], ids[3], ids[4]}
	if got := s.got(); !slices.Equal(got, want) {
		t.Fatalf("delivered %v, want every event but the rejected one, in order: %v", got, want)
	}
	parked := ob.Parked(s.Name())
	if len(parked) != 1 || parked[0].Event.ID != ids[2] {
		t.Fatalf("parked %+v, want exactly the rejected event %s", parked, ids[2])
	}
	if left, err := ob.Read(s.Name(), drainBatch); err != nil || len(left) != 0 {
		t.Fatalf("%d records still pending after isolation: %v", len(left), err)
	}
}

// limitedSink takes at most two events a call (TooLarge above), and is
// unavailable (a transient failure) for any batch holding the bad event.
type limitedSink struct {
	mu        sync.Mutex
	bad       string
	delivered []string
}

func (s *limitedSink) Name() string { return "limited" }
func (s *limitedSink) Close() error { return nil }
func (s *limitedSink) Send(_ context.Context, evs []event.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(evs) > 2 {
		return sink.TooLarge(errors.New("ResourceExhausted: message larger than max"))
	}
	for _, e := range evs {
		if e.ID == s.bad {
			return errors.New("Unavailable: connection refused")
		}
	}
	for _, e := range evs {
		s.delivered = append(s.delivered, e.ID)
	}
	return nil
}

// DESIGN.md section 3, "a connector outage delays events, never drops
// them": a batch split because the sink found it too large, and then
// failing part-way, acknowledges exactly the events the sink took.
// Whichever event the failure hits, delivered + pending = all, the
// delivered ones are the leading ones, and the pending ones are the rest
// in order (a split that acknowledged the half it did not deliver lost
// those events without any end-to-end test noticing). A split that
// delivered some is progress: the backoff of an outage that went before
// starts again from its shortest wait.
func TestDrainer_FailedSplitAcknowledgesOnlyWhatWasDelivered(t *testing.T) {
	const total = 8
	for bad := 0; bad < total; bad++ {
		t.Run(fmt.Sprintf("event %d fails", bad), func(t *testing.T) {
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			ob, err := outbox.Open(filepath.Join(t.TempDir(), "outbox"), outbox.Options{Logger: log})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ob.Close() })
			var evs []event.Event
			var ids []string
			for i := 0; i < total; i++ {
				e := event.New(event.Spec{Kind: event.KindPortFatal, CheckName: event.InfiniBandStateCheck, IsFatal: true,
					Device: fmt.Sprintf("mlx5_%d", i), Port: 1, Message: "down"}, event.Stamp{NodeName: "n", Now: time.Unix(1_800_000_000, int64(i))})
				evs = append(evs, e)
				ids = append(ids, e.ID)
			}
			s := &limitedSink{bad: ids[bad]}
			if err := ob.SetSinks([]string{s.Name()}); err != nil {
				t.Fatal(err)
			}
			if _, err := ob.Append(evs); err != nil {
				t.Fatal(err)
			}
			d := New(ob, s, log, 0, nil)
			var waits []time.Duration
			d.sleep = func(ctx context.Context, w time.Duration) bool { waits = append(waits, w); return true }
			recs, err := ob.Read(s.Name(), drainBatch)
			if err != nil || len(recs) != total {
				t.Fatalf("read %d records: %v", len(recs), err)
			}
			// An outage went before: five failed attempts.
			ep := backoff.Episode{Min: BackoffMin, Max: BackoffMax}
			for i := 0; i < 5; i++ {
				ep.Fail()
			}
			if !d.deliver(context.Background(), recs, &ep) {
				t.Fatal("deliver gave up")
			}
			pending, err := ob.Read(s.Name(), drainBatch)
			if err != nil {
				t.Fatal(err)
			}
			var left []string
			for _, r := range pending {
				left = append(left, r.Event.ID)
			}
			got := s.delivered
			if len(got)+len(left) != total || !slices.Equal(got, ids[:len(got)]) || !slices.Equal(left, ids[len(got):]) {
				t.Fatalf("delivered %d, pending %d of %d: an event was acknowledged without being delivered, or lost", len(got), len(left), total)
			}
			if want := bad / 2 * 2; len(got) != want {
				t.Fatalf("delivered %d events, want the %d before the failing pair", len(got), want)
			}
			if len(got) > 0 && (ep.Fails() != 1 || len(waits) != 1 || waits[0] >= BackoffMin*3/2) {
				t.Fatalf("after delivering %d events the backoff is at failure %d, waiting %v: progress counted as a failure", len(got), ep.Fails(), waits)
			}
		})
	}
}
