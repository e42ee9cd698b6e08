package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nichealth/nichealthd/checks/event"
	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/checks/rules"
	"github.com/nichealth/nichealthd/daemon/config"
	"github.com/nichealth/nichealthd/daemon/metrics"
	"github.com/nichealth/nichealthd/daemon/sink"
	"github.com/nichealth/nichealthd/daemon/sink/connector"
	"github.com/nichealth/nichealthd/internal/repeats"
	"github.com/nichealth/nichealthd/internal/version"
	"github.com/nichealth/nichealthd/persist"
	"github.com/nichealth/nichealthd/persist/outbox"
	"github.com/nichealth/nichealthd/systemd/notify"
)

// Overrides are command-line flags; a set flag wins over the file, also
// after a reload.
type Overrides struct {
	MetadataPath    *string
	PollInterval    *time.Duration
	ConnectorSocket *string
	Strategy        *event.ProcessingStrategy
	NodeName        *string
	Checks          map[string]bool
	BootIDPath      string
}

// Options start a daemon.
type Options struct {
	ConfigPath string
	StateFile  string
	Overrides  Overrides
	Log        *slog.Logger
	// ExtraSinks are added to the configured ones (tests).
	ExtraSinks []sink.Sink
	// Seams are a test's stand-ins for the kernel (seams.go); the
	// production binary passes none.
	Seams Seams
	// Signals, when set, is the channel main registered with
	// signal.Notify before start-up, so a SIGTERM during discovery is
	// handled as a clean stop rather than killing the process.
	Signals chan os.Signal
}

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

	mu         sync.Mutex // guards everything below and the monitor
	cfg        *config.Config
	mon        *Monitor
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
	// rules run the seeds' analyzer rules on the node (daemon/rules.go).
	rules        *rules.Engine
	rulePorts    []rules.Port
	rulesStarted bool
	rulesAt      time.Time // when the rules last ran
	boot         persist.BootStatus
	saveFails    int
	// reloadLogs collapses repeated reload outcomes in the log.
	reloadLogs repeats.Limiter
	// held are events the checks emitted that the outbox has not taken
	// yet (daemon/commit.go).
	held heldEvents

	metrics    *metrics.Metrics
	metricsSrv *metricsServer // owned by the Run goroutine

	sinkMu sync.Mutex
	sinks  *sinkSet
	// sinkWant is the configuration the sinks should run with; sinkReq
	// wakes the goroutine that brings them there (daemon/sinks.go).
	sinkWant atomic.Pointer[sinkWant]
	sinkReq  chan struct{}
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

func (o *Overrides) apply(c *config.Config) {
	if o.MetadataPath != nil {
		c.MetadataPath = *o.MetadataPath
	}
	if o.PollInterval != nil {
		c.PollInterval = *o.PollInterval
	}
	if o.ConnectorSocket != nil {
		c.ConnectorSocket = *o.ConnectorSocket
	}
	if o.Strategy != nil {
		c.Strategy = *o.Strategy
	}
	if o.NodeName != nil && *o.NodeName != "" {
		c.NodeName = *o.NodeName
	}
	if o.Checks != nil {
		c.Checks = o.Checks
	}
}

// LoadConfig loads the file and applies flag overrides and the node-name
// fallbacks (flag, file, $NODE_NAME, hostname).
func LoadConfig(path string, o Overrides) (*config.Config, error) {
	var l config.Loader
	return loadConfigWith(&l, path, o)
}

// loadConfigWith is LoadConfig through l, which joins a read still
// pending from an earlier call rather than starting another.
func loadConfigWith(l *config.Loader, path string, o Overrides) (*config.Config, error) {
	c, err := l.Load(path)
	if err != nil {
		return nil, err
	}
	o.apply(c)
	if c.NodeName == "" {
		c.NodeName = os.Getenv("NODE_NAME")
	}
	if c.NodeName == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			return nil, fmt.Errorf("no node name: set --node-name, nodeName in %s, or NODE_NAME", path)
		}
		c.NodeName = h
	}
	return c, nil
}

