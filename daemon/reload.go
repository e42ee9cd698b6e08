package daemon

import (
	"fmt"
	"time"

	"github.com/nichealth/nichealthd/config"
	"github.com/nichealth/nichealthd/event"
)

// restartOnly refuses a reload that changes a key the running daemon
// cannot apply, naming the key, rather than appearing to apply it.
func restartOnly(old, cfg *config.Config) error {
	if cfg.DBusEnabled != old.DBusEnabled {
		return &config.Error{File: cfg.Path, Key: "dbus.enabled",
			Reason: fmt.Sprintf("changing it from %v to %v needs a restart (systemctl restart nichealthd); the running configuration stays", old.DBusEnabled, cfg.DBusEnabled)}
	}
	return nil
}

// RequestReload asks the loop to reload and waits for the outcome.
func (d *Daemon) RequestReload() error {
	reply := make(chan error, 1)
	d.reloadCh <- reply
	return <-reply
}

// loaded is a configuration read for a reload, off the poll loop, and
// the callers waiting for its outcome.
type loaded struct {
	cfg     *config.Config
	err     error
	replies []chan error
}

// beginReload asks for the configuration to be read again; reply (when
// not nil) receives the outcome. One read at a time: a request that comes
// while one is under way (a SIGHUP flood, a file on a hung filesystem) is
// served by one more read after it, never by a read of its own. Runs on
// the loop's goroutine, which owns the reload fields.
func (d *Daemon) beginReload(reply chan error) {
	if reply != nil {
		d.reloadQueued = append(d.reloadQueued, reply)
	}
	if d.reloading {
		d.reloadAgain = true
		return
	}
	d.startReloadRead()
}

// startReloadRead reads the configuration on a goroutine of its own, so
// that polling goes on while it is read (bounded by the loader's
// deadline), and hands the result to the loop, which applies it between
// cycles.
func (d *Daemon) startReloadRead() {
	d.reloading, d.reloadAgain = true, false
	replies := d.reloadQueued
	d.reloadQueued = nil
	d.nt.Reloading()
	ctx := d.runCtx
	go func() {
		cfg, err := loadConfigWith(&d.cfgLoader, d.opts.ConfigPath, d.opts.Overrides)
		select {
		case d.loadedCh <- loaded{cfg, err, replies}:
		case <-ctx.Done():
			for _, r := range replies {
				r <- fmt.Errorf("reload: the daemon is stopping")
			}
		}
	}()
}

// endReload applies a finished read, answers its callers, and starts the
// read that requests made meanwhile are waiting for.
func (d *Daemon) endReload(l loaded) {
	d.reloading = false
	err := d.applyReload(l.cfg, l.err)
	for _, r := range l.replies {
		r <- err
	}
	if d.reloadAgain || len(d.reloadQueued) > 0 {
		d.startReloadRead()
	}
}

// applyReload applies a loaded configuration between poll cycles, on the
// loop's goroutine. An invalid file is refused with one log line and the
// running configuration stays.
func (d *Daemon) applyReload(cfg *config.Config, err error) error {
	defer func() {
		d.mu.Lock()
		st := d.statusLocked()
		d.mu.Unlock()
		d.nt.Ready(st)
	}()
	if err == nil {
		d.mu.Lock()
		err = restartOnly(d.cfg, cfg)
		old := d.cfg.MetricsAddress
		d.mu.Unlock()
		// Before taking d.mu for the rest: stopping the old endpoint
		// waits for its in-flight scrapes.
		if err == nil && cfg.MetricsAddress != old {
			d.startMetrics(d.runCtx, cfg.MetricsAddress)
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		d.refuseReloadLocked(err)
		return err
	}
	unchanged := cfg.Digest == d.cfg.Digest
	specs := d.reconfigureLocked(cfg)
	d.cfg = cfg
	d.generation++
	// Off the loop: stopping a sink waits for its drainer, which may be
	// blocked in a write to a hung filesystem.
	d.sinks.Request(cfg)
	d.reloadErr = ""
	d.holdLocked(specs, time.Now())
	evs := d.commitLocked(true)
	d.publishSnapshotLocked()
	d.logApplied(cfg, unchanged)
	d.publish(evs)
	d.RetryRejected()
	return nil
}

// refuseReloadLocked keeps the running configuration and says why, in the
// log (repeats collapsed) and in LastReloadError.
func (d *Daemon) refuseReloadLocked(err error) {
	d.reloadErr = err.Error()
	if ok, n := d.reloadLogs.Note("refused "+err.Error(), time.Now()); ok {
		d.log.Error("configuration refused; the running configuration stays", "err", err, "repeats", n)
	}
	d.publishSnapshotLocked()
	d.publish(nil)
}

// reconfigureLocked applies cfg to the checks, the rules and the parts of
// the daemon that take it live, and returns the events that follow (a
// latch resolved by a removed counter, a rule switched off).
func (d *Daemon) reconfigureLocked(cfg *config.Config) []event.Spec {
	specs := d.run.Reconfigure(cfg, time.Now())
	d.syncMADLocked(cfg)
	d.ob.SetMaxBytes(cfg.OutboxMaxBytes)
	// /healthz and the watchdog judge a stall against the poll interval
	// in force, not the one the daemon started with.
	d.wd.SetStallAfter(5 * cfg.PollInterval)
	if cfg.AdminGroup != d.cfg.AdminGroup {
		if s, ok := d.currentBus().(interface{ SetAdminGroup(string) }); ok {
			s.SetAdminGroup(cfg.AdminGroup)
		}
		d.log.Info("D-Bus admin group changed", "from", d.cfg.AdminGroup, "to", cfg.AdminGroup)
	}
	return specs
}

// logApplied logs an applied configuration; a reload of the same file (a
// script calling Reload in a loop) is logged once per window with a count.
func (d *Daemon) logApplied(cfg *config.Config, unchanged bool) {
	if !unchanged {
		d.log.Info("configuration applied", "file", d.opts.ConfigPath, "generation", d.generation,
			"counters", d.run.Counters(), "poll_interval", cfg.PollInterval)
		return
	}
	if ok, n := d.reloadLogs.Note("unchanged", time.Now()); ok {
		d.log.Info("configuration applied (file unchanged)", "file", d.opts.ConfigPath, "generation", d.generation,
			"repeats", n)
	}
}
