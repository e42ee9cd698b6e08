package sinkset

import (
	"context"
	"time"

	"github.com/nichealth/nichealthd/config"
	"github.com/nichealth/nichealthd/daemon/delivery"
	"github.com/nichealth/nichealthd/internal/backoff"
)

// Request asks Run to bring the sinks to cfg: restarted when a [sinks.*]
// key changed (or none runs), reopened otherwise (logrotate's SIGHUP). It
// never waits: stopping a sink waits for its drainer, which may be
// blocked in a write to a hung filesystem, and the poll loop must not.
// Requests made while one is being served are folded into the latest.
func (s *Set) Request(cfg *config.Config) {
	s.want.Store(cfg)
	select {
	case s.req <- struct{}{}:
	default:
	}
}

// Run serves Request, one at a time, until ctx is done. A configuration
// whose sinks cannot start is retried with backoff until they do or a
// newer one replaces it; meanwhile events wait in the outbox.
func (s *Set) Run(ctx context.Context) {
	log := s.opts.Log
	ep := backoff.Episode{Min: delivery.BackoffMin, Max: delivery.BackoffMax}
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.req:
		}
		for {
			cfg := s.want.Load()
			if cfg == nil {
				break
			}
			err := s.apply(ctx, cfg)
			if err == nil {
				if n, lasted := ep.Recovered(); n > 0 {
					log.Info("sinks started", "attempts", n, "lasted", lasted)
				}
				break
			}
			first, wait := ep.Fail()
			if first {
				log.Error("cannot start the reconfigured sinks; events stay queued in the outbox and starting is retried with backoff", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-s.req: // a newer configuration
			case <-time.After(wait):
			}
		}
	}
}

// apply restarts or reopens the sinks for cfg.
func (s *Set) apply(ctx context.Context, cfg *config.Config) error {
	s.mu.Lock()
	// A sink stopped by a panic is restarted by any reload.
	changed := s.cur == nil || sinkKey(cfg) != s.cur.key || s.opts.Failed()
	s.mu.Unlock()
	if !changed {
		s.reopen()
		return nil
	}
	s.stop()
	if err := s.start(ctx, cfg, true); err != nil {
		return err
	}
	s.opts.Restarted(s.Names())
	s.opts.Log.Info("sinks reconfigured", "jsonl", cfg.JSONLPath, "connector", cfg.ConnectorSocket)
	// The usual fix for a rejection is a configuration change: the new
	// sinks offer their parked events again.
	s.RetryRejected()
	return nil
}
