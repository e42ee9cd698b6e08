package notify

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// WatchdogOptions tune a ProgressWatchdog.
type WatchdogOptions struct {
	// StallAfter is how long without Progress makes Stalled report true
	// (for /healthz and D-Bus). Zero means the full watchdog timeout
	// (WATCHDOG_USEC) when the watchdog is on; with the watchdog off and
	// StallAfter zero, Stalled never reports true. The daemon should pass
	// a few poll intervals.
	StallAfter time.Duration
	// Logger receives "withholding watchdog ping" and send failures.
	Logger *slog.Logger
}

// ProgressWatchdog turns poll-loop progress into watchdog pings. A ping that
// a timer sends regardless of the loop would keep a wedged daemon alive
// forever (DESIGN.md section 4: a wedged loop must lead to a watchdog
// restart), so a ping is sent only if Progress was called since the
// previous ping. Consequence for configuration: the poll interval plus the
// worst poll duration must stay below WatchdogInterval (half of
// WatchdogSec=), or healthy loops miss pings.
type ProgressWatchdog struct {
	n          *Notifier
	logger     *slog.Logger
	interval   time.Duration
	stallAfter time.Duration
	now        func() time.Time

	mu       sync.Mutex
	started  time.Time
	last     time.Time // last Progress; zero before the first
	pending  bool      // Progress since the last ping
	withheld bool      // the current stall was already logged
	lastErr  string    // last send error, logged once

	// afterTick, when set by tests, observes every tick Run makes, so they
	// can count ticks instead of sleeping.
	afterTick func(sent bool)
}

// NewProgressWatchdog binds a watchdog gate to n. The stall clock starts
// now: a loop that never completes its first cycle counts as stalled too.
func NewProgressWatchdog(n *Notifier, opts WatchdogOptions) *ProgressWatchdog {
	logger := opts.Logger
	if logger == nil {
		logger = n.logger
	}
	stall := opts.StallAfter
	if stall <= 0 {
		stall = n.WatchdogTimeout()
	}
	w := &ProgressWatchdog{
		n: n, logger: logger, interval: n.WatchdogInterval(), stallAfter: stall, now: time.Now,
	}
	w.started = w.now()
	return w
}

// SetStallAfter changes the stall threshold (a reload changed the poll
// interval); <= 0 keeps the current one.
func (w *ProgressWatchdog) SetStallAfter(d time.Duration) {
	if d <= 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stallAfter = d
}

// StallAfter is the current stall threshold.
func (w *ProgressWatchdog) StallAfter() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stallAfter
}

// Progress records that the poll loop completed a cycle. Call it after
// every completed cycle, never from a timer.
func (w *ProgressWatchdog) Progress() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last = w.now()
	w.pending = true
	if w.withheld {
		w.logger.Info("poll loop progressing again; resuming watchdog pings")
		w.withheld = false
	}
}

// Tick is one step of Run, exported so the daemon's tests can drive the
// gate without a clock. It returns:
//
//	(false, nil) - no Progress since the last ping: ping withheld (or the
//	               watchdog is off, or no service manager listens);
//	(false, err) - progress was made but the ping could not be sent; the
//	               progress stays pending and the next Tick retries;
//	(true, nil)  - WATCHDOG=1 sent.
func (w *ProgressWatchdog) Tick() (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.pending {
		if !w.withheld && w.interval > 0 {
			w.logger.Warn("poll loop made no progress since the last watchdog ping; withholding it so systemd restarts the daemon if it stays stuck",
				"lastProgress", w.last, "watchdogInterval", w.interval)
			w.withheld = true
		}
		return false, nil
	}
	if !w.n.Enabled() {
		w.pending = false
		return false, nil
	}
	if err := w.n.Watchdog(); err != nil {
		if err.Error() != w.lastErr {
			w.logger.Warn("watchdog ping failed", "err", err)
			w.lastErr = err.Error()
		}
		return false, err
	}
	w.lastErr = ""
	w.pending = false
	return true, nil
}

// Run calls Tick every WatchdogInterval until ctx is done. It returns nil at
// once when the watchdog is disabled (no WATCHDOG_USEC, or it names another
// pid), and ctx.Err() when cancelled; send failures are logged, not
// returned, because the pings are retried at the next interval.
func (w *ProgressWatchdog) Run(ctx context.Context) error {
	if w.interval <= 0 {
		return nil
	}
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			sent, _ := w.Tick()
			if w.afterTick != nil {
				w.afterTick(sent)
			}
		}
	}
}

// Interval is the ping period (WatchdogInterval of the Notifier).
func (w *ProgressWatchdog) Interval() time.Duration { return w.interval }

// LastProgress is the time of the last Progress call, zero before the first.
func (w *ProgressWatchdog) LastProgress() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// Stalled reports whether the loop has made no progress for StallAfter
// (counted from construction before the first Progress). It is always
// false when no stall threshold is known (see WatchdogOptions.StallAfter).
func (w *ProgressWatchdog) Stalled() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stallAfter <= 0 {
		return false
	}
	since := w.last
	if since.IsZero() {
		since = w.started
	}
	return w.now().Sub(since) > w.stallAfter
}
