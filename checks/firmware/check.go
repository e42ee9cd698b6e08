package firmware

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/checks/latch"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
	"github.com/nichealth/nichealthd/observe"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/devlink"
)

// Section is the check's part of the state file.
const Section = "firmwareHealth"

// MemoryVersion is the version of the section this build writes.
const MemoryVersion = 1

// maxFunctions and maxReporters bound the memory whatever devlink lists.
const (
	maxFunctions = 4096
	maxReporters = 64
)

// ActivationFinding is the finding of firmware flashed but not running.
const ActivationFinding = "firmware-activation-pending"

// Memory is per PCI function: each reporter's last error count and the
// raised findings.
type Memory struct {
	Version   int                                `json:"version"`
	Functions latch.Set[string, *FunctionMemory] `json:"functions"`
}

// FunctionMemory is one function's.
type FunctionMemory struct {
	Errors map[string]uint64            `json:"errors,omitempty"`
	Raised latch.Set[string, time.Time] `json:"raised,omitempty"`
}

// Check is the firmware health check.
type Check struct {
	enabled bool
	mem     *Memory
}

// NewCheck returns the check with empty memory.
func NewCheck() *Check { return &Check{enabled: true, mem: newMemory()} }

func newMemory() *Memory {
	return &Memory{Version: MemoryVersion, Functions: latch.Set[string, *FunctionMemory]{}}
}

// Configure switches the check on or off.
func (c *Check) Configure(enabled bool) { c.enabled = enabled }

func (c *Check) Step() string     { return "firmware-health" }
func (c *Check) Serves() []string { return []string{event.FirmwareHealthCheck} }

// finding is one condition a pass implies for a function.
type finding struct {
	name  string // "devlink:fw_fatal", ActivationFinding
	fatal bool
	what  string
	fix   string
	md    map[string]string
}

// Run judges the pass that finished since the last cycle.
func (c *Check) Run(cy *checks.Cycle) {
	ls := &cy.Obs.LinkStory
	if !c.enabled || !ls.New || ls.DevlinkErr != nil {
		return
	}
	cy.Enter(event.FirmwareHealthCheck)
	ports := monitoredPorts(cy.Obs.Ports)
	byPCI := map[string][]devlink.Reporter{}
	for _, r := range ls.Reporters {
		if r.Device.Bus == "pci" && len(byPCI[r.Device.Name]) < maxReporters {
			byPCI[r.Device.Name] = append(byPCI[r.Device.Name], r)
		}
	}
	infos := map[string]devlink.Info{}
	for _, in := range ls.Infos {
		if in.Device.Bus == "pci" {
			infos[in.Device.Name] = in
		}
	}
	for _, pci := range slices.Sorted(maps.Keys(ports)) {
		fm := c.mem.Functions[pci]
		if fm == nil {
			if len(c.mem.Functions) >= maxFunctions {
				continue
			}
			fm = &FunctionMemory{Errors: map[string]uint64{}}
			c.mem.Functions[pci] = fm
			cy.Changed()
		}
		var found []finding
		for _, r := range byPCI[pci] {
			name := "devlink:" + r.Name
			if r.HasPort {
				name = fmt.Sprintf("devlink:%s:port%d", r.Name, r.Port)
			}
			prev, had := fm.Errors[name]
			moved := had && r.ErrorCount > prev
			if !had || r.ErrorCount != prev {
				fm.Errors[name] = r.ErrorCount
				cy.Changed()
			}
			if !r.Error && !moved {
				continue
			}
			found = append(found, reporterFinding(pci, name, r, r.ErrorCount-prev))
		}
		if in, ok := infos[pci]; ok {
			if running, stored, pending := in.ActivationPending(); pending {
				what, fix, direction := fmt.Sprintf("firmware activation pending: %s is flashed, %s runs", stored, running),
					"reset the function (mlxfwreset) or reboot to run it", "upgrade"
				if in.Rollback() {
					// Compared as versions: 28.9 after 28.10 is a rollback,
					// whatever the strings' order.
					what += ": a rollback to an older firmware"
					fix = "check the older image was meant (mlxfwmanager --query), then reset the function or reboot to run it"
					direction = "rollback"
				}
				found = append(found, finding{name: ActivationFinding, what: what, fix: fix,
					md: map[string]string{"running": running, "stored": stored, "direction": direction}})
			}
		}
		c.apply(cy, pci, fm, ports[pci], found, ls.At)
	}
	// Functions no longer monitored: their conditions end.
	for _, pci := range c.mem.Functions.Keys() {
		if fm := c.mem.Functions[pci]; ports[pci] == nil && fm != nil {
			c.apply(cy, pci, fm, nil, nil, ls.At)
			delete(c.mem.Functions, pci)
			cy.Changed()
		}
	}
}

