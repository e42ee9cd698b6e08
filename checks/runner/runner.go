package runner

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/checks/aer"
	"github.com/nichealth/nichealthd/checks/counters"
	"github.com/nichealth/nichealthd/checks/farend"
	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/checks/inventory"
	"github.com/nichealth/nichealthd/checks/rules"
	"github.com/nichealth/nichealthd/config"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/observe"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/kmsg"
)

// Runner is the checks of one host and their observer. It is not safe for
// concurrent use: the daemon's loop owns it.
type Runner struct {
	cfg  *config.Config
	log  *slog.Logger
	boot observe.Boot
	obs  *observe.Observer
	g    *guard
	set  *set
	list []entry
	// steps are every step of list in order, with its call made once (a
	// closure made at every cycle would allocate at every cycle).
	steps []step
	cy    *checks.Cycle
	// out is the running cycle's events, reused: what Cycle returns is
	// valid until the next call. pending are events for the next cycle
	// (start-up, a plan built between cycles, a sink restarted).
	out      []event.Spec
	afterOut []event.Spec
	pending  []event.Spec
	last     *observe.Observation
	opened   bool
	view     bool
	// rulesAt is when the rules last ran.
	rulesAt      time.Time
	rulesStarted bool
	// klTotals are the kernel log's totals last shown, for klStats.
	klTotals *health.KernelLogTotals
	klStats  kmsg.Stats
}

type step struct {
	check  checks.Check
	name   string
	serves []string
	after  bool
	run    func()
}

// New prepares the checks and their observer over empty memory; Restore,
// Replay and Resume bring back what they remembered, and Discover makes
// the first read plan. boot is what the state file said of the host's
// past, bootID the running boot (the rules' windows belong to it); conds
// are the health model's conditions, which the rules read.
func New(cfg *config.Config, boot observe.Boot, bootID string, log *slog.Logger, seams Seams, conds rules.Conditions) *Runner {
	r := &Runner{cfg: cfg, log: log, boot: boot}
	r.g = newGuard(log, seams.Step, &r.pending)
	r.set, r.list = newSet(log, boot, bootID, conds, r.rename)
	// One loss, one condition (DESIGN.md difference 18): a NIC whose
	// function stays on the bus without its RDMA device is the PCI
	// inventory's to report, while that check runs.
	r.set.ports.ClaimLossesWith(func(_, addr string) bool {
		return !r.g.Failed(event.NICInventoryCheck) && r.set.inventory.Reports(addr)
	})
	for _, e := range r.list {
		r.configure(e, cfg) // memory is empty: nothing to say yet
	}
	r.cy = checks.NewCycle(r.g)
	for _, e := range r.list {
		for _, c := range e.steps {
			r.steps = append(r.steps, step{check: c, name: c.Step(), serves: c.Serves(), after: e.after, run: func() { c.Run(r.cy) }})
		}
	}
	r.obs = observe.New(observeConfig(cfg), boot, log, seams.observe(), r.g)
	r.obs.UseLastNames(func(addr string) string { return r.set.inventory.Expected().LastName(addr) })
	return r
}

// UseExpectedInventory loads the expected inventory from store (a file
// beside the state file that a reboot does not clear) and keeps it there.
// Without it (the one-shot check) nothing is expected from an earlier
// boot.
func (r *Runner) UseExpectedInventory(store inventory.Store) { r.set.inventory.UseStore(store) }

// rename moves what every check remembers of a device to its new name: a
// device renamed under its PCI address is the same NIC.
func (r *Runner) rename(old, nw string) {
	for _, e := range r.list {
		if rn, ok := e.unit.(interface{ Rename(old, nw string) }); ok {
			rn.Rename(old, nw)
		}
	}
}

// SetConditions gives the checks that read the health model (the rules)
// the model: it is restored after the checks' memory.
func (r *Runner) SetConditions(conds rules.Conditions) { r.set.rules.SetConditions(conds) }

// KnownDevices is how many devices the port checks remember.
func (r *Runner) KnownDevices() int { return len(r.set.ports.Memory().KnownDevices) }

// Discover runs discovery and role classification and builds the read
// plan. It fails when classification is impossible (DESIGN.md difference
// 7): the daemon refuses to start.
func (r *Runner) Discover() error { return r.obs.Discover() }

// Devices returns the devices of the last discovery.
func (r *Runner) Devices() []*topology.Device { return r.obs.Devices() }

// NextWake is when the loop must run the next cycle.
func (r *Runner) NextWake() time.Time { return r.obs.NextWake() }

