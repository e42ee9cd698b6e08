package roce

import (
	"fmt"
	"time"

	"github.com/nichealth/nichealthd/checks/latch"
)

// Section is the check's section of the state file.
const Section = "roce"

// MemoryVersion is the version of the section this build writes.
const MemoryVersion = 1

// MaxPorts bounds the ports remembered: a host has a few dozen RoCE
// ports; a state file claiming more is cut where entries are added.
const MaxPorts = 1024

// Memory is what the check keeps across restarts: each port's window in
// progress (its start and the counters then) and the classes it is in.
// After a reboot the daemon clears every section.
type Memory struct {
	Version int                                `json:"version"`
	Ports   latch.Set[latch.Port, *PortMemory] `json:"ports"`
}

// PortMemory is one RoCE port.
type PortMemory struct {
	// Start is when the window in progress started; Values the signals
	// then (Have says which were read).
	Start  time.Time          `json:"start"`
	Have   set                `json:"have"`
	Values [NumSignals]uint64 `json:"values"`
	// Classes are the classes the port is in, with what raised them.
	Classes latch.Set[string, Raised] `json:"classes,omitempty"`
}

// Raised is one class a port is in.
type Raised struct {
	Since    time.Time `json:"since"`
	Evidence string    `json:"evidence,omitempty"`
}

// NewMemory returns an empty memory.
func NewMemory() *Memory {
	return &Memory{Version: MemoryVersion, Ports: latch.Set[latch.Port, *PortMemory]{}}
}

// set is the port's classes as a set.
func (pm *PortMemory) set() ClassSet {
	var s ClassSet
	for c := range pm.Classes {
		s |= bit(c)
	}
	return s
}

// Validate drops what no check could have written and lists it: the
// ports past MaxPorts (in key order), and the classes no build raises.
func (m *Memory) Validate() (dropped []string) {
	m.Version = MemoryVersion
	if m.Ports == nil {
		m.Ports = latch.Set[latch.Port, *PortMemory]{}
	}
	var classes []string
	n := 0
	dropped = m.Ports.Keep("ports", func(k latch.Port, pm *PortMemory) string {
		switch {
		case !k.Valid():
			return "not DEVICE/PORT"
		case pm == nil:
			return "empty"
		case n >= MaxPorts:
			return fmt.Sprintf("over the bound of %d ports", MaxPorts)
		}
		n++
		classes = append(classes, pm.Classes.KeepKeys(fmt.Sprintf("ports[%q].classes", k), "not a RoCE class",
			func(c string) bool { return bit(c) != 0 })...)
		pm.Have &= 1<<NumSignals - 1
		return ""
	})
	return append(dropped, classes...)
}
