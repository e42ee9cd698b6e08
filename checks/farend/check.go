package farend

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/checks/latch"
	"github.com/nichealth/nichealthd/config/countertable"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
	"github.com/nichealth/nichealthd/mad"
	"github.com/nichealth/nichealthd/mad/farend"
)

// CheckName is the check's name on the wire and in --checks.
const CheckName = event.FarEndCheck

// Section is the check's section of the state file.
const Section = "farEnd"

// LostName names the node-level condition of a helper that crashed or
// hung (entity NICHealthCheck farEnd).
const LostName = "farEnd"

// SaturatedCode is the error code of a far-end field's saturation.
func SaturatedCode(field string) string { return "peer-saturated:" + field }

// Config is what the check takes from the configuration.
type Config struct {
	// On: [farEnd] enabled and the check selected.
	On bool
	// Rows are the judged rows (countertable.FarEndTable).
	Rows []countertable.FarEndRow
	// XmitWaitBytesPerTick converts PortXmitWait ticks to bytes, for a
	// congestion row.
	XmitWaitBytesPerTick float64
}

// Check is the far-end check.
type Check struct {
	cfg     Config
	mem     *Memory
	seenGen uint64
	// seen is the last reading judged per port (its Seq): each once.
	seen map[latch.Port]uint64
	// local follows the local ports' link-down episodes, so a far-end
	// link-down inside one is that episode seen from the switch.
	local episodes
}

// NewCheck returns the check with empty memory.
func NewCheck() *Check { return &Check{mem: NewMemory(), seen: map[latch.Port]uint64{}} }

func (*Check) Step() string     { return "far-end" }
func (*Check) Serves() []string { return []string{CheckName} }

// Memory is what the check remembers.
func (c *Check) Memory() *Memory { return c.mem }

// Configure applies the configuration; a row no longer judged, or the
// whole check switched off, clears what it raised.
func (c *Check) Configure(cfg Config) []event.Spec {
	before := map[string]string{}
	for _, r := range c.cfg.Rows {
		before[r.Def.Name] = r.Def.Fingerprint()
	}
	c.cfg = cfg
	redefined := map[string]bool{}
	for _, r := range cfg.Rows {
		redefined[r.Def.Name] = before[r.Def.Name] != "" && before[r.Def.Name] != r.Def.Fingerprint()
	}
	specs := c.reconcile(redefined)
	// A new configuration judges the next reading afresh.
	c.seenGen = 0
	return specs
}

// Resume reconciles the memory restored from the state file with the
// configuration, as a reload does: a row switched off, or the far end as
// a whole, while the daemon was stopped must not keep its latch (or its
// saturation, or the helper's condition) forever, since nothing judges it
// again to clear it.
func (c *Check) Resume() []event.Spec { return c.reconcile(nil) }

// reconcile clears what the configuration no longer judges and drops the
// windows of rows no longer judged or redefined.
func (c *Check) reconcile(redefined map[string]bool) []event.Spec {
	cfg := c.cfg
	judged := map[string]bool{UnstableRow: true}
	for _, r := range cfg.Rows {
		judged[r.Def.Name] = true
		judged[SaturatedCode(r.Field)] = true
	}
	var specs []event.Spec
	for _, k := range c.mem.Ports.Keys() {
		pm := c.mem.Ports[k]
		if pm == nil {
			continue
		}
		dev, port := k.Device, k.Port
		for _, row := range slices.Sorted(maps.Keys(pm.Latched)) {
			if !cfg.On || !judged[row] {
				specs = append(specs, c.recovered(dev, port, pm, row, "no-longer-judged", "it is no longer judged ([farEnd] configuration)"))
				delete(pm.Latched, row)
			}
		}
		for _, f := range slices.Sorted(maps.Keys(pm.Saturated)) {
			if !cfg.On || !judged[SaturatedCode(f)] {
				specs = append(specs, c.unsaturated(dev, port, pm, f, "it is no longer judged"))
				delete(pm.Saturated, f)
			}
		}
		for row := range pm.Windows {
			// A window held for another rule (another unit or
			// threshold) measured something else: it starts again at
			// the next read, as a local counter's does after a reload.
			if !judged[row] || redefined[row] {
				delete(pm.Windows, row)
			}
		}
		for f := range pm.SaturationAcked {
			if !judged[SaturatedCode(f)] {
				delete(pm.SaturationAcked, f)
			}
		}
	}
	if !cfg.On && c.mem.Lost != nil {
		specs = append(specs, c.restored("the far end is no longer read ([farEnd] enabled = false or the check is off)"))
	}
	return specs
}

