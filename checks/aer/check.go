package aer

import (
	"encoding/json"
	"sort"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/observe"
	"github.com/nichealth/nichealthd/topology/aerfile"
)

// Section is the AER check's section of the state file.
const Section = "pcieAER"

// AckCounter is the counter name AcknowledgeReset takes for the PCIe AER
// conditions on a port's path (not a counter-table name).
const AckCounter = "pcie_aer"

// Config is [pcieAER].
type Config struct {
	Enabled    bool
	Thresholds Thresholds
}

// Check judges the PCIe AER counters of every function on the monitored
// NICs' paths (step "pcie-aer", under PCIeAERCheck in the boundary; its
// events carry the degradation check of the first NIC below).
type Check struct {
	cfg Config
	mem *Memory
	// fns are the judged functions of the plan the check last saw, in the
	// observation's order.
	fns  []*Function
	plan uint64
	seen bool
}

// NewCheck returns the check with empty memory.
func NewCheck() *Check { return &Check{mem: NewMemory()} }

// Configure applies [pcieAER].
func (c *Check) Configure(cfg Config) { c.cfg = cfg }

// Memory is what the check remembers.
func (c *Check) Memory() *Memory { return c.mem }

func (*Check) Step() string { return "pcie-aer" }

func (*Check) Serves() []string { return []string{event.PCIeAERCheck} }

// Run judges the AER reading of every function read this cycle. When the
// plan changed it first clears the conditions of functions no longer on a
// monitored NIC's path (the NIC was removed or excluded, AER was switched
// off), so no condition outlives what it is about.
func (c *Check) Run(cy *checks.Cycle) {
	obs := cy.Obs
	cy.Enter(event.PCIeAERCheck)
	if !c.seen || c.plan != obs.Plan {
		c.seen, c.plan = true, obs.Plan
		c.fns = c.fns[:0]
		planned := map[string]bool{}
		for _, a := range obs.AER {
			c.fns = append(c.fns, &Function{Address: a.Address, Label: a.Label, Check: a.Check, Ports: a.Ports})
			planned[a.Address] = true
		}
		if specs := c.clearUnplanned(planned); len(specs) > 0 {
			cy.Emit(specs...)
			cy.Changed()
		}
	}
	if !obs.AERTick {
		return
	}
	for i, a := range obs.AER {
		if i >= len(c.fns) || !a.Readable {
			continue
		}
		ss, ch := c.fns[i].Judge(c.mem, &a.Reading, obs.Now, c.cfg.Thresholds)
		cy.Emit(ss...)
		if ch {
			cy.Changed()
			cy.ViewChanged() // the totals the snapshot shows
		}
	}
}

// clearUnplanned clears the raised conditions of functions not planned.
func (c *Check) clearUnplanned(planned map[string]bool) []event.Spec {
	why := "no monitored NIC below it any more"
	if !c.cfg.Enabled {
		why = "PCIe AER monitoring was switched off (pcieAER.enabled = false)"
	}
	addrs := make([]string, 0, len(c.mem.Functions))
	for addr := range c.mem.Functions {
		addrs = append(addrs, addr)
	}
	sort.Strings(addrs)
	var out []event.Spec
	for _, addr := range addrs {
		if fm := c.mem.Functions[addr]; planned[addr] || fm == nil || len(fm.Raised) == 0 {
			continue
		}
		f := Function{Address: addr, Label: "PCI function"}
		out = append(out, f.ClearAll(c.mem, why)...)
	}
	return out
}

// Acknowledge clears the uncorrectable AER conditions of every function
// on the path of device (D-Bus AcknowledgeReset with counter AckCounter);
// none when no such condition is raised there.
func (c *Check) Acknowledge(device, who string) []event.Spec {
	var out []event.Spec
	for _, f := range c.fns {
		for _, pr := range f.Ports {
			if pr.Device == device {
				out = append(out, f.Acknowledge(c.mem, who)...)
				break
			}
		}
	}
	return out
}

// Total is one PCI function's total of one AER class as the views show it.
type Total struct {
	PCI      string
	Severity string // correctable, nonfatal, fatal
	Total    uint64
	// RootPort: a root port's aer_rootport_total_err_* (what it received
	// from every device below it), not the function's own counters.
	RootPort bool
}

// Totals is what the AER check last counted on each function of the plan
// with the classes it has files for, and the root ports' totals.
func (c *Check) Totals(obs []*observe.AERFunction) []Total {
	var out []Total
	for _, a := range obs {
		fm := c.mem.Functions[a.Address] // nil before the first read
		for cl := aerfile.Class(0); cl < aerfile.NumClasses; cl++ {
			sev := cl.String()
			if a.Files[cl] && fm != nil {
				out = append(out, Total{PCI: a.Address, Severity: sev, Total: fm.Totals[cl]})
			}
			if a.RootOK[cl] {
				out = append(out, Total{PCI: a.Address, Severity: sev, Total: a.RootTotal[cl], RootPort: true})
			}
		}
	}
	return out
}

// Section is the check's section of the state file.
func (c *Check) Section() string { return Section }

// Restore starts the memory from the state file's section.
func (c *Check) Restore(raw []byte) []string {
	return checks.RestoreSection(Section, raw, MemoryVersion, c.mem, func() { *c.mem = *NewMemory() }, c.mem.Validate)
}

// Marshal is the section to save.
func (c *Check) Marshal() ([]byte, error) { return json.Marshal(c.mem) }

// Replay applies one of the check's events to the memory.
func (c *Check) Replay(e *event.Event) { c.mem.Replay(e) }