// New prepares a daemon: config, state, outbox, first discovery. Every
// error is fatal at start-up and says what to fix.
func New(opts Options) (*Daemon, error) {
	log := opts.Log
	cfg, err := LoadConfig(opts.ConfigPath, opts.Overrides)
	if err != nil {
		return nil, err
	}
	bootPath := opts.Overrides.BootIDPath
	if bootPath == "" {
		bootPath = cfg.BootIDPath()
	}
	bootID, err := persist.ReadBootID(bootPath)
	if err != nil {
		return nil, fmt.Errorf("%w (set --boot-id-path or procfsRoot)", err)
	}
	store := persist.NewStore(opts.StateFile)
	st, bs, mem, err := loadState(store, opts.StateFile, bootID, log)
	if err != nil {
		return nil, err
	}
	ob, err := outbox.Open(filepath.Join(filepath.Dir(opts.StateFile), "outbox"), outbox.Options{
		MaxBytes: cfg.OutboxMaxBytes, Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("open outbox: %w", err)
	}
	model, replayed, err := catchUp(st, bs, mem, ob, cfg, log)
	if err != nil {
		ob.Close()
		return nil, err
	}
	d := &Daemon{
		opts: opts, log: log, store: store, st: st, ob: ob, cfg: cfg, bootID: bootID, generation: 1,
		reloadCh: make(chan chan error, 4), loadedCh: make(chan loaded), reloadLogs: repeats.Limiter{Window: time.Minute},
		sinkReq: make(chan struct{}, 1),
		metrics: metrics.New(),
		model:   model,
		// A replay or a model rebuilt from an older state file is saved
		// with the first poll.
		modelDirty: replayed > 0 || len(st.Health) == 0,
		boot:       bs,
		// A refused append is a local disk problem, like a cursor that
		// cannot be saved: retried at most every few seconds.
		held: heldEvents{ep: episode{min: backoffMin, max: saveBackoffMax}},
	}
	d.mon = newMonitor(cfg, mem, bs, log, opts.Seams)
	// Checks disabled by a panic before the restart are still reported:
	// their conditions clear when they run again.
	d.mon.guard.restore(failedChecksOf(model.Conditions()))
	d.mon.pendingSpecs = append(d.mon.pendingSpecs, migrateRuleChecks(model)...)
	d.mon.UseExpectedInventory(persist.NewCrossBootFile(filepath.Join(filepath.Dir(opts.StateFile), "inventory.json")), bootID)
	var rnote string
	d.rules, rnote = restoreRules(st, effectiveRules(cfg), bootID)
	if rnote != "" {
		log.Warn("state file entries dropped as invalid", "file", opts.StateFile, "dropped", []string{rnote})
	}
	if err := d.mon.Discover(); err != nil {
		ob.Close()
		return nil, err
	}
	d.logRoles()
	d.publishSnapshotLocked()
	return d, nil
}

// loadState reads the state file, ties it to this boot, and restores every
// check's memory from it, logging what was unusable.
func loadState(store *persist.Store, path, bootID string, log *slog.Logger) (*persist.State, persist.BootStatus, *Memory, error) {
	st, rep, err := store.Load()
	if err != nil {
		return nil, 0, nil, err
	}
	if rep.Status == persist.LoadCorrupt {
		log.Warn("state file unusable; starting fresh", "file", path, "reason", rep.Reason, "kept_copy", rep.Preserved)
	} else if len(rep.Dropped) > 0 {
		log.Warn("state file entries dropped as invalid", "file", path, "dropped", rep.Dropped)
	}
	bs := persist.ApplyBoot(st, bootID)
	mem, dropped := RestoreMemory(st)
	if len(dropped) > 0 {
		log.Warn("state file entries dropped as invalid", "file", path, "dropped", dropped)
	}
	log.Info("state loaded", "file", path, "boot", bs.String(), "known_devices", len(mem.Ports.KnownDevices))
	return st, bs, mem, nil
}

// catchUp restores the health model and, on the same boot, replays the
// outbox events newer than the state onto the checks and the model.
func catchUp(st *persist.State, bs persist.BootStatus, mem *Memory, ob *outbox.Outbox, cfg *config.Config, log *slog.Logger) (*health.Model, int, error) {
	model, note := restoreModel(st, mem)
	if note != "" {
		log.Warn("state file", "detail", note)
	}
	replayed := 0
	if bs == persist.BootSame {
		n, err := replayOutbox(&st.OutboxSeq, mem, model, ob, cfg.Counters)
		if err != nil {
			return nil, 0, err
		}
		replayed = n
		if n > 0 {
			log.Warn("replayed events the state file had not recorded (the daemon stopped between emitting and saving)", "events", n)
		}
	}
	if last := ob.Stats().LastSeq; last > st.OutboxSeq {
		// After a reboot the state was cleared: nothing older applies.
		st.OutboxSeq = last
	}
	return model, replayed, nil
}

func (d *Daemon) logRoles() {
	for _, dev := range d.mon.Devices() {
		if !dev.Mellanox {
			continue
		}
		kind := "PF"
		if dev.IsVF {
			kind = "VF (skipped)"
		}
		d.log.Info("NIC", "device", dev.Name, "pci", dev.PCIAddress, "numa", dev.NUMANode, "function", kind,
			"link_layer", dev.LinkLayer(), "role", string(dev.Role), "reason", dev.RoleReason, "monitored", dev.Monitored())
	}
}

// Run polls until ctx is done or SIGTERM/SIGINT arrives.
func (d *Daemon) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d.runCtx = ctx
	d.nt = notify.New(d.log)
	d.wd = notify.NewProgressWatchdog(d.nt, notify.WatchdogOptions{StallAfter: 5 * d.cfg.PollInterval, Logger: d.log})

	if err := d.startSinks(ctx, d.cfg, false); err != nil {
		return err
	}
	sinksDone := make(chan struct{})
	go func() { defer close(sinksDone); d.sinkWorker(ctx) }()
	d.mu.Lock()
	d.sinksRestartedLocked(d.sinkNames(), "the daemon restarted and the sink runs again")
	d.mu.Unlock()
	d.startMetrics(ctx, d.cfg.MetricsAddress)
	d.mu.Lock()
	d.mon.startKernelLog(d.bootID)
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
	wake := d.mon.NextWake()
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
	specs, changed := d.mon.Cycle(now)
	specs = append(specs, d.takeSinkFailuresLocked()...)
	d.holdLocked(specs, now)
	// The rules read the model the cycle's events just updated (held
	// events included, with the times they were detected at). Their
	// windows move with those events, so they are saved with them (a
	// crash must not forget an episode); a quiet poll saves nothing. With
	// no event they only have time to judge (minutes-long windows), so a
	// fast poll runs them at most once a second.
	if len(specs) > 0 || !d.rulesStarted || now.Sub(d.rulesAt) >= time.Second {
		d.rulesAt = now
		var rs []event.Spec
		d.mon.guard.run("rules", ruleChecks, &rs, func() { rs = append(rs, d.runRulesLocked(now)...) })
		if len(rs) > 0 || len(specs) > 0 {
			d.holdLocked(rs, now)
			changed = true
		}
	}
	evs := d.commitLocked(changed)
	first := !d.ready
	d.ready = true
	d.lastPoll = now
	// The verdict is rebuilt only when something it shows moved: events,
	// an observation, a counter value or rate, the outbox's state. A
	// quiet poll reuses it.
	snap := d.snap.Load()
	if viewChanged := d.mon.TakeViewChanged(); first || viewChanged || len(evs) > 0 || d.takeSnapDirty() || snap == nil {
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
	case status != d.statusSent:
		d.nt.Status(status)
		d.statusSent = status
	}
}

