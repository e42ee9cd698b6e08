package transceiver

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/checks/latch"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
	"github.com/nichealth/nichealthd/observe"
	"github.com/nichealth/nichealthd/topology/module"
)

// Section is the check's part of the state file.
const Section = "transceiver"

// MemoryVersion is the version of the section this build writes.
const MemoryVersion = 1

// maxPorts bounds the memory: no host has more RoCE ports than this, and
// a state file that claims more is not trusted past it.
const maxPorts = 4096

// Memory is what the check remembers across restarts: the raised
// conditions of each port (so each gets its clear) and whether the port's
// last read was taken while it was up. Ports are keyed by the port key's
// "<device>_<port>" form (latch.Port.Underscored), the form this section
// has always been written in: a state file on disk loads unchanged.
type Memory struct {
	Version int                            `json:"version"`
	Ports   latch.Set[string, *PortMemory] `json:"ports"`
}

// PortMemory is one port's raised conditions by error code.
type PortMemory struct {
	Device string                    `json:"device"`
	Port   int                       `json:"port"`
	Raised latch.Set[string, Raised] `json:"raised,omitempty"`
	// LastUp: the last read of the module was taken while the port was up.
	LastUp bool `json:"lastUp"`
}

// Raised is one active condition.
type Raised struct {
	Fatal bool      `json:"fatal"`
	Since time.Time `json:"since"`
}

// Check is the transceiver check.
type Check struct {
	enabled bool
	mem     *Memory
}

// NewCheck returns the check with empty memory.
func NewCheck() *Check { return &Check{enabled: true, mem: newMemory()} }

func newMemory() *Memory {
	return &Memory{Version: MemoryVersion, Ports: latch.Set[string, *PortMemory]{}}
}

// Configure switches the check on or off (--checks, the checks key).
func (c *Check) Configure(enabled bool) { c.enabled = enabled }

func (c *Check) Step() string     { return "transceiver" }
func (c *Check) Serves() []string { return []string{event.TransceiverCheck} }

func key(device string, port int) string { return latch.PortOf(device, port).Underscored() }

// finding is one condition the current reading implies.
type finding struct {
	code  string
	fatal bool
	what  string // the sentence: "lane 2 Rx power ... threshold ..."
	md    map[string]string
}

// Run judges the pass that finished since the last cycle.
func (c *Check) Run(cy *checks.Cycle) {
	ls := &cy.Obs.LinkStory
	if !c.enabled || !ls.New {
		return
	}
	cy.Enter(event.TransceiverCheck)
	seen := map[string]bool{}
	for i := range ls.Modules {
		r := &ls.Modules[i]
		k := key(r.Device, r.Port)
		seen[k] = true
		pm := c.mem.Ports[k]
		if pm == nil {
			if len(c.mem.Ports) >= maxPorts {
				continue
			}
			pm = &PortMemory{Device: r.Device, Port: r.Port}
			c.mem.Ports[k] = pm
			cy.Changed()
		}
		var found []finding
		if r.Err == nil {
			found = judge(r, pm.LastUp)
		}
		// A module that cannot be read keeps its conditions only while the
		// read merely failed; no module, no conditions about it.
		if r.Err != nil && !noModule(r.Err) {
			continue
		}
		c.apply(cy, pm, r, found, ls.At)
		if pm.LastUp != (r.Up && r.Err == nil) {
			pm.LastUp = r.Up && r.Err == nil
			cy.Changed()
		}
	}
	// Ports gone from the plan: their conditions end with them.
	for _, k := range c.mem.Ports.Keys() {
		if pm := c.mem.Ports[k]; !seen[k] && pm != nil {
			c.apply(cy, pm, &observe.ModuleReading{Device: pm.Device, Port: pm.Port}, nil, ls.At)
			delete(c.mem.Ports, k)
			cy.Changed()
		}
	}
}