// Cycle is one poll, read as the pipeline it is: observe, then run every
// check of the list in order on the observation, each inside the boundary,
// and return their condition changes (the events the daemon commits to
// the outbox and folds into the health model; valid until the next call)
// and whether what the checks remember moved. After a reboot or with no
// state, each check's clear comes first (DESIGN.md difference 5): before
// what start-up left pending, such as a check disabled by a panic while
// the plan was built, which the clear must not erase.
func (r *Runner) Cycle(now time.Time) ([]event.Spec, bool) {
	r.out = r.out[:0]
	if !r.opened {
		r.opened = true
		r.out = r.openingClears(r.out)
	}
	r.out = append(r.out, r.pending...)
	changed := len(r.pending) > 0
	clear(r.pending)
	r.pending = r.pending[:0]
	r.g.out = &r.out
	obs := r.obs.Cycle(now)
	r.last = obs
	r.cy.Reset(obs, &r.out)
	for i := range r.steps {
		if s := &r.steps[i]; !s.after {
			r.g.Run(s.name, s.serves, s.run)
		}
	}
	if why := r.set.sanity.Off(); obs.StatePoll && why != "" && r.g.raised[event.LinkSanityCheck] {
		r.out = append(r.out, r.g.resumedSpec(event.LinkSanityCheck, why))
	}
	r.obs.Settle(now, r.g.takeReplan())
	r.obs.SetKernelLogRoom(r.set.kernelLog.Room())
	r.g.out = &r.pending
	if r.cy.HasViewChanged() {
		r.view = true
	}
	return r.out, changed || r.cy.HasChanged()
}

// openingClears adds, on the first poll after a reboot or with no state,
// one check-scoped clear per enabled check (DESIGN.md difference 5).
func (r *Runner) openingClears(specs []event.Spec) []event.Spec {
	if !r.boot.Baseline() {
		return specs
	}
	why := "no previous state (first start, or the state file was missing or unreadable)"
	if r.boot == observe.BootRebooted {
		why = "host rebooted (boot ID changed)"
	}
	for _, c := range config.AllChecks {
		if c == event.FarEndCheck && !r.cfg.FarEndOn() {
			continue
		}
		if r.cfg.Checks[c] && (r.cfg.CountersEnabled || !strings.Contains(c, "Degradation")) || r.countersSpeakAs(c) {
			specs = append(specs, checks.ClearedSpec(c, why))
		}
	}
	return specs
}

// countersSpeakAs reports whether the counter checks raise conditions
// under state check c with its own check switched off: fatal counter
// breaches are reported under the state check of their NIC type (seed
// 11.1), whose opening clear they need too.
func (r *Runner) countersSpeakAs(c string) bool {
	if !r.cfg.CountersEnabled || r.cfg.Checks[c] {
		return false
	}
	for _, ll := range []string{topology.LinkLayerInfiniBand, topology.LinkLayerEthernet} {
		if event.StateCheckFor(ll) == c && r.cfg.Checks[event.DegradationCheckFor(ll)] {
			return true
		}
	}
	return false
}

// After runs the checks that read the health model (the rules) once the
// cycle's events are in it: at every poll that had events, and otherwise
// at most once a second (their windows are minutes long; a fast poll
// gives them only time to judge). changed says their memory moved with
// the cycle's events (a crash must not forget an episode). The events are
// valid until the next call.
func (r *Runner) After(now time.Time, events int) (specs []event.Spec, changed bool) {
	if r.last == nil || (events == 0 && r.rulesStarted && now.Sub(r.rulesAt) < time.Second) {
		return nil, false
	}
	r.rulesStarted, r.rulesAt = true, now
	r.afterOut = r.afterOut[:0]
	r.g.out = &r.afterOut
	r.cy.Reset(r.last, &r.afterOut)
	for i := range r.steps {
		if s := &r.steps[i]; s.after {
			r.g.Run(s.name, s.serves, s.run)
		}
	}
	r.g.out = &r.pending
	return r.afterOut, len(r.afterOut) > 0 || events > 0
}

// TakeViewChanged reports whether anything the published verdict shows
// moved since the last call: a port's observation or rate, a counter's
// value or computed rate, an AER total, the read plan.
func (r *Runner) TakeViewChanged() bool {
	c := r.obs.TakeViewChanged() || r.view
	r.view = false
	return c
}

// Reconfigure applies a validated configuration between cycles. Counter
// snapshots, windows and latches of unchanged counters carry over; a
// removed or disabled counter's latched breach is resolved, and a rule
// switched off cleared, with an event that says why. Every check disabled
// by a panic gets another chance.
func (r *Runner) Reconfigure(cfg *config.Config, now time.Time) []event.Spec {
	r.cfg = cfg
	r.g.reset()
	var specs []event.Spec
	for _, e := range r.list {
		specs = append(specs, r.configure(e, cfg)...)
	}
	r.obs.Reconfigure(observeConfig(cfg), now)
	r.syncKernelLog()
	return specs
}

