package kernellog

import (
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/config/patterntable"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/observe"
	"github.com/nichealth/nichealthd/topology/kmsg"
)

// Section is the kernel-log check's section of the state file.
const Section = "kernelLog"

// tick is how often the quiet-period clears and count updates are looked
// at.
const tick = time.Second

// Config is [kernelLog] as the check takes it.
type Config struct {
	// On: kernelLog.enabled and the check in --checks.
	On             bool
	MatchUserSpace bool
	Patterns       []patterntable.Pattern
}

// Watch is the kernel-log check as the runner (checks/runner) runs it
// (step "kernel-log", on every cycle): it judges the records the observer
// read from the kernel log with the function map of the plan, and once a
// second clears quiet conditions and reports grown counts. It judges
// nothing until the daemon starts it (Start): a one-shot check never
// reads the kernel log.
type Watch struct {
	cfg  Config
	log  *slog.Logger
	boot string
	mem  *Memory
	// check is the judgement over the compiled patterns; nil while the
	// check is off (or its patterns never compiled).
	check   *Check
	started bool
	next    time.Time
	judged  uint64
	// carry are the records the observer handed over that the last
	// cycle's work budget left unjudged, oldest first; the observer hands
	// at most Room more, so they never exceed observe.KernelLogBatch.
	carry []kmsg.Record
	// budget is the judging work a cycle may do (DefaultBudget).
	budget uint64
	// devs is the function map of plan (see devices).
	devs     *Devices
	plan     uint64
	planSeen bool
	// missing lists the NICs missing from the last enumeration with their
	// last known ports (the port checks' memory), which records about them
	// are still attributed to.
	missing func() []Function
}

// NewWatch returns the check with empty memory; bootID is the running
// boot, missing what the port checks remember of NICs gone from the last
// enumeration.
func NewWatch(log *slog.Logger, bootID string, missing func() []Function) *Watch {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Watch{log: log, boot: bootID, mem: NewMemory(), missing: missing, budget: DefaultBudget}
}

// SetBudget sets the judging work a cycle may do (tests; 0: none).
func (w *Watch) SetBudget(units uint64) { w.budget = units }

// Room is how many records the next cycle may hand over: the batch less
// the records still waiting to be judged. The reader's queue and the
// kernel's ring hold the rest, so a slow table backs up there, bounded,
// with losses counted from the sequence numbers.
func (w *Watch) Room() int { return max(observe.KernelLogBatch-len(w.carry), 0) }

// Carried is how many records wait for the next cycle's judging.
func (w *Watch) Carried() int { return len(w.carry) }

// Memory is what the check remembers.
func (w *Watch) Memory() *Memory { return w.mem }

func (*Watch) Step() string { return "kernel-log" }

func (*Watch) Serves() []string { return []string{CheckName} }

// Active reports whether the kernel log should be read: the check is
// started and on.
func (w *Watch) Active() bool { return w.check != nil }

// Cursor is where reading resumes: after the last record judged in this
// boot, if any.
func (w *Watch) Cursor() (resume bool, after uint64) { return w.mem.HasSeq, w.mem.Seq }

// Start starts the check (the daemon's run). Conditions remembered from
// before the start are settled first: all of them cleared when the check
// is now off, those of patterns removed or changed while the daemon was
// down reconciled. The events go out with the first poll.
func (w *Watch) Start(now time.Time) []event.Spec {
	w.started = true
	w.mem.ForBoot(w.boot)
	return w.turnOn(now)
}

// turnOn compiles the patterns and settles the remembered conditions.
func (w *Watch) turnOn(now time.Time) []event.Spec {
	tb, err := Compile(w.cfg.Patterns)
	if err != nil {
		w.log.Error("kernel log patterns do not compile; the kernel-log check is off", "err", err)
		return nil
	}
	check := New(tb, Options{MatchUserSpace: w.cfg.MatchUserSpace, Log: w.log})
	specs := check.Unfold(w.mem, now)
	if !w.cfg.On {
		return append(specs, check.ClearAll(w.mem, "the kernel-log check is switched off (kernelLog.enabled = false, or not in checks)")...)
	}
	w.check = check
	return append(specs, check.Reconcile(w.mem, now)...)
}

// Adopt takes on the kernel-log conditions the health model restored
// that the memory does not hold (Memory.Adopt); Start settles those past
// the bounds.
func (w *Watch) Adopt(held []Held) {
	if n := w.mem.Adopt(held); n > 0 {
		w.log.Info("kernel-log conditions the health model held and the check's state did not were taken on again", "conditions", n)
	}
}

// Configure applies [kernelLog] and --checks. Once started: switched off
// clears every condition, switched on starts, and changed patterns
// settle their conditions.
func (w *Watch) Configure(cfg Config) []event.Spec {
	old := w.cfg
	w.cfg = cfg
	if !w.started {
		return nil
	}
	switch {
	case w.check == nil && cfg.On:
		return w.turnOn(time.Now())
	case w.check == nil:
		return nil
	case !cfg.On:
		specs := w.check.ClearAll(w.mem, "the kernel-log check was switched off (kernelLog.enabled = false, or not in checks)")
		w.check, w.carry = nil, nil
		return specs
	}
	if slices.Equal(old.Patterns, cfg.Patterns) && old.MatchUserSpace == cfg.MatchUserSpace {
		return nil
	}
	tb, err := Compile(cfg.Patterns)
	if err != nil {
		w.log.Error("kernel log patterns do not compile; the previous ones stay", "err", err)
		w.cfg.Patterns, w.cfg.MatchUserSpace = old.Patterns, old.MatchUserSpace
		return nil
	}
	w.check.SetTable(tb, Options{MatchUserSpace: cfg.MatchUserSpace})
	return w.check.Reconcile(w.mem, time.Now())
}

