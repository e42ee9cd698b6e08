package daemon

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/checks/runner"
	"github.com/nichealth/nichealthd/config"
	"github.com/nichealth/nichealthd/daemon/metrics"
	"github.com/nichealth/nichealthd/daemon/sinkset"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/internal/repeats"
	"github.com/nichealth/nichealthd/internal/version"
	"github.com/nichealth/nichealthd/persist"
	"github.com/nichealth/nichealthd/persist/outbox"
	"github.com/nichealth/nichealthd/systemd/notify"
)

// Daemon is a running nichealthd.
type Daemon struct {
	opts  Options
	log   *slog.Logger
	store *persist.Store
	// st is the state file's envelope: each check's memory is stored into
	// it just before a save.
	st *persist.State
	ob *outbox.Outbox
	nt *notify.Notifier
	wd *notify.ProgressWatchdog

	mu         sync.Mutex // guards everything below and the checks
	cfg        *config.Config
	run        *runner.Runner
	bootID     string
	generation uint64
	reloadErr  string
	lastPoll   time.Time
	pollDur    time.Duration
	ready      bool
	saveErr    string
	// model is the health verdict (checks/health), fed with every durable
	// event; snap is its latest published snapshot, read by every view
	// without d.mu, and lastPollNano the end of the last poll (liveness,
	// not verdict, so it does not rebuild the snapshot).
	model        *health.Model
	modelDirty   bool
	snap         atomic.Pointer[health.Snapshot]
	lastPollNano atomic.Int64
	statusSent   string
	boot         persist.BootStatus
	saveFails    int
	// reloadLogs collapses repeated reload outcomes in the log.
	reloadLogs repeats.Limiter
	// held are events the checks emitted that the outbox has not taken
	// yet (daemon/commit.go); heldCount is their number for /metrics,
	// which reads it without d.mu.
	held      heldEvents
	heldCount atomic.Int64

	metrics    *metrics.Metrics
	metricsSrv *metricsServer // owned by the Run goroutine

	// sinks are the event destinations and their drainers (package
	// sinkset), brought to each reload's configuration off the loop.
	sinks    *sinkset.Set
	runCtx   context.Context
	bus      atomic.Pointer[busHolder]
	busDone  chan struct{}
	reloadCh chan chan error
	loadedCh chan loaded
	// The reload in progress, owned by the loop's goroutine: reloading
	// while a read is under way, reloadAgain when another was asked for
	// meanwhile, reloadQueued the callers waiting for that one.
	reloading    bool
	reloadAgain  bool
	reloadQueued []chan error
	cfgLoader    config.Loader
	// sinkFail carries sinks stopped by a panic to the poll loop (guard.go).
	sinkFail sinkFailures
	// mad are the far end's and the fabric share's readers (mad.go).
	mad madReaders
}

type busHolder struct{ b busPublisher }

func (d *Daemon) currentBus() busPublisher {
	if h := d.bus.Load(); h != nil {
		return h.b
	}
	return nil
}

// busPublisher is what the D-Bus side needs from the daemon's loop.
type busPublisher interface {
	// RefreshLater and Post must not block: the poll loop calls them.
	RefreshLater()
	Post(ev event.Event, seq uint64)
	Close() error
}

