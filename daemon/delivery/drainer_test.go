package delivery

import (
	"context"
	"errors"
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