// publishSnapshotLocked builds the verdict from the model and the
// monitor's observations and publishes it. Caller holds d.mu.
func (d *Daemon) publishSnapshotLocked() *health.Snapshot {
	infos := d.mon.portInfos()
	if d.rules != nil {
		for i := range infos {
			infos[i].LinkDownEpisodes, _ = d.rules.Episodes(infos[i].Device, infos[i].Port)
		}
	}
	snap := health.Build(health.Node{
		Version: version.String(), NodeName: event.Clean(d.cfg.NodeName), BootID: d.bootID, PollInterval: d.cfg.PollInterval,
		ConfigPath: d.opts.ConfigPath, ConfigGeneration: d.generation, LastReloadError: event.Clean(d.reloadErr), Ready: d.ready,
	}, infos, d.conditionsLocked())
	snap.AER = d.mon.aerTotals()
	snap.Inventory = d.mon.inventoryInfos()
	snap.KernelLog = d.mon.kernelLogTotals()
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

// saveIfChanged stores every check's memory into the state and saves it
// when the bytes differ from the last save. Caller holds d.mu.
func (d *Daemon) saveIfChanged() (bool, error) {
	if err := StoreMemory(d.st, d.mon.Memory()); err != nil {
		return false, err
	}
	if err := storeRules(d.st, d.rules); err != nil {
		return false, err
	}
	return d.store.SaveIfChanged(d.st)
}

func (d *Daemon) statusLocked() string { return statusOf(d.publishSnapshotLocked()) }

func (d *Daemon) shutdown(cancel context.CancelFunc, sinksDone <-chan struct{}) error {
	d.nt.Stopping()
	d.mu.Lock()
	d.commitAtShutdownLocked()
	d.mu.Unlock()
	// Give drainers a moment to flush what is queued; anything left stays
	// in the outbox for the next start.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) && d.pending() > 0 {
		time.Sleep(20 * time.Millisecond)
	}
	d.stopSinksWithin(sinkStopTimeout)
	d.stopMetrics()
	cancel()
	select {
	case <-sinksDone:
	case <-time.After(time.Second):
		// Blocked in a sink's Close or write in the kernel: the process
		// exits without it; its events stay in the outbox.
	}
	<-d.busDone
	d.mon.Close()
	return d.ob.Close()
}