// apply raises what is new or changed severity and clears what is gone.
func (c *Check) apply(cy *checks.Cycle, pm *PortMemory, r *observe.ModuleReading, found []finding, now time.Time) {
	byCode := map[string]finding{}
	for _, f := range found {
		byCode[f.code] = f
	}
	for _, code := range slices.Sorted(maps.Keys(byCode)) {
		f := byCode[code]
		if old, ok := pm.Raised[code]; ok && old.Fatal == f.fatal {
			continue
		}
		pm.Raised.Raise(code, Raised{Fatal: f.fatal, Since: now})
		cy.Emit(raise(r, f))
		cy.Changed()
	}
	pm.Raised.Sweep(func(code string) bool { _, ok := byCode[code]; return ok }, func(code string, _ Raised) {
		cy.Emit(cleared(pm.Device, pm.Port, code))
		cy.Changed()
	})
}

// noModule: the cage is empty or the driver reads no modules (the reader
// says so with module.ErrNoModule; a bare EOPNOTSUPP or ENODEV means the
// same).
func noModule(err error) bool {
	return errors.Is(err, module.ErrNoModule) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENODEV)
}

// thresholdsCode is the finding of a module whose own thresholds were not
// trusted: never fatal (the module's EEPROM is wrong about itself, the
// module may be fine), so it cannot drain a node.
const thresholdsCode = "module:thresholds"

// judge lists the conditions a reading implies.
func judge(r *observe.ModuleReading, lastUp bool) []finding {
	m := &r.Module
	inUse := func(l module.Lane) bool { return r.Up }
	var out []finding
	if len(m.Implausible) > 0 {
		out = append(out, finding{code: thresholdsCode, what: "thresholds implausible, ignored: " + strings.Join(m.Implausible, "; "),
			md: map[string]string{"quantity": "thresholds", "level": "warning"}})
	}
	for _, e := range module.Excursions(*m, inUse) {
		code := "module:" + string(e.Quantity)
		if e.Lane > 0 {
			code += fmt.Sprintf(":lane%d", e.Lane)
		}
		md := map[string]string{"quantity": string(e.Quantity), "value": e.Quantity.Format(e.Value),
			"threshold": e.Quantity.Format(e.Threshold), "level": e.Level.String()}
		if e.Lane > 0 {
			md["lane"] = fmt.Sprint(e.Lane)
		}
		out = append(out, finding{code: code, fatal: e.Level == module.Alarm, what: e.String(), md: md})
	}
	if !r.Up || !lastUp {
		return out
	}
	for _, l := range m.Lanes {
		if l.Unused() {
			continue
		}
		for _, f := range []struct {
			on         bool
			code, what string
		}{
			{l.RxLOS, "rxLOS", "Rx loss of signal"}, {l.RxLOL, "rxLOL", "Rx loss of lock"},
			{l.TxLOS, "txLOS", "Tx loss of signal"}, {l.TxLOL, "txLOL", "Tx loss of lock"}, {l.TxFault, "txFault", "Tx fault"},
		} {
			if f.on {
				out = append(out, finding{code: fmt.Sprintf("module:%s:lane%d", f.code, l.Lane), fatal: true,
					what: fmt.Sprintf("lane %d latched %s while the port was up", l.Lane, f.what),
					md:   map[string]string{"quantity": f.code, "lane": fmt.Sprint(l.Lane), "level": "alarm"}})
			}
		}
	}
	return out
}

// moduleName is how a message names the module.
func moduleName(m *module.Module) string {
	var parts []string
	for _, s := range []string{m.Vendor, m.PartNumber} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	name := m.Type
	if len(parts) > 0 {
		name += " " + strings.Join(parts, " ")
	}
	if m.Serial != "" {
		name += " serial " + m.Serial
	}
	return name
}