// Run judges the far end's latest reading, once per reading.
func (c *Check) Run(cy *checks.Cycle) {
	if !c.cfg.On {
		return
	}
	c.local.observe(cy.Obs)
	rd := cy.Obs.FarEnd
	if rd == nil || rd.Gen == c.seenGen {
		return
	}
	c.seenGen = rd.Gen
	cy.Enter(CheckName)
	if specs := c.judgeHelper(rd); len(specs) > 0 {
		cy.Emit(specs...)
		cy.Changed()
	}
	for i := range rd.Ports {
		p := &rd.Ports[i]
		specs, changed := c.judgePort(p, rd.At, portRate(cy, p.Device, p.Port))
		cy.Emit(specs...)
		if changed {
			cy.Changed()
		}
	}
	cy.ViewChanged()
}

func portRate(cy *checks.Cycle, dev string, port int) float64 {
	for _, p := range cy.Obs.Ports {
		if p.Device.Name == dev && p.Port.Num == port {
			return p.RateGbps
		}
	}
	return 0
}

// judgeHelper raises the monitoring condition of a helper that crashed or
// hung, and clears it when it answers again. A helper that cannot run on
// this host at all is no condition: the reader says it once.
func (c *Check) judgeHelper(rd *farend.PeerReading) []event.Spec {
	switch h := rd.Helper; {
	case h.Health == mad.Restarting && c.mem.Lost == nil:
		c.mem.Lost = &Lost{Since: rd.At, Reason: h.Reason}
		return []event.Spec{{
			Kind: event.KindFarEndLost, CheckName: CheckName, Check: LostName,
			Message:   "The far end of the InfiniBand ports is not read: " + h.Reason + "; it is started again after a backoff",
			ErrorCode: []string{string(event.KindFarEndLost)}, Metadata: map[string]string{"reason": h.Reason},
			Condition: condition.OfNode(LostName),
		}}
	case h.Health == mad.Running && c.mem.Lost != nil:
		return []event.Spec{c.restored(fmt.Sprintf("nichealth-mad answers again (%d started so far)", h.Starts))}
	}
	return nil
}

func (c *Check) restored(why string) event.Spec {
	since := c.mem.Lost.Since
	c.mem.Lost = nil
	return event.Spec{
		Kind: event.KindFarEndRestored, CheckName: CheckName, Check: LostName, IsHealthy: true,
		Message:   "The far end of the InfiniBand ports is read again: " + why,
		ErrorCode: []string{string(event.KindFarEndLost)}, Metadata: map[string]string{"lostSince": since.UTC().Format(time.RFC3339), "why": why},
		Condition: condition.OfNode(LostName),
	}
}

// Rename moves what the check remembers of a device to its new name.
func (c *Check) Rename(old, nw string) {
	c.mem.Ports.Rekey(func(k latch.Port) (latch.Port, bool) { return k.Renamed(old, nw) })
	c.local.rename(old, nw)
	// Only the renamed device's readings start again (the reader reads it
	// under its new name, a new sequence): forgetting every port's would
	// make each one's next read a first one, whose per-second windows
	// restart unjudged, and a burst on any other cable would go unseen.
	for k := range c.seen {
		if k.Device == old {
			delete(c.seen, k)
		}
	}
}

// Section is the check's section of the state file.
func (c *Check) Section() string { return Section }

// Restore starts the memory from the state file's section.
func (c *Check) Restore(raw []byte) []string {
	return checks.RestoreSection(Section, raw, MemoryVersion, c.mem, func() { *c.mem = *NewMemory() }, c.mem.Validate)
}

// Marshal is the section to save.
func (c *Check) Marshal() ([]byte, error) { return json.Marshal(c.mem) }