// sinkSet is the running sinks and their drainers; a reload that changes
// a [sinks.*] key replaces it whole.
type sinkSet struct {
	sinks    []sink.Sink
	drainers []*drainer
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
		dr := newDrainer(d.ob, s, d.log, batch)
		dr.panicked = d.sinkPanicked
		set.drainers = append(set.drainers, dr)
		set.wg.Add(1)
		go func() { defer set.wg.Done(); dr.run(ctx) }()
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

func (d *Daemon) drainerList() []*drainer {
	d.sinkMu.Lock()
	defer d.sinkMu.Unlock()
	if d.sinks == nil {
		return nil
	}
	return d.sinks.drainers
}

func (d *Daemon) pending() int {
	n := 0
	for _, dr := range d.drainerList() {
		recs, err := d.ob.Read(dr.sink.Name(), 1)
		if err == nil {
			n += len(recs)
		}
	}
	return n
}

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
	d.requestSinks(cfg)
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
	specs := d.mon.Reconfigure(cfg, time.Now())
	specs = append(specs, d.mon.reconfigureKernelLog(d.bootID)...)
	specs = append(specs, ruleSpecs(d.rules.SetConfig(effectiveRules(cfg)))...)
	d.mon.eval.SetXmitWaitBytesPerTick(cfg.XmitWaitBytesPerTick)
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

// sinkNames are the running sinks' names.
func (d *Daemon) sinkNames() []string {
	var out []string
	for _, dr := range d.drainerList() {
		out = append(out, dr.sink.Name())
	}
	return out
}

// logApplied logs an applied configuration; a reload of the same file (a
// script calling Reload in a loop) is logged once per window with a count.
func (d *Daemon) logApplied(cfg *config.Config, unchanged bool) {
	if !unchanged {
		d.log.Info("configuration applied", "file", d.opts.ConfigPath, "generation", d.generation,
			"counters", len(d.mon.defs), "poll_interval", cfg.PollInterval)
		return
	}
	if ok, n := d.reloadLogs.Note("unchanged", time.Now()); ok {
		d.log.Info("configuration applied (file unchanged)", "file", d.opts.ConfigPath, "generation", d.generation,
			"repeats", n)
	}
}
