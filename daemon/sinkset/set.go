package sinkset

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nichealth/nichealthd/config"
	"github.com/nichealth/nichealthd/daemon/delivery"
	"github.com/nichealth/nichealthd/daemon/sink"
	"github.com/nichealth/nichealthd/daemon/sink/connector"
	"github.com/nichealth/nichealthd/persist/outbox"
)

// StopTimeout bounds how long shutdown waits for a sink to stop.
const StopTimeout = 3 * time.Second

// Options is what the set needs from the daemon.
type Options struct {
	Outbox *outbox.Outbox
	Log    *slog.Logger
	// Extra are sinks added to the configured ones.
	Extra []sink.Sink
	// Panicked hears of a panic that stopped a sink's delivery
	// (delivery.New).
	Panicked func(sink string, p *delivery.Panic)
	// Failed reports whether a sink is stopped by a panic: any reload
	// restarts the set then.
	Failed func() bool
	// Restarted hears the names of the sinks a reload started.
	Restarted func(running []string)
}

// Set is the daemon's sinks: the running ones and the configuration they
// should be brought to. Its methods are safe for concurrent use.
type Set struct {
	opts Options

	mu  sync.Mutex
	cur *running
	// want is the configuration the sinks should run with; req wakes the
	// goroutine that brings them there (Run).
	want atomic.Pointer[config.Config]
	req  chan struct{}
}

// New is a set with no sink running yet.
func New(opts Options) *Set {
	return &Set{opts: opts, req: make(chan struct{}, 1)}
}

// running is the running sinks and their drainers; a reload that changes
// a [sinks.*] key replaces it whole.
type running struct {
	sinks    []sink.Sink
	drainers []*delivery.Drainer
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	key      string
}

func sinkKey(c *config.Config) string {
	return fmt.Sprintf("%v|%s|%s|%v|%v|%s", c.JournalEnabled, c.JSONLPath, c.ConnectorSocket, c.ConnectorBatch, c.ConnectorTimeout, c.NodeName)
}

// Start opens the configured sinks and starts one drainer each; a
// destination that cannot be opened is an error saying what to fix. The
// outbox keeps each sink's cursor by name, so a restarted sink resumes
// where it stopped.
func (s *Set) Start(parent context.Context, cfg *config.Config) error {
	return s.start(parent, cfg, false)
}

func (s *Set) start(parent context.Context, cfg *config.Config, lenient bool) error {
	sinks, err := s.open(cfg, lenient)
	if err != nil {
		return err
	}
	sinks = append(sinks, s.opts.Extra...)
	names := make([]string, len(sinks))
	for i, sk := range sinks {
		names[i] = sk.Name()
	}
	if err := s.opts.Outbox.SetSinks(names); err != nil {
		for _, sk := range sinks {
			sk.Close()
		}
		return err
	}
	ctx, cancel := context.WithCancel(parent)
	set := &running{sinks: sinks, cancel: cancel, key: sinkKey(cfg)}
	for _, sk := range sinks {
		batch := time.Duration(0)
		if _, ok := sk.(*connector.Sink); ok {
			batch = cfg.ConnectorBatch
		}
		dr := delivery.New(s.opts.Outbox, sk, s.opts.Log, batch, s.opts.Panicked)
		set.drainers = append(set.drainers, dr)
		set.wg.Add(1)
		go func() { defer set.wg.Done(); dr.Run(ctx) }()
	}
	s.mu.Lock()
	s.cur = set
	s.mu.Unlock()
	return nil
}

func (s *Set) stop() {
	s.mu.Lock()
	set := s.cur
	s.cur = nil
	s.mu.Unlock()
	if set == nil {
		return
	}
	set.cancel()
	set.wg.Wait()
	for _, sk := range set.sinks {
		sk.Close()
	}
}

// StopWithin stops the sinks, giving up after timeout: a drainer blocked
// in the kernel (a write to a hung filesystem) must not keep the daemon
// from exiting. What it had not delivered stays in the outbox.
func (s *Set) StopWithin(timeout time.Duration) {
	done := make(chan struct{})
	go func() { defer close(done); s.stop() }()
	select {
	case <-done:
	case <-time.After(timeout):
		s.opts.Log.Error("a sink did not stop in time (a write blocked in the kernel?); stopping without it, its undelivered events stay in the outbox",
			"timeout", timeout)
	}
}

// Drainers are the running sinks' drainers.
func (s *Set) Drainers() []*delivery.Drainer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return nil
	}
	return s.cur.drainers
}

// Pending is the number of events the running sinks have not delivered,
// from the outbox's published statistics: a cursor save hung in the
// kernel holds the outbox's lock, and a stop must not wait on it.
func (s *Set) Pending() int {
	n := 0
	st := s.opts.Outbox.Stats()
	for _, dr := range s.Drainers() {
		n += st.Sinks[dr.Sink().Name()].Depth
	}
	return n
}

// Names are the running sinks' names.
func (s *Set) Names() []string {
	var out []string
	for _, dr := range s.Drainers() {
		out = append(out, dr.Sink().Name())
	}
	return out
}

// RetryRejected asks every running sink to offer its parked (rejected as
// invalid) events again, and returns how many are parked.
func (s *Set) RetryRejected() int {
	n := s.opts.Outbox.Rejected()
	for _, dr := range s.Drainers() {
		dr.RequestRetry()
	}
	return n
}