// Run judges the records the observer read since the last cycle, and once
// a second clears quiet conditions and reports grown counts.
func (w *Watch) Run(cy *checks.Cycle) {
	if w.check == nil {
		return
	}
	cy.Enter(CheckName)
	obs := cy.Obs
	if recs := obs.KernelLog.Records; len(recs) > 0 || len(w.carry) > 0 {
		if len(w.carry) > 0 {
			// Judged in order: what waited first. The observer reuses its
			// buffer, so what is left over is copied.
			recs = append(w.carry, recs...)
		}
		specs, ch, n := w.check.JudgeWithin(w.mem, recs, w.devices(obs), obs.Now, w.budget)
		cy.Emit(specs...)
		if ch {
			cy.Changed()
		}
		w.judged += uint64(n)
		left := recs[n:]
		if len(left) > observe.KernelLogBatch {
			// The observer hands at most Room: never here, but a bound
			// is kept where it is added, and what it drops is counted.
			w.check.stats.OverBudget += uint64(len(left) - observe.KernelLogBatch)
			left = left[len(left)-observe.KernelLogBatch:]
		}
		w.check.stats.Deferred += uint64(len(left))
		w.carry = append(w.carry[:0:0], left...)
		cy.ViewChanged()
	}
	if obs.Now.Before(w.next) {
		return
	}
	w.next = obs.Now.Add(tick)
	specs, ch := w.check.Tick(w.mem, obs.Now)
	cy.Emit(specs...)
	if ch {
		cy.Changed()
	}
}

// devices is the map a record is attributed with, built once per plan:
// the monitored functions with their ports (a NIC missing from the last
// enumeration keeps its last known ports, as every view does), every
// function discovery saw, their VFs, and their netdev and RDMA device
// names.
func (w *Watch) devices(obs *observe.Observation) *Devices {
	if w.devs != nil && w.planSeen && w.plan == obs.Plan {
		return w.devs
	}
	d := &Devices{Monitored: map[string]Function{}, Known: map[string]bool{}, Names: map[string]string{}}
	for _, dev := range obs.Devices {
		pci := strings.ToLower(dev.PCIAddress)
		if pci == "" {
			continue
		}
		d.Known[pci] = true
		d.Names[dev.Name] = pci
		for _, n := range dev.NetDevs {
			d.Names[n] = pci
		}
		for _, vf := range obs.VFs(dev) {
			d.Known[vf] = true
		}
	}
	for _, p := range obs.Ports {
		pci := strings.ToLower(p.Device.PCIAddress)
		if pci == "" {
			continue
		}
		f := d.Monitored[pci]
		f.PCI, f.Device = pci, p.Device.Name
		f.Ports = append(f.Ports, p.Key())
		d.Monitored[pci] = f
	}
	if w.missing != nil {
		for _, f := range w.missing() {
			f.PCI = strings.ToLower(f.PCI)
			if _, ok := d.Monitored[f.PCI]; ok || f.PCI == "" {
				continue
			}
			d.Monitored[f.PCI], d.Known[f.PCI], d.Names[f.Device] = f, true, f.PCI
		}
	}
	w.devs, w.plan, w.planSeen = d, obs.Plan, true
	return d
}

// Devices is the function map for obs (tests).
func (w *Watch) Devices(obs *observe.Observation) *Devices { return w.devices(obs) }

// Judged counts the records judged since start; Stats are the judgement's
// totals.
func (w *Watch) Judged() uint64 { return w.judged }
func (w *Watch) Stats() Stats {
	if w.check == nil {
		return Stats{}
	}
	return w.check.Stats()
}

// Acknowledge is AcknowledgeReset for the kernel log: what is "kernel_log"
// or a pattern's name; ok is false for any other word (another check's).
func (w *Watch) Acknowledge(device string, port int, what, who string) (specs []event.Spec, ok bool) {
	if w.check == nil || !w.check.IsAckWord(what) {
		return nil, false
	}
	return w.check.Acknowledge(w.mem, device, port, what, who), true
}

// Section is the check's section of the state file.
func (w *Watch) Section() string { return Section }

// Restore starts the memory from the state file's section.
func (w *Watch) Restore(raw []byte) []string {
	return checks.RestoreSection(Section, raw, MemoryVersion, w.mem, func() { *w.mem = *NewMemory() }, w.mem.Validate)
}

// Marshal is the section to save.
func (w *Watch) Marshal() ([]byte, error) { return json.Marshal(w.mem) }

// Replay applies one of the check's events to the memory.
func (w *Watch) Replay(e *event.Event) {
	if e.Kind == event.KindKernelLog || e.Kind == event.KindKernelLogCleared {
		w.mem.Replay(e)
	}
}
