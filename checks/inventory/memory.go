package inventory

import (
	"fmt"
	"sort"
	"time"

	"github.com/nichealth/nichealthd/checks/latch"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology"
)

// Memory is what the inventory check remembers within one boot (the
// "inventory" section of the state file; cleared at a reboot like every
// section).
type Memory struct {
	Version int `json:"version"`
	// Functions are the raised conditions of PCI functions, by address.
	Functions latch.Set[string, Raised] `json:"functions"`
	// Seen are the functions seen on the bus this boot, by address, with
	// whether their RDMA device was monitored: one that leaves the bus
	// after that is the port check's disappearance, not a card missing
	// since the last boot.
	Seen map[string]bool `json:"seen,omitempty"`
	// Drift are the raised drift findings, by DriftKey.
	Drift latch.Set[string, Raised] `json:"drift,omitempty"`
	// Ports is the expected compute ports' condition.
	Ports PortsMemory `json:"ports"`

	// pending holds, by address, the run-time losses of functions
	// monitored this boot (seen without a usable RDMA device) not yet
	// raised (DESIGN.md difference 18): a driver or devlink reload comes
	// back within their enumerations and hold and says nothing. It lives
	// in the process only, as the port check's misses do: a restart
	// counts again.
	pending map[string]pendingLoss
}

// pendingLoss is a run-time loss waiting: the complete enumerations that
// saw it and when the first poll saw it.
type pendingLoss struct {
	Enumerations int
	Since        time.Time
}

// Raised is one raised condition: under which check, for what, since when.
type Raised struct {
	Check string    `json:"check"`
	Fault string    `json:"fault"` // unbound, other-driver, no-rdma, absent; fw_ver, board_id
	Since time.Time `json:"since"`
	// Card and Ports of a drift finding, Ports of a function whose NIC
	// was monitored this boot: its clear names the same.
	Card  string          `json:"card,omitempty"`
	Ports []event.PortRef `json:"ports,omitempty"`
}

// PortsMemory is the node's expected compute ports: since when they have
// been short (zero: not short), and whether the condition is raised.
type PortsMemory struct {
	ShortSince time.Time `json:"shortSince,omitempty"`
	Raised     bool      `json:"raised,omitempty"`
	Check      string    `json:"check,omitempty"`
}

// NewMemory returns an empty memory.
func NewMemory() *Memory {
	return &Memory{Version: MemoryVersion, Functions: map[string]Raised{}, Seen: map[string]bool{}, Drift: map[string]Raised{}}
}

// DriftKey keys a drift finding: the card and what drifted.
func DriftKey(card, what string) string { return card + " " + what }

// Validate drops entries no check could have written and lists them.
func (m *Memory) Validate() (dropped []string) {
	m.Version = MemoryVersion
	if m.Functions == nil {
		m.Functions = map[string]Raised{}
	}
	if m.Seen == nil {
		m.Seen = map[string]bool{}
	}
	if m.Drift == nil {
		m.Drift = map[string]Raised{}
	}
	dropped = m.Functions.Keep("functions", func(a string, r Raised) string {
		if !topology.IsPCIAddress(a) || !validFault(r.Fault) {
			return "not a PCI address with a known fault"
		}
		return ""
	})
	for a := range m.Seen {
		if !topology.IsPCIAddress(a) {
			dropped = append(dropped, fmt.Sprintf("seen[%q]: not a PCI address", a))
			delete(m.Seen, a)
		}
	}
	dropped = append(dropped, m.Drift.Keep("drift", func(k string, r Raised) string {
		if (r.Fault != DriftFirmware && r.Fault != DriftModel) || DriftKey(r.Card, r.Fault) != k {
			return "not a card's fw_ver or board_id finding"
		}
		return ""
	})...)
	sort.Strings(dropped)
	return dropped
}

func validFault(f string) bool {
	switch f {
	case FaultUnbound, FaultOtherDriver, FaultNoRDMA, FaultAbsent:
		return true
	}
	return false
}

// Replay applies an inventory event whose effect the saved memory may not
// include (the outbox is written before the state): its raise or clear.
func (m *Memory) Replay(e *event.Event) {
	switch e.Kind {
	case event.KindFunctionFailed, event.KindFunctionAbsent:
		if pci := e.Metadata["pci"]; topology.IsPCIAddress(pci) && validFault(e.Metadata["fault"]) {
			r := m.Functions[pci]
			if r.Since.IsZero() {
				r.Since = e.GeneratedTimestamp
			}
			r.Check, r.Fault, r.Ports = e.CheckName, e.Metadata["fault"], e.Ports()
			m.Functions.Raise(pci, r)
		}
	case event.KindFunctionOK:
		m.Functions.Clear(e.Metadata["pci"])
	case event.KindDrift:
		card, what := e.Metadata["card"], e.Metadata["drift"]
		if card != "" && (what == DriftFirmware || what == DriftModel) {
			m.Drift.Raise(DriftKey(card, what), Raised{Check: e.CheckName, Fault: what, Since: e.GeneratedTimestamp, Card: card, Ports: e.Ports()})
		}
	case event.KindDriftOK:
		m.Drift.Clear(DriftKey(e.Metadata["card"], e.Metadata["drift"]))
	case event.KindPortsShort:
		m.Ports.Raised, m.Ports.Check = true, e.CheckName
		if m.Ports.ShortSince.IsZero() {
			m.Ports.ShortSince = e.GeneratedTimestamp
		}
	case event.KindPortsOK:
		m.Ports = PortsMemory{}
	}
}