// Run polls until ctx is done or SIGTERM/SIGINT arrives.
func (d *Daemon) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d.runCtx = ctx
	d.nt = notify.New(d.log)
	d.wd = notify.NewProgressWatchdog(d.nt, notify.WatchdogOptions{StallAfter: 5 * d.cfg.PollInterval, Logger: d.log})

	if err := d.sinks.Start(ctx, d.cfg); err != nil {
		return err
	}
	sinksDone := make(chan struct{})
	go func() { defer close(sinksDone); d.sinks.Run(ctx) }()
	d.mu.Lock()
	d.sinksRestartedLocked(d.sinks.Names(), "the daemon restarted and the sink runs again")
	d.mu.Unlock()
	d.startMetrics(ctx, d.cfg.MetricsAddress)
	d.mu.Lock()
	d.run.StartKernelLog(time.Now())
	d.syncMADLocked(d.cfg)
	d.run.StartLinkStory()
	d.mu.Unlock()
	d.busDone = make(chan struct{})
	if d.cfg.DBusEnabled {
		go d.superviseBus(ctx)
	} else {
		close(d.busDone)
	}
	sigs := d.signals()
	defer signal.Stop(sigs)
	stopWatch := d.watchConfig(ctx)
	defer stopWatch()
	go d.watchdogLoop(ctx)

	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return d.shutdown(cancel, sinksDone)
		case s := <-sigs:
			if s == syscall.SIGHUP {
				d.beginReload(nil)
				continue
			}
			d.log.Info("stopping", "signal", s.String())
			return d.shutdown(cancel, sinksDone)
		case reply := <-d.reloadCh:
			d.beginReload(reply)
		case l := <-d.loadedCh:
			d.endReload(l)
		case <-timer.C:
			timer.Reset(d.pollAndSchedule())
		}
	}
}

// signals is the channel main registered before start-up, or a new one.
func (d *Daemon) signals() chan os.Signal {
	if d.opts.Signals != nil {
		return d.opts.Signals
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	return sigs
}

// pollAndSchedule runs one poll, records its duration, and returns how long
// to wait for the next state poll or counter tick, whichever is first:
// counters keep their 1 s tick under a slower poll.
func (d *Daemon) pollAndSchedule() time.Duration {
	start := time.Now()
	d.poll(start)
	d.mu.Lock()
	d.pollDur = time.Since(start)
	d.metrics.ObservePoll(d.pollDur)
	wake := d.run.NextWake()
	d.mu.Unlock()
	return max(time.Until(wake), 0)
}

func (d *Daemon) watchdogLoop(ctx context.Context) {
	iv := d.nt.WatchdogInterval()
	if iv <= 0 {
		return
	}
	t := time.NewTicker(iv)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			d.wd.Tick()
		}
	}
}

// poll runs one cycle and commits its results: events to the outbox
// (fsynced) before the state that produced them, so a crash between the two
// re-detects and re-sends rather than forgets.
func (d *Daemon) poll(now time.Time) {
	d.mu.Lock()
	specs, changed := d.run.Cycle(now)
	specs = append(specs, d.takeSinkFailuresLocked()...)
	d.holdLocked(specs, now)
	// The rules read the model the cycle's events just updated (held
	// events included, with the times they were detected at). Their
	// windows move with those events, so they are saved with them (a
	// crash must not forget an episode).
	if rs, ch := d.run.After(now, len(specs)); ch {
		d.holdLocked(rs, now)
		changed = true
	}
	evs := d.commitLocked(changed)
	first := !d.ready
	d.ready = true
	d.lastPoll = now
	// The verdict is rebuilt only when something it shows moved: events,
	// an observation, a counter value or rate, the outbox's state. A
	// quiet poll reuses it.
	snap := d.snap.Load()
	if viewChanged := d.run.TakeViewChanged(); first || viewChanged || len(evs) > 0 || d.takeSnapDirty() || snap == nil {
		snap = d.publishSnapshotLocked()
	}
	d.lastPollNano.Store(time.Now().UnixNano())
	d.mu.Unlock()

	d.publish(evs)
	d.wd.Progress()
	// STATUS= is sent when the verdict's summary changes, not every poll.
	status := statusOf(snap)
	switch {
	case first:
		// Logged before READY=1, so the journal shows the first poll
		// before systemd's "Started" line.
		d.log.Info("first poll complete; ready", "status", status)
		d.nt.Ready(status)
		d.statusSent = status
		if d.opts.Ready != nil {
			go d.opts.Ready()
		}
	case status != d.statusSent:
		d.nt.Status(status)
		d.statusSent = status
	}
}