func raise(r *observe.ModuleReading, f finding) event.Spec {
	m := &r.Module
	fix := "clean the fiber's connectors, reseat the module"
	if m.Serial != "" {
		fix += " or replace the module (serial " + m.Serial + ")"
	} else {
		fix += " or replace it"
	}
	if f.code == thresholdsCode {
		fix = "nothing is judged against those thresholds; the module's other readings are. Ask the vendor to correct the module's EEPROM, or replace the module"
		if m.Serial != "" {
			fix += " (serial " + m.Serial + ")"
		}
		fix += " at the next maintenance"
	}
	if strings.HasPrefix(f.code, "module:temperature") {
		fix = "check the node's airflow and the cage's cooling; if it persists replace the module"
		if m.Serial != "" {
			fix += " (serial " + m.Serial + ")"
		}
	}
	md := map[string]string{"netdev": r.NetDev, "module": m.Type, "vendor": m.Vendor, "partNumber": m.PartNumber, "serial": m.Serial, "finding": f.code}
	for k, v := range f.md {
		md[k] = v
	}
	return event.Spec{
		Kind: event.KindTransceiver, CheckName: event.TransceiverCheck, IsFatal: f.fatal,
		Message: fmt.Sprintf("RoCE port %s port %d (%s) transceiver %s: %s. Fix: %s",
			r.Device, r.Port, r.NetDev, moduleName(m), f.what, fix),
		Device: r.Device, Port: r.Port, ErrorCode: []string{f.code}, Metadata: md,
		Condition: condition.OfFinding(r.Device, r.Port, f.code),
	}
}

// cleared is the event that ends a finding: the module reads within
// its thresholds again.
func cleared(device string, port int, code string) event.Spec {
	return event.Spec{
		Kind: event.KindTransceiverOK, CheckName: event.TransceiverCheck, IsHealthy: true,
		Message: fmt.Sprintf("RoCE port %s port %d transceiver: %s is within the module's thresholds again", device, port, code),
		Device:  device, Port: port, ErrorCode: []string{code}, Metadata: map[string]string{"finding": code},
		Condition: condition.OfFinding(device, port, code),
	}
}

// Section, Restore, Marshal and Replay are the check's memory
// (checks.Memory).
func (c *Check) Section() string { return Section }

func (c *Check) Restore(raw []byte) []string {
	return checks.RestoreSection(Section, raw, MemoryVersion, c.mem, func() { *c.mem = *newMemory() }, c.validate)
}

func (c *Check) validate() []string {
	c.mem.Version = MemoryVersion
	if c.mem.Ports == nil {
		c.mem.Ports = latch.Set[string, *PortMemory]{}
	}
	var raised []string
	dropped := c.mem.Ports.Keep("transceiver.ports", func(k string, pm *PortMemory) string {
		if pm == nil || pm.Device == "" || pm.Port < 1 || key(pm.Device, pm.Port) != k || len(c.mem.Ports) > maxPorts {
			return "not a port this check could have written"
		}
		raised = append(raised, pm.Raised.KeepKeys(fmt.Sprintf("transceiver.ports[%q].raised", k), "unknown finding",
			func(code string) bool { return strings.HasPrefix(code, "module:") })...)
		return ""
	})
	dropped = append(dropped, raised...)
	sort.Strings(dropped)
	return dropped
}

func (c *Check) Marshal() ([]byte, error) { return json.Marshal(c.mem) }

// Replay applies one of the check's events whose effect the saved memory
// may lack (the outbox is written before the state).
func (c *Check) Replay(e *event.Event) {
	if e.CheckName != event.TransceiverCheck || len(e.ErrorCode) != 1 {
		return
	}
	k := key(e.Device(), atoi(e.Port()))
	pm := c.mem.Ports[k]
	switch e.Kind {
	case event.KindTransceiver:
		if pm == nil {
			if len(c.mem.Ports) >= maxPorts {
				return
			}
			pm = &PortMemory{Device: e.Device(), Port: atoi(e.Port())}
			c.mem.Ports[k] = pm
		}
		pm.Raised.Raise(e.ErrorCode[0], Raised{Fatal: e.IsFatal, Since: e.GeneratedTimestamp})
	case event.KindTransceiverOK:
		if pm != nil {
			pm.Raised.Clear(e.ErrorCode[0])
		}
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}