// configure hands e its configuration inside the boundary: a panic there
// disables e's checks as a panic in one of their steps does, until the
// next reload or restart tries again. Unguarded, a configuration that
// trips a check's bug would end the daemon at every start and reload with
// that file, and the whole node would go unwatched.
func (r *Runner) configure(e entry, cfg *config.Config) []event.Spec {
	var specs []event.Spec
	r.g.Configure(e.serves(), func() { specs = e.configure(cfg) })
	return specs
}

// StartKernelLog starts the kernel-log check and its reader (the daemon's
// run; a one-shot check never reads the kernel log), resuming at the
// check's cursor of this boot. What the check remembered from before is
// settled with the first cycle.
func (r *Runner) StartKernelLog(now time.Time) {
	r.pending = append(r.pending, r.set.kernelLog.Start(now)...)
	r.syncKernelLog()
}

// StartLinkStory starts the once-a-minute pass over the RoCE ports'
// transceivers and devlink (the daemon's run; a one-shot check reads
// none of it), on a goroutine of its own.
func (r *Runner) StartLinkStory() { r.obs.OpenLinkStory() }

// syncKernelLog reads the kernel log while the check is on, from the file
// the configuration names: a new devRoot reopens it at the check's cursor.
func (r *Runner) syncKernelLog() {
	switch on := r.set.kernelLog.Active(); {
	case on && r.obs.KernelLogOpen() != r.obs.KernelLogPath():
		r.obs.OpenKernelLog(r.set.kernelLog.Cursor())
	case !on && r.obs.KernelLogOpen() != "":
		r.obs.CloseKernelLog()
	}
}

// UseFarEnd hands the cycle the far end's reader (nil: the far end is not
// read). The reader is the caller's: it runs on its own goroutine and
// the cycle only takes its latest reading.
func (r *Runner) UseFarEnd(src observe.FarEndSource) {
	if src == nil {
		r.obs.CloseFarEnd()
		return
	}
	r.obs.OpenFarEnd(src)
}

// XmitWaitBytesPerTick is the port_xmit_wait conversion the counter checks
// use now.
func (r *Runner) XmitWaitBytesPerTick() float64 {
	return r.set.counters.Evaluator().XmitWaitBytesPerTick()
}

// Counters are the counter rows the read plan reads.
func (r *Runner) Counters() int { return len(countersConfig(r.cfg).Plan()) }

// Close releases the observer's descriptors and its reader's worker.
func (r *Runner) Close() { r.obs.Close() }

// Observer is the runner's observer (tests and benchmarks read its plan).
func (r *Runner) Observer() *observe.Observer { return r.obs }

// Unclassified says why roles are unknown ("" when classified).
func (r *Runner) Unclassified() string { return r.obs.Unclassified() }

// HasPort reports whether device/port is a monitored port.
func (r *Runner) HasPort(device string, port int) bool {
	for _, p := range r.obs.Ports() {
		if p.Device.Name == device && p.Port.Num == port {
			return true
		}
	}
	return false
}

// ErrNotLatched and ErrNoSuchCounter are AcknowledgeReset's refusals.
var (
	ErrNotLatched    = counters.ErrNotLatched
	ErrNoSuchCounter = counters.ErrNoSuchCounter
)

// Acknowledge is AcknowledgeReset: "peer:<counter>" clears a far-end
// condition of the port, "kernel_log" or a kernel-log pattern's name
// clears kernel-log conditions covering the port, counter aer.AckCounter
// ("pcie_aer") the uncorrectable AER conditions on the port's path,
// anything else goes to the counter table ("": every latched counter of
// the port, its far end's included).
func (r *Runner) Acknowledge(device string, port int, counter string, now time.Time, who string) ([]event.Spec, error) {
	switch {
	case farend.IsCode(counter):
		specs, err := r.set.farEnd.Acknowledge(device, port, counter, who)
		if errors.Is(err, farend.ErrNotLatched) {
			return nil, fmt.Errorf("acknowledge %s port %d: %w: %v", device, port, counters.ErrNotLatched, err)
		}
		return specs, err
	case counter == "":
		// Every latched counter of the port: its own and its far end's.
		far, _ := r.set.farEnd.Acknowledge(device, port, "", who)
		own, err := r.set.counters.Acknowledge(device, port, counter, now, who)
		if len(far) > 0 && errors.Is(err, counters.ErrNotLatched) {
			return far, nil
		}
		return append(own, far...), err
	}
	if specs, ok := r.set.kernelLog.Acknowledge(device, port, counter, who); ok {
		if len(specs) == 0 {
			return nil, fmt.Errorf("acknowledge %s port %d: %w: no kernel-log condition (%s) on it", device, port, counters.ErrNotLatched, counter)
		}
		return specs, nil
	}
	if counter != aer.AckCounter {
		return r.set.counters.Acknowledge(device, port, counter, now, who)
	}
	specs := r.set.aer.Acknowledge(device, who)
	if len(specs) == 0 {
		return nil, fmt.Errorf("acknowledge %s port %d: %w: no PCIe AER fatal or non-fatal condition on its path", device, port, counters.ErrNotLatched)
	}
	return specs, nil
}