func reporterFinding(pci, name string, r devlink.Reporter, delta uint64) finding {
	var what string
	switch {
	case r.Error:
		what = fmt.Sprintf("devlink health reporter %s is in error state (errors %d, recovered %d)", r.Name, r.ErrorCount, r.RecoverCount)
	default:
		what = fmt.Sprintf("devlink health reporter %s reported %d new error(s) and recovered (errors %d, recovered %d)", r.Name, delta, r.ErrorCount, r.RecoverCount)
	}
	if !r.LastDump.IsZero() {
		what += ", last dump " + r.LastDump.UTC().Format(time.RFC3339)
	}
	fix := fmt.Sprintf("read it with devlink health diagnose pci/%s reporter %s", pci, r.Name)
	if r.Name == "fw_fatal" {
		fix = fmt.Sprintf("the firmware hit an unrecoverable error: save devlink health dump show pci/%s reporter fw_fatal, then reset the function or reboot", pci)
	}
	md := map[string]string{"reporter": r.Name, "errorCount": fmt.Sprint(r.ErrorCount), "recoverCount": fmt.Sprint(r.RecoverCount)}
	if !r.LastDump.IsZero() {
		md["lastDump"] = r.LastDump.UTC().Format(time.RFC3339)
	}
	return finding{name: name, fatal: r.Name == "fw_fatal", what: what, fix: fix, md: md}
}

// apply raises new findings (or a changed severity) and clears gone ones.
func (c *Check) apply(cy *checks.Cycle, pci string, fm *FunctionMemory, ports []event.PortRef, found []finding, now time.Time) {
	seen := map[string]bool{}
	for _, f := range found {
		seen[f.name] = true
		if fm.Raised.Has(f.name) {
			continue
		}
		fm.Raised.Raise(f.name, now)
		md := map[string]string{"pci": pci, "finding": f.name}
		for k, v := range f.md {
			md[k] = v
		}
		cy.Emit(event.Spec{
			Kind: event.KindFirmwareHealth, CheckName: event.FirmwareHealthCheck, IsFatal: f.fatal, Ports: ports,
			Message:   fmt.Sprintf("NIC function %s: %s. Fix: %s", pci, f.what, f.fix),
			ErrorCode: []string{f.name}, Metadata: md,
			Condition: condition.OfPCI(pci, f.name),
		})
		cy.Changed()
	}
	fm.Raised.Sweep(func(name string) bool { return seen[name] }, func(name string, _ time.Time) {
		cy.Emit(event.Spec{
			Kind: event.KindFirmwareHealthOK, CheckName: event.FirmwareHealthCheck, IsHealthy: true, Ports: ports,
			Message:   fmt.Sprintf("NIC function %s: %s is over", pci, strings.TrimPrefix(name, "devlink:")),
			ErrorCode: []string{name}, Metadata: map[string]string{"pci": pci, "finding": name},
			Condition: condition.OfPCI(pci, name),
		})
		cy.Changed()
	})
}

// monitoredPorts maps each monitored function's PCI address to its
// monitored ports.
func monitoredPorts(ports []*observe.Port) map[string][]event.PortRef {
	out := map[string][]event.PortRef{}
	for _, p := range ports {
		if a := strings.ToLower(p.Device.PCIAddress); a != "" {
			out[a] = append(out[a], p.Key())
		}
	}
	return out
}

// Section, Restore, Marshal and Replay are the check's memory.
func (c *Check) Section() string { return Section }

func (c *Check) Restore(raw []byte) []string {
	return checks.RestoreSection(Section, raw, MemoryVersion, c.mem, func() { *c.mem = *newMemory() }, c.validate)
}

func (c *Check) validate() []string {
	c.mem.Version = MemoryVersion
	if c.mem.Functions == nil {
		c.mem.Functions = latch.Set[string, *FunctionMemory]{}
	}
	return c.mem.Functions.Keep("firmwareHealth.functions", func(pci string, fm *FunctionMemory) string {
		if fm == nil || !topology.IsPCIAddress(pci) || len(c.mem.Functions) > maxFunctions || len(fm.Errors) > maxReporters || len(fm.Raised) > maxReporters+1 {
			return "not a function this check could have written"
		}
		if fm.Errors == nil {
			fm.Errors = map[string]uint64{}
		}
		return ""
	})
}

func (c *Check) Marshal() ([]byte, error) { return json.Marshal(c.mem) }

// Replay applies one of the check's events the saved memory may lack.
func (c *Check) Replay(e *event.Event) {
	pci, name := e.Metadata["pci"], e.Metadata["finding"]
	if e.CheckName != event.FirmwareHealthCheck || pci == "" || name == "" {
		return
	}
	fm := c.mem.Functions[pci]
	if fm == nil {
		if len(c.mem.Functions) >= maxFunctions || e.Kind != event.KindFirmwareHealth {
			return
		}
		fm = &FunctionMemory{Errors: map[string]uint64{}}
		c.mem.Functions[pci] = fm
	}
	switch e.Kind {
	case event.KindFirmwareHealth:
		fm.Raised.Raise(name, e.GeneratedTimestamp)
	case event.KindFirmwareHealthOK:
		fm.Raised.Clear(name)
	}
}