// publishSnapshotLocked builds the verdict from the model and the
// monitor's observations and publishes it. Caller holds d.mu.
func (d *Daemon) publishSnapshotLocked() *health.Snapshot {
	infos := d.run.PortInfos()
	node := health.Node{
		Version: version.String(), NodeName: event.Clean(d.cfg.NodeName), BootID: d.bootID, PollInterval: d.cfg.PollInterval,
		ConfigPath: d.opts.ConfigPath, ConfigGeneration: d.generation, LastReloadError: event.Clean(d.reloadErr), Ready: d.ready,
	}
	if d.cfg.FarEndOn() {
		node.FarEndInterval = d.cfg.FarEnd.Interval
	}
	snap := health.Build(node, infos, d.conditionsLocked())
	snap.AER = d.run.AERTotals()
	snap.Inventory = d.run.InventoryInfos()
	snap.KernelLog = d.run.KernelLogTotals()
	snap.Modules, snap.Devlink = d.run.LinkStoryReadings()
	d.snap.Store(snap)
	return snap
}

// Snapshot returns the latest published verdict (never nil once New
// returned).
func (d *Daemon) Snapshot() *health.Snapshot { return d.snap.Load() }

// LastPoll returns when the last poll completed (zero before the first).
func (d *Daemon) LastPoll() time.Time {
	if n := d.lastPollNano.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// announce logs durable events and signals them on D-Bus.
func (d *Daemon) announce(evs []emitted) {
	for _, e := range evs {
		lvl := slog.LevelInfo
		if !e.ev.IsHealthy {
			lvl = slog.LevelWarn
		}
		d.log.Log(context.Background(), lvl, "event", "seq", e.seq, "check", e.ev.CheckName, "fatal", e.ev.IsFatal,
			"healthy", e.ev.IsHealthy, "device", e.ev.Device(), "port", e.ev.Port(), "message", e.ev.Message)
	}
	if b := d.currentBus(); b != nil {
		for _, e := range evs {
			b.Post(e.ev, e.seq)
		}
	}
}

// publish asks D-Bus to bring its properties in line with the published
// snapshot; it returns at once (the bus may be frozen).
func (d *Daemon) publish(evs []emitted) {
	if b := d.currentBus(); b != nil {
		b.RefreshLater()
	}
}

func (d *Daemon) statusLocked() string { return statusOf(d.publishSnapshotLocked()) }

func (d *Daemon) shutdown(cancel context.CancelFunc, sinksDone <-chan struct{}) error {
	d.nt.Stopping()
	d.mu.Lock()
	answers := d.commitAtShutdownLocked()
	d.mu.Unlock()
	// Give drainers a moment to flush what is queued; anything left stays
	// in the outbox for the next start.
	deadline := time.Now().Add(2 * time.Second)
	for answers && time.Now().Before(deadline) && d.sinks.Pending() > 0 {
		time.Sleep(20 * time.Millisecond)
	}
	d.sinks.StopWithin(sinkset.StopTimeout)
	d.stopMetrics()
	cancel()
	select {
	case <-sinksDone:
	case <-time.After(time.Second):
		// Blocked in a sink's Close or write in the kernel: the process
		// exits without it; its events stay in the outbox.
	}
	<-d.busDone
	d.mu.Lock()
	d.stopMADLocked()
	d.mu.Unlock()
	d.awaitMAD(3 * time.Second)
	d.run.Close()
	return d.closeOutbox()
}

// closeOutbox closes the outbox unless a write to the state directory
// (an append, a cursor save) still holds it after a second: the process
// exits without it then, and the kernel releases its files and lock.
func (d *Daemon) closeOutbox() error {
	done := make(chan error, 1)
	go func() { done <- d.ob.Close() }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Second):
		d.log.Error("the outbox did not close: a write to the state directory is still hung; exiting without it", "dir", d.ob.Dir())
		return nil
	}
}
