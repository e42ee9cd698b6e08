package daemon

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nichealth/nichealthd/config"
	"github.com/nichealth/nichealthd/daemon/delivery"
	"github.com/nichealth/nichealthd/daemon/sink"
	"github.com/nichealth/nichealthd/daemon/sink/connector"
	"github.com/nichealth/nichealthd/daemon/sink/jsonl"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/internal/backoff"
	"github.com/nichealth/nichealthd/systemd/journal"
)

// buildSinksFor opens every configured destination. The journal is used
// only where journald listens (run by systemd); elsewhere the daemon's own
// log on stderr already carries each event.
//
// At start-up (lenient false) a destination that cannot be opened is an
// error that stops the daemon with a message saying what to fix. On a
// reload it must not take the other sinks down with it: it becomes a
// pendingSink that the drainer retries with backoff, and its events wait
// in the outbox until it opens.
func (d *Daemon) buildSinksFor(cfg *config.Config, lenient bool) ([]sink.Sink, error) {
	var out []sink.Sink
	if cfg.JSONLPath != "" {
		path := cfg.JSONLPath
		s, err := jsonl.New(path, d.log)
		switch {
		case err == nil:
			out = append(out, s)
		case lenient:
			d.log.Error("JSON-lines sink cannot open its file; its events stay queued and opening is retried with backoff", "err", err)
			out = append(out, &pendingSink{name: jsonl.Name, open: func() (sink.Sink, error) {
				s, err := jsonl.New(path, d.log)
				if err != nil {
					return nil, err // not a nil *jsonl.Sink in a non-nil Sink
				}
				return s, nil
			}})
		default:
			return nil, err
		}
	}
	if cfg.JournalEnabled {
		s, err := journal.New(d.log)
		if err != nil {
			d.log.Info("journal sink off: journald is not reachable here", "err", err)
		} else {
			out = append(out, s)
		}
	}
	if cfg.ConnectorSocket != "" {
		s, err := connector.New(cfg.ConnectorSocket, connector.Options{
			NodeName: cfg.NodeName, Logger: d.log, Timeout: cfg.ConnectorTimeout,
		})
		if err != nil {
			return nil, fmt.Errorf("platform connector %s: %w", cfg.ConnectorSocket, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// pendingSink is a destination that could not be opened yet: every Send
// tries to open it, and fails (transiently, so the drainer backs off)
// until it does.
type pendingSink struct {
	name string
	open func() (sink.Sink, error)

	mu sync.Mutex // Send on the drainer, Reopen on the reload path
	s  sink.Sink
}

func (p *pendingSink) Name() string { return p.name }

func (p *pendingSink) Send(ctx context.Context, evs []event.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.s == nil {
		s, err := p.open()
		if err != nil {
			return err
		}
		p.s = s
	}
	return p.s.Send(ctx, evs)
}

// Reopen passes SIGHUP on to the opened sink.
func (p *pendingSink) Reopen() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r, ok := p.s.(reopener); ok {
		return r.Reopen()
	}
	return nil
}

func (p *pendingSink) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.s != nil {
		return p.s.Close()
	}
	return nil
}

// reopener is a sink that reopens its file on SIGHUP and reload, for
// logrotate.
type reopener interface{ Reopen() error }

// reopenSinks asks every running sink that writes a file to reopen it.
func (d *Daemon) reopenSinks() {
	d.sinkMu.Lock()
	set := d.sinks
	d.sinkMu.Unlock()
	if set == nil {
		return
	}
	for _, s := range set.sinks {
		if r, ok := s.(reopener); ok {
			if err := r.Reopen(); err != nil {
				d.log.Warn("cannot reopen the sink's file; retried before its next write", "sink", s.Name(), "err", err)
			}
		}
	}
}

// sinkWant is a configuration the sinks should be brought to.
type sinkWant struct{ cfg *config.Config }

// sinkStopTimeout bounds how long shutdown waits for a sink to stop.
const sinkStopTimeout = 3 * time.Second

// requestSinks asks the sink goroutine to bring the sinks to cfg:
// restarted when a [sinks.*] key changed (or none runs), reopened
// otherwise (logrotate's SIGHUP). It never waits: stopping a sink waits
// for its drainer, which may be blocked in a write to a hung filesystem,
// and the poll loop must not. Requests made while one is being served
// are folded into the latest.
func (d *Daemon) requestSinks(cfg *config.Config) {
	d.sinkWant.Store(&sinkWant{cfg: cfg})
	select {
	case d.sinkReq <- struct{}{}:
	default:
	}
}

// sinkWorker serves requestSinks, one at a time, until ctx is done. A
// configuration whose sinks cannot start is retried with backoff until
// they do or a newer one replaces it; meanwhile events wait in the
// outbox.
func (d *Daemon) sinkWorker(ctx context.Context) {
	ep := backoff.Episode{Min: delivery.BackoffMin, Max: delivery.BackoffMax}
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.sinkReq:
		}
		for {
			w := d.sinkWant.Load()
			if w == nil {
				break
			}
			err := d.applySinks(ctx, w.cfg)
			if err == nil {
				if n, lasted := ep.Recovered(); n > 0 {
					d.log.Info("sinks started", "attempts", n, "lasted", lasted)
				}
				break
			}
			first, wait := ep.Fail()
			if first {
				d.log.Error("cannot start the reconfigured sinks; events stay queued in the outbox and starting is retried with backoff", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-d.sinkReq: // a newer configuration
			case <-time.After(wait):
			}
		}
	}
}

// applySinks restarts or reopens the sinks for cfg.
func (d *Daemon) applySinks(ctx context.Context, cfg *config.Config) error {
	d.sinkMu.Lock()
	// A sink stopped by a panic is restarted by any reload (guard.go).
	changed := d.sinks == nil || sinkKey(cfg) != d.sinks.key || d.anySinkFailed()
	d.sinkMu.Unlock()
	if !changed {
		d.reopenSinks()
		return nil
	}
	d.stopSinks()
	if err := d.startSinks(ctx, cfg, true); err != nil {
		return err
	}
	d.mu.Lock()
	d.sinksRestartedLocked(d.sinkNames(), "a reload restarted the sink")
	d.mu.Unlock()
	d.log.Info("sinks reconfigured", "jsonl", cfg.JSONLPath, "connector", cfg.ConnectorSocket)
	// The usual fix for a rejection is a configuration change: the new
	// sinks offer their parked events again.
	d.RetryRejected()
	return nil
}

// stopSinksWithin stops the sinks, giving up after timeout: a drainer
// blocked in the kernel (a write to a hung filesystem) must not keep the
// daemon from exiting. What it had not delivered stays in the outbox.
func (d *Daemon) stopSinksWithin(timeout time.Duration) {
	done := make(chan struct{})
	go func() { defer close(done); d.stopSinks() }()
	select {
	case <-done:
	case <-time.After(timeout):
		d.log.Error("a sink did not stop in time (a write blocked in the kernel?); stopping without it, its undelivered events stay in the outbox",
			"timeout", timeout)
	}
}

// RetryRejected asks every running sink to offer its parked (rejected as
// invalid) events again, and returns how many are parked. Reload does it
// too: the usual fix for a rejection is a configuration change.
func (d *Daemon) RetryRejected() int {
	n := d.ob.Rejected()
	for _, dr := range d.drainerList() {
		dr.RequestRetry()
	}
	return n
}

// sinkSet is the running sinks and their drainers; a reload that changes
// a [sinks.*] key replaces it whole.
type sinkSet struct {
	sinks    []sink.Sink
	drainers []*delivery.Drainer
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	key      string
}

func sinkKey(c *config.Config) string {
	return fmt.Sprintf("%v|%s|%s|%v|%v|%s", c.JournalEnabled, c.JSONLPath, c.ConnectorSocket, c.ConnectorBatch, c.ConnectorTimeout, c.NodeName)
}

// startSinks opens the configured sinks and starts one drainer each. The
// outbox keeps each sink's cursor by name, so a restarted sink resumes
// where it stopped.
func (d *Daemon) startSinks(parent context.Context, cfg *config.Config, lenient bool) error {
	sinks, err := d.buildSinksFor(cfg, lenient)
	if err != nil {
		return err
	}
	sinks = append(sinks, d.opts.ExtraSinks...)
	names := make([]string, len(sinks))
	for i, s := range sinks {
		names[i] = s.Name()
	}
	if err := d.ob.SetSinks(names); err != nil {
		for _, s := range sinks {
			s.Close()
		}
		return err
	}
	ctx, cancel := context.WithCancel(parent)
	set := &sinkSet{sinks: sinks, cancel: cancel, key: sinkKey(cfg)}
	for _, s := range sinks {
		batch := time.Duration(0)
		if _, ok := s.(*connector.Sink); ok {
			batch = cfg.ConnectorBatch
		}
		dr := delivery.New(d.ob, s, d.log, batch, d.sinkPanicked)
		set.drainers = append(set.drainers, dr)
		set.wg.Add(1)
		go func() { defer set.wg.Done(); dr.Run(ctx) }()
	}
	d.sinkMu.Lock()
	d.sinks = set
	d.sinkMu.Unlock()
	return nil
}

func (d *Daemon) stopSinks() {
	d.sinkMu.Lock()
	set := d.sinks
	d.sinks = nil
	d.sinkMu.Unlock()
	if set == nil {
		return
	}
	set.cancel()
	set.wg.Wait()
	for _, s := range set.sinks {
		s.Close()
	}
}

func (d *Daemon) drainerList() []*delivery.Drainer {
	d.sinkMu.Lock()
	defer d.sinkMu.Unlock()
	if d.sinks == nil {
		return nil
	}
	return d.sinks.drainers
}

// pending is the number of events the running sinks have not delivered,
// from the outbox's published statistics: a cursor save hung in the
// kernel holds the outbox's lock, and a stop must not wait on it.
func (d *Daemon) pending() int {
	n := 0
	st := d.ob.Stats()
	for _, dr := range d.drainerList() {
		n += st.Sinks[dr.Sink().Name()].Depth
	}
	return n
}

// sinkNames are the running sinks' names.
func (d *Daemon) sinkNames() []string {
	var out []string
	for _, dr := range d.drainerList() {
		out = append(out, dr.Sink().Name())
	}
	return out
}
