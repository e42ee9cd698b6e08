package roce

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
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
	Version int                    `json:"version"`
	Ports   map[string]*PortMemory `json:"ports"`
}

// PortMemory is one RoCE port.
type PortMemory struct {
	// Start is when the window in progress started; Values the signals
	// then (Have says which were read).
	Start  time.Time          `json:"start"`
	Have   set                `json:"have"`
	Values [NumSignals]uint64 `json:"values"`
	// Classes are the classes the port is in, with what raised them.
	Classes map[string]Raised `json:"classes,omitempty"`
}

// Raised is one class a port is in.
type Raised struct {
	Since    time.Time `json:"since"`
	Evidence string    `json:"evidence,omitempty"`
}

// NewMemory returns an empty memory.
func NewMemory() *Memory { return &Memory{Version: MemoryVersion, Ports: map[string]*PortMemory{}} }

func portKey(dev string, port int) string { return dev + "/" + strconv.Itoa(port) }

func splitKey(k string) (string, int, bool) {
	i := strings.LastIndexByte(k, '/')
	if i <= 0 {
		return "", 0, false
	}
	p, err := strconv.Atoi(k[i+1:])
	return k[:i], p, err == nil && p > 0 && p < 256
}

func (m *Memory) keys() []string { return slices.Sorted(maps.Keys(m.Ports)) }

// set is the port's classes as a set.
func (pm *PortMemory) set() ClassSet {
	var s ClassSet
	for c := range pm.Classes {
		s |= bit(c)
	}
	return s
}

// Validate drops what no check could have written and lists it.
func (m *Memory) Validate() (dropped []string) {
	m.Version = MemoryVersion
	if m.Ports == nil {
		m.Ports = map[string]*PortMemory{}
	}
	n := 0
	for _, k := range m.keys() {
		pm := m.Ports[k]
		_, _, ok := splitKey(k)
		switch {
		case !ok:
			dropped = append(dropped, fmt.Sprintf("ports[%q]: not DEVICE/PORT", k))
		case pm == nil:
			dropped = append(dropped, fmt.Sprintf("ports[%q]: empty", k))
		case n >= MaxPorts:
			dropped = append(dropped, fmt.Sprintf("ports[%q]: over the bound of %d ports", k, MaxPorts))
		default:
			n++
			for c := range pm.Classes {
				if bit(c) == 0 {
					dropped = append(dropped, fmt.Sprintf("ports[%q].classes[%q]: not a RoCE class", k, c))
					delete(pm.Classes, c)
				}
			}
			if pm.Have >= 1<<NumSignals {
				pm.Have &= 1<<NumSignals - 1
			}
			continue
		}
		delete(m.Ports, k)
	}
	return dropped
}