// AcknowledgeFunction is AcknowledgeReset with a PCI address: the NIC
// function reported gone was removed on purpose, and is forgotten.
// SaveExpectedInventory writes that down once the clear is durable.
func (r *Runner) AcknowledgeFunction(addr, who string) ([]event.Spec, error) {
	return r.set.inventory.AcknowledgeFunction(addr, who)
}

// SaveExpectedInventory writes the expected inventory when it changed.
func (r *Runner) SaveExpectedInventory() { r.set.inventory.SaveExpected() }

// MarkFailed records that check (a sink, whose failure the daemon raised)
// has a check-failed condition raised.
func (r *Runner) MarkFailed(check string) { r.g.raised[check] = true }

// Resumed clears, with the next cycle, the check-failed condition of
// every raised check whose name starts with prefix; why says why each
// one's condition clears (a sink restarted or no longer configured).
func (r *Runner) Resumed(prefix string, why func(check string) string) {
	for _, c := range r.g.raisedWith(prefix) {
		r.pending = append(r.pending, r.g.resumedSpec(c, why(c)))
	}
}

// Annotate adds to a NIC event what the runner knows beside its check:
// metadata "gpus", the GPUs behind its NIC (or the NICs of the ports a
// card event names), so a scheduler can drain those GPUs or their rail
// rather than the node; and, for a port's event, the port's cable verdict
// (DESIGN.md section 15: cableDirection, cableSuspect, cableEvidence) and,
// on its link-up event, the episode against the RDMA retry budget. The
// spec's own metadata map is never modified: checks may share it.
func (r *Runner) Annotate(s event.Spec) event.Spec {
	var md map[string]string
	set := func(k, v string) {
		if md == nil {
			md = make(map[string]string, len(s.Metadata)+4)
			for k, v := range s.Metadata {
				md[k] = v
			}
		}
		md[k] = v
	}
	if _, ok := s.Metadata["gpus"]; !ok {
		if g, ok := r.gpusOf(s); ok {
			set("gpus", g)
		}
	}
	if s.Device != "" && s.Port > 0 {
		if s.Kind == event.KindPortRecovered {
			if ep, ok := r.set.cable.TakeEpisode(s.Device, s.Port); ok {
				s.Message += "; " + ep.Sentence()
				set("downFor", fmt.Sprintf("%.3fs", ep.DownFor.Seconds()))
				set("retryBudget", fmt.Sprintf("%.3fs", ep.Budget.Seconds()))
			}
		}
		if v := r.set.cable.Verdict(s.Device, s.Port); v != nil && v.Said() {
			set("cableDirection", v.Direction.String())
			set("cableSuspect", v.Suspect.String())
			set("cableEvidence", event.Clean(v.EvidenceText()))
		}
	}
	if md != nil {
		s.Metadata = md
	}
	return s
}

// gpusOf is the "gpus" metadata of a NIC event (false: the event names
// no NIC).
func (r *Runner) gpusOf(s event.Spec) (string, bool) {
	var names []string
	if s.Device != "" {
		names = append(names, s.Device)
	}
	for _, p := range s.Ports {
		names = append(names, p.Device)
	}
	if len(names) == 0 {
		return "", false
	}
	var parts []string
	for _, n := range names {
		g, ok := r.obs.GPUs(n)
		if !ok {
			// A NIC missing from the last discovery keeps the GPUs its
			// last discovery put behind it: its disappearance is the
			// event a scheduler drains them for.
			id, known := r.set.ports.Identity(n)
			g, ok = id.GPUs, known
		}
		if ok && g != "" && g != observe.NoGPUAffinity && !slices.Contains(parts, g) {
			parts = append(parts, g)
		}
	}
	g := observe.NoGPUAffinity
	if len(parts) > 0 {
		g = strings.Join(parts, ", ")
	}
	return g, true
}

// IsNotLatched reports an acknowledgement refused because nothing was
// latched.
func IsNotLatched(err error) bool { return errors.Is(err, counters.ErrNotLatched) }
