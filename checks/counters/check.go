package counters

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/nichealth/nichealthd/config/countertable"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
	"github.com/nichealth/nichealthd/observe"
)

// Section is the counter check's section of the state file.
const Section = "counters"

// Config is what the counter checks take from the configuration.
type Config struct {
	// Enabled is counter detection as a whole (counterDetection.enabled).
	Enabled bool
	// Table is the whole counter table, disabled rows included: a latch
	// of a row disabled or removed is resolved against it.
	Table []countertable.Definition
	// XmitWaitBytesPerTick converts port_xmit_wait ticks to bytes.
	XmitWaitBytesPerTick float64
}

// Plan is the rows the read plan reads: the enabled rows of the table,
// in order (empty when counter detection is off). Samples of the
// observation name their rows by index into it.
func (c Config) Plan() []countertable.Definition {
	if !c.Enabled {
		return nil
	}
	return PlanFor(c.Table)
}

// Check is the counter checks (InfiniBandDegradationCheck,
// EthernetDegradationCheck, as --checks and the panic boundary name
// them): every counter sampled on the 1 s tick, judged by its row's
// threshold (seed 10.4), with its latches, windows and snapshots
// remembered across restarts. Fatal breaches are reported under the state
// check of the port's link layer (seed 11.1), the rest under the
// degradation check.
type Check struct {
	cfg  Config
	defs []countertable.Definition // Config.Plan()
	mem  *Memory
	eval *Evaluator
	// ratesSeen is the evaluator's RateChanges at the last cycle: a
	// computed rate that moved changes what the verdict shows.
	ratesSeen uint64
	viewDefs  []countertable.Definition // scratch of View
}

// NewCheck returns the check with empty memory. fresh says the process
// starts without a usable state file (its baselines say so).
func NewCheck(log *slog.Logger, fresh bool) *Check {
	return &Check{mem: NewMemory(), eval: NewEvaluator(Options{Logger: log, FreshStart: fresh})}
}

// Configure applies the configuration and resolves, with an event that
// says why, the latch of every counter that left the table or was
// disabled; windows and latches of unchanged counters carry over.
func (c *Check) Configure(cfg Config) []event.Spec {
	c.cfg, c.defs = cfg, cfg.Plan()
	c.eval.SetXmitWaitBytesPerTick(cfg.XmitWaitBytesPerTick)
	return c.eval.Reconcile(c.mem, c.all())
}

// Resume reconciles the restored memory with the table (a counter
// disabled or removed while the daemon was down must not keep its latch
// forever), then moves the fatal latches an older build raised under a
// degradation check to the state check (seed 11.1, DESIGN.md difference 2).
func (c *Check) Resume() []event.Spec {
	return append(c.eval.Reconcile(c.mem, c.all()), c.moveFatalLatches()...)
}

// all is the table latches are reconciled against: none when counter
// detection is off.
func (c *Check) all() []countertable.Definition {
	if !c.cfg.Enabled {
		return nil
	}
	return c.cfg.Table
}

// Memory is what the check remembers.
func (c *Check) Memory() *Memory { return c.mem }

// Evaluator is the check's evaluator (its in-process side).
func (c *Check) Evaluator() *Evaluator { return c.eval }

func (*Check) Step() string { return "counters" }

func (*Check) Serves() []string {
	return []string{event.InfiniBandDegradationCheck, event.EthernetDegradationCheck}
}

// Run judges the counters a counter tick sampled, each sample for every
// row that reads it, per port under the degradation check of its link
// layer. Devices that came back start from a fresh baseline (DESIGN.md
// difference 11).
func (c *Check) Run(cy *checks.Cycle) {
	obs := cy.Obs
	for _, dev := range obs.Returned {
		c.eval.Rebaseline(dev)
	}
	if obs.CounterTick {
		c.judge(cy)
	}
	if r := c.eval.RateChanges(); r != c.ratesSeen {
		c.ratesSeen = r
		cy.ViewChanged()
	}
}

