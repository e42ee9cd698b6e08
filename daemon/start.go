package daemon

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/checks/runner"
	"github.com/nichealth/nichealthd/config"
	"github.com/nichealth/nichealthd/daemon/delivery"
	"github.com/nichealth/nichealthd/daemon/metrics"
	"github.com/nichealth/nichealthd/daemon/sink"
	"github.com/nichealth/nichealthd/daemon/sinkset"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/internal/backoff"
	"github.com/nichealth/nichealthd/internal/repeats"
	"github.com/nichealth/nichealthd/observe"
	"github.com/nichealth/nichealthd/persist"
	"github.com/nichealth/nichealthd/persist/outbox"
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
	// Ready, when set, is called once, on its own goroutine, after the
	// first poll completed and READY=1 was sent: what main does once
	// start-up is over (releasing start-up's pages) never delays a poll.
	Ready func()
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
	st, bs, err := loadState(store, opts.StateFile, bootID, log)
	if err != nil {
		return nil, err
	}
	run := runner.New(cfg, bootOf(bs), bootID, log, opts.Seams.runner(), nil)
	if dropped := run.Restore(func(s string) []byte { return st.Section(s) }); len(dropped) > 0 {
		log.Warn("state file entries dropped as invalid", "file", opts.StateFile, "dropped", dropped)
	}
	log.Info("state loaded", "file", opts.StateFile, "boot", bs.String(), "known_devices", run.KnownDevices())
	ob, err := outbox.Open(filepath.Join(filepath.Dir(opts.StateFile), "outbox"), outbox.Options{
		MaxBytes: cfg.OutboxMaxBytes, Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("open outbox: %w", err)
	}
	model, replayed, err := catchUp(st, bs, run, ob, log)
	if err != nil {
		ob.Close()
		return nil, err
	}
	d := &Daemon{
		opts: opts, log: log, store: store, st: st, ob: ob, cfg: cfg, bootID: bootID, generation: 1,
		reloadCh: make(chan chan error, 4), loadedCh: make(chan loaded), reloadLogs: repeats.Limiter{Window: time.Minute},
		metrics: metrics.New(),
		model:   model,
		run:     run,
		// A replay or a model rebuilt from an older state file is saved
		// with the first poll.
		modelDirty: replayed > 0 || len(st.Health) == 0,
		boot:       bs,
		// A refused append is a local disk problem, like a cursor that
		// cannot be saved: retried at most every few seconds.
		held: heldEvents{ep: backoff.Episode{Min: delivery.BackoffMin, Max: delivery.SaveBackoffMax}},
	}
	d.sinks = sinkset.New(sinkset.Options{Outbox: ob, Log: log, Extra: opts.ExtraSinks,
		Panicked: d.sinkPanicked, Failed: d.anySinkFailed,
		Restarted: func(running []string) {
			d.mu.Lock()
			d.sinksRestartedLocked(running, "a reload restarted the sink")
			d.mu.Unlock()
		}})
	run.SetConditions(model)
	run.Resume(model)
	run.UseExpectedInventory(persist.NewCrossBootFile(filepath.Join(filepath.Dir(opts.StateFile), "inventory.json")))
	if err := run.Discover(); err != nil {
		ob.Close()
		return nil, err
	}
	d.logRoles()
	d.publishSnapshotLocked()
	return d, nil
}

// bootOf is what the checks know of the host's past.
func bootOf(bs persist.BootStatus) observe.Boot {
	switch bs {
	case persist.BootSame:
		return observe.BootSame
	case persist.BootRebooted:
		return observe.BootRebooted
	}
	return observe.BootFresh
}

// loadState reads the state file and ties it to this boot, logging what
// was unusable.
func loadState(store *persist.Store, path, bootID string, log *slog.Logger) (*persist.State, persist.BootStatus, error) {
	st, rep, err := store.Load()
	if err != nil {
		return nil, 0, err
	}
	if rep.Status == persist.LoadCorrupt {
		log.Warn("state file unusable; starting fresh", "file", path, "reason", rep.Reason, "kept_copy", rep.Preserved)
	} else if len(rep.Dropped) > 0 {
		log.Warn("state file entries dropped as invalid", "file", path, "dropped", rep.Dropped)
	}
	return st, persist.ApplyBoot(st, bootID), nil
}

// catchUp restores the health model and, on the same boot, replays the
// outbox events newer than the state onto the checks and the model.
func catchUp(st *persist.State, bs persist.BootStatus, run *runner.Runner, ob *outbox.Outbox, log *slog.Logger) (*health.Model, int, error) {
	model, note := run.RestoreModel(st.Health)
	if note != "" {
		log.Warn("state file", "detail", note)
	}
	replayed := 0
	if bs == persist.BootSame {
		n, err := replayOutbox(&st.OutboxSeq, run, model, ob)
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

// replayOutbox applies every outbox event newer than *seq to the checks'
// memory and the health model, through each check's own Replay. The daemon
// commits an event to the outbox before the state that produced it; a
// crash in between leaves consumers told something the state does not
// remember. Replaying makes the state agree with what was said, so the
// first poll corrects it if the hardware has moved on since (the fatal that
// was sent gets its recovery, the recovery that was sent gets its fatal).
func replayOutbox(seq *uint64, run *runner.Runner, model *health.Model, ob *outbox.Outbox) (int, error) {
	n := 0
	for {
		recs, err := ob.ReadAfter(*seq, 512)
		if err != nil {
			return n, fmt.Errorf("replay the outbox onto the state: %w", err)
		}
		if len(recs) == 0 {
			return n, nil
		}
		for i := range recs {
			run.Replay(&recs[i].Event)
			model.Apply(&recs[i].Event)
			*seq = recs[i].Seq
			n++
		}
	}
}

func (d *Daemon) logRoles() {
	for _, dev := range d.run.Devices() {
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
