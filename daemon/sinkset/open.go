package sinkset

import (
	"context"
	"fmt"
	"sync"

	"github.com/nichealth/nichealthd/config"
	"github.com/nichealth/nichealthd/daemon/sink"
	"github.com/nichealth/nichealthd/daemon/sink/connector"
	"github.com/nichealth/nichealthd/daemon/sink/jsonl"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/systemd/journal"
)

// open opens every configured destination. The journal is used only
// where journald listens (run by systemd); elsewhere the daemon's own log
// on stderr already carries each event.
//
// At start-up (lenient false) a destination that cannot be opened is an
// error that stops the daemon with a message saying what to fix. On a
// reload it must not take the other sinks down with it: it becomes a
// pendingSink that the drainer retries with backoff, and its events wait
// in the outbox until it opens.
func (s *Set) open(cfg *config.Config, lenient bool) ([]sink.Sink, error) {
	log := s.opts.Log
	var out []sink.Sink
	if cfg.JSONLPath != "" {
		path := cfg.JSONLPath
		s, err := jsonl.New(path, log)
		switch {
		case err == nil:
			out = append(out, s)
		case lenient:
			log.Error("JSON-lines sink cannot open its file; its events stay queued and opening is retried with backoff", "err", err)
			out = append(out, &pendingSink{name: jsonl.Name, open: func() (sink.Sink, error) {
				s, err := jsonl.New(path, log)
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
		s, err := journal.New(log)
		if err != nil {
			log.Info("journal sink off: journald is not reachable here", "err", err)
		} else {
			out = append(out, s)
		}
	}
	if cfg.ConnectorSocket != "" {
		s, err := connector.New(cfg.ConnectorSocket, connector.Options{
			NodeName: cfg.NodeName, Logger: log, Timeout: cfg.ConnectorTimeout,
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

// reopen asks every running sink that writes a file to reopen it.
func (s *Set) reopen() {
	s.mu.Lock()
	set := s.cur
	s.mu.Unlock()
	if set == nil {
		return
	}
	for _, sk := range set.sinks {
		if r, ok := sk.(reopener); ok {
			if err := r.Reopen(); err != nil {
				s.opts.Log.Warn("cannot reopen the sink's file; retried before its next write", "sink", sk.Name(), "err", err)
			}
		}
	}
}
