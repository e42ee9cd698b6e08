package delivery

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/nichealth/nichealthd/daemon/sink"
	"github.com/nichealth/nichealthd/daemon/sink/connector"
	"github.com/nichealth/nichealthd/daemon/sink/connector/pb"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/persist/outbox"
)

// shedding is a PlatformConnector that refuses the calls shed says with
// ResourceExhausted, as a connector shedding load does, and records every
// event it accepts. Calls its gRPC server refuses as too large never reach
// it.
type shedding struct {
	pb.UnimplementedPlatformConnectorServer
	shed func(call int) bool

	mu       sync.Mutex
	calls    int
	accepted []string
}

func (c *shedding) HealthEventOccurredV1(_ context.Context, req *pb.HealthEvents) (*emptypb.Empty, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.shed(c.calls) {
		return nil, status.Error(codes.ResourceExhausted, "too many requests, try again later")
	}
	for _, e := range req.GetEvents() {
		c.accepted = append(c.accepted, e.GetId())
	}
	return &emptypb.Empty{}, nil
}

func (c *shedding) got() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.accepted)
}

// countingSink is the real connector sink with every call's size and
// outcome recorded, as the drainer sees them.
type countingSink struct {
	sink.Sink
	mu      sync.Mutex
	sizes   []int
	refused []bool
}

func (s *countingSink) Send(ctx context.Context, evs []event.Event) error {
	err := s.Sink.Send(ctx, evs)
	s.mu.Lock()
	s.sizes = append(s.sizes, len(evs))
	s.refused = append(s.refused, err != nil)
	s.mu.Unlock()
	return err
}

func (s *countingSink) calls() ([]int, []bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sizes), slices.Clone(s.refused)
}

// Issue 32 row 6: a connector shedding load (30% of calls answered
// ResourceExhausted) nearly stopped delivery: every retry restarted at
// 256 events, a partly delivered batch counted as a failure, the wait
// climbed to 30 s, and 692 of 1,000 events were still queued after 6.5
// minutes. Against a real gRPC server refusing 30% of calls in a fixed
// pattern (spread out, and in bursts of three), through the real
// connector sink: 1,000 events arrive once each, in order, in a few dozen
// calls, and the drainer's waits add up to seconds (counted, not slept,
// so the test does not depend on the machine's speed).
func TestBounded_6_LoadSheddingConnectorDrains(t *testing.T) {
	spread := func(n int) bool { return n%10 == 3 || n%10 == 6 || n%10 == 9 }
	for _, tc := range []struct {
		name string
		shed func(call int) bool
		// limit is the server's message size limit (0: gRPC's 4 MiB);
		// maxCalls bounds the calls of a drainer that keeps the batch
		// size that worked.
		limit, maxCalls int
	}{
		{"spread", spread, 0, 20},
		{"bursts", func(n int) bool { return n%10 == 1 || n%10 == 2 || n%10 == 3 }, 0, 20},
		// About 40 events fit a call: 25 batches at the size that
		// worked, plus the refusals (the old drainer split each batch
		// from 256 again: 4 refused calls per batch).
		{"size limit and spread", spread, 16 << 10, 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, err := os.MkdirTemp("", "nh-shed-") // sun_path is 108 bytes
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			sock := filepath.Join(dir, "c.sock")
			l, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			var opts []grpc.ServerOption
			if tc.limit > 0 {
				opts = append(opts, grpc.MaxRecvMsgSize(tc.limit))
			}
			srv := grpc.NewServer(opts...)
			c := &shedding{shed: tc.shed}
			pb.RegisterPlatformConnectorServer(srv, c)
			go srv.Serve(l)
			t.Cleanup(srv.Stop)

			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			ob, err := outbox.Open(filepath.Join(t.TempDir(), "outbox"), outbox.Options{Logger: log, Sinks: []string{"platform-connector"}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ob.Close() })
			var want []string
			for i := 0; i < 1000; i += 100 {
				var evs []event.Event
				for k := i; k < i+100; k++ {
					evs = append(evs, event.New(event.Spec{Kind: event.KindCounterBreach, CheckName: event.InfiniBandDegradationCheck,
						Message: fmt.Sprintf("Port mlx5_%d port 1: symbol_error above threshold (#%d)", k%8, k), ErrorCode: []string{"symbol_error"},
						Device: fmt.Sprintf("mlx5_%d", k%8), Port: 1}, event.Stamp{NodeName: "n", Now: time.Unix(1_800_000_000, int64(k))}))
					want = append(want, evs[len(evs)-1].ID)
				}
				if _, err := ob.Append(evs); err != nil {
					t.Fatal(err)
				}
			}
			cs, err := connector.New("unix://"+sock, connector.Options{NodeName: "n", Timeout: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close() })
			s := &countingSink{Sink: cs}
			d := New(ob, s, log, 0, nil)
			var waited time.Duration
			var waits int
			d.sleep = func(ctx context.Context, w time.Duration) bool {
				waited += w
				waits++
				return ctx.Err() == nil
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); d.Run(ctx) }()
			// Until the cursor has passed every event (a drainer that
			// does not get there ends at the test's timeout, or at 2,000
			// calls).
			for ob.Stats().Sinks["platform-connector"].Depth > 0 {
				if sizes, _ := s.calls(); len(sizes) > 2000 {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			cancel()
			<-done
			calls, refused := s.calls()
			acc := c.got()
			shed := 0
			for _, r := range refused {
				if r {
					shed++
				}
			}
			t.Logf("%d events in %d calls (%d refused), %d waits adding up to %v; call sizes %v",
				len(acc), len(calls), shed, waits, waited.Round(time.Millisecond), calls)
			if !slices.Equal(acc, want) {
				t.Fatalf("the connector accepted %d events, want the 1000 once each in outbox order", len(acc))
			}
			if len(calls) > tc.maxCalls {
				t.Fatalf("%d calls for 1000 events, want at most %d: the batch size that worked was not kept", len(calls), tc.maxCalls)
			}
			// Once a batch went through, the next batch is no larger
			// than twice the size that worked (the drainer grows back
			// by doublings, never straight to 256).
			worked := 0
			for i, n := range calls {
				if worked > 0 && n > 2*worked {
					t.Fatalf("call %d carried %d events after a batch of %d went through: %v", i+1, n, worked, calls)
				}
				if !refused[i] {
					worked = n
				}
			}
			if waited > 10*time.Second {
				t.Fatalf("the drainer waited %v in all for a connector that takes 70%% of calls", waited)
			}
		})
	}
}