func (c *Check) judge(cy *checks.Cycle) {
	obs := cy.Obs
	first := obs.FirstTick
	baseline := first && obs.Boot.Baseline()
	if first {
		// The first tick's per-counter baselines go out one per port.
		mark := cy.Mark()
		defer cy.Rewrite(mark, FoldBaselines)
	}
	for _, p := range obs.Ports {
		check := event.DegradationCheckFor(p.Port.LinkLayer)
		if cy.Failed(check) {
			continue
		} else if len(p.Samples) > 0 {
			cy.Enter(check)
		}
		for si := range p.Samples {
			s := &p.Samples[si]
			for _, di := range s.Rows {
				if di >= len(c.defs) {
					continue
				}
				if s.Unchanged && !first && c.defs[di].ThresholdType == countertable.TypeDelta {
					// A delta counter whose value did not move since the
					// last tick has delta 0, which cannot breach (threshold
					// >= 0), reset, or change a latch: seed 10.4 would do
					// nothing with it, so neither do we. Its rate over the
					// tick is 0, which the views show.
					c.eval.Quiet(p.Device.Name, p.Port.Num, c.defs[di].Name)
					continue
				}
				ss, ch := c.eval.Evaluate(c.mem, Sample{
					Device: p.Device.Name, Port: p.Port.Num, LinkLayer: p.Port.LinkLayer,
					Def: &c.defs[di], Value: s.Value, Err: s.Err, File: s.Path,
					PortRateGbps: p.RateGbps, Now: s.At, Since: s.Since,
				}, baseline)
				if ch {
					cy.Changed()
				}
				cy.Emit(ss...)
			}
		}
	}
}

// View describes a port's counters as the views show them: the rows that
// apply to its link layer, in table order.
func (c *Check) View(p *observe.Port) []CounterView {
	defs := c.viewDefs[:0]
	for _, def := range c.defs {
		if def.AppliesTo(p.Port.LinkLayer) {
			defs = append(defs, def)
		}
	}
	c.viewDefs = defs
	return c.eval.View(c.mem, p.Device.Name, p.Port.Num, defs)
}

// Acknowledge is AcknowledgeReset for a counter (or, with counter "",
// every latched counter of the port); see Evaluator.Acknowledge.
func (c *Check) Acknowledge(device string, port int, counter string, now time.Time, who string) ([]event.Spec, error) {
	return c.eval.Acknowledge(c.mem, device, port, counter, now, who)
}

// Rename moves what the check remembers of a device to its new name.
func (c *Check) Rename(old, nw string) { c.mem.Rename(old, nw) }

// Section is the check's section of the state file.
func (c *Check) Section() string { return Section }

// Restore starts the memory from the state file's section.
func (c *Check) Restore(raw []byte) []string {
	return checks.RestoreSection(Section, raw, MemoryVersion, c.mem, func() { *c.mem = *NewMemory() }, c.mem.Validate)
}

// Marshal is the section to save.
func (c *Check) Marshal() ([]byte, error) { return json.Marshal(c.mem) }

// Replay applies one of the check's events to the memory.
func (c *Check) Replay(e *event.Event) { c.mem.Replay(e, c.cfg.Table) }

// Restate says, as events, the breaches the memory holds latched (a state
// file written before the health model).
func (c *Check) Restate() []checks.Restated {
	var out []checks.Restated
	for k, fl := range c.mem.BreachFlags {
		dev, port, name, ok := ParseKey(k)
		if !ok || !fl.Breached {
			continue
		}
		out = append(out, checks.Restated{Since: fl.Since, Spec: event.Spec{Kind: event.KindCounterBreach, CheckName: fl.CheckName, IsFatal: fl.IsFatal,
			Device: dev, Port: port, ErrorCode: []string{name}, Metadata: map[string]string{"counter": name},
			Message:   fmt.Sprintf("Port %s port %d: %s breach latched", dev, port, name),
			Condition: condition.OfCounter(dev, port, name)}})
	}
	return out
}
