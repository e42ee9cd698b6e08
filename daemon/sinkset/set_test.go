package sinkset

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/config"
	"github.com/nichealth/nichealthd/daemon/delivery"
	"github.com/nichealth/nichealthd/daemon/sink"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/persist/outbox"
)

type nopSink struct{ name string }

func (s nopSink) Name() string                              { return s.name }
func (s nopSink) Send(context.Context, []event.Event) error { return nil }
func (s nopSink) Close() error                              { return nil }

func newSet(t *testing.T, restarted *atomic.Int32) *Set {
	t.Helper()
	ob, err := outbox.Open(filepath.Join(t.TempDir(), "outbox"), outbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ob.Close() })
	return New(Options{Outbox: ob, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Extra:     []sink.Sink{nopSink{"extra"}},
		Panicked:  func(string, *delivery.Panic) {},
		Failed:    func() bool { return false },
		Restarted: func([]string) { restarted.Add(1) }})
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// At start-up a destination that cannot open stops the daemon with its
// path; on a reload it waits as a pending sink beside the others, which
// keep delivering.
func TestSet_UnopenableFileFailsStartButNotAReload(t *testing.T) {
	var restarted atomic.Int32
	s := newSet(t, &restarted)
	missing := filepath.Join(t.TempDir(), "no-such-dir", "events.jsonl")
	cfg := &config.Config{JSONLPath: missing}
	if err := s.Start(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "no-such-dir") {
		t.Fatalf("Start with an unopenable JSON-lines file: err %v, want one naming its path", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	s.Request(cfg)
	waitFor(t, "the reload's sinks", func() bool { return restarted.Load() == 1 })
	if got := s.Names(); !slices.Equal(got, []string{"jsonl", "extra"}) {
		t.Fatalf("sinks after the reload %v, want [jsonl extra]", got)
	}
	// A changed [sinks.*] key restarts the set, and the file, now
	// openable, is opened.
	if err := os.MkdirAll(filepath.Dir(missing), 0o755); err != nil {
		t.Fatal(err)
	}
	s.Request(&config.Config{JSONLPath: missing, NodeName: "other"})
	waitFor(t, "the restart a changed key asks for", func() bool { return restarted.Load() == 2 })
	if _, err := os.Stat(missing); err != nil {
		t.Fatalf("the JSON-lines file after the restart: %v", err)
	}
	s.StopWithin(StopTimeout)
	if got := s.Names(); got != nil {
		t.Fatalf("sinks after the stop %v, want none", got)
	}
	cancel()
	<-done
}
