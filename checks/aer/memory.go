package aer

import (
	"fmt"
	"sort"
	"time"

	"github.com/nichealth/nichealthd/checks/latch"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/aerfile"
)

// MemoryVersion is the version of the AER check's section of the state
// file this build writes.
const MemoryVersion = 1

// Memory is what the AER check remembers across restarts: the last counts
// of every PCI function it reads, so errors counted while the daemon was
// down are reported at the next start, and the raised conditions, so each
// gets its clear. The daemon stores it as the "pcieAER" section; the state
// file's boot ID governs it: after a reboot the daemon clears every
// section (the kernel's counters restarted from zero) and the first read
// of each function is a baseline again.
type Memory struct {
	Version   int                                `json:"version"`
	Functions latch.Set[string, *FunctionMemory] `json:"functions"`
}

// FunctionMemory is one PCI function's last counts and raised conditions.
type FunctionMemory struct {
	// Counts holds the named counters that are not zero by class
	// (correctable, nonfatal, fatal; null: the file was absent), Totals
	// their TOTAL_ERR_* lines.
	Counts [aerfile.NumClasses]map[string]uint64 `json:"counts"`
	Totals [aerfile.NumClasses]uint64            `json:"totals"`
	// At is when the counts last changed (they held these values at
	// every read since): the base of the correctable rate after a restart.
	At time.Time `json:"at"`
	// Raised are the active conditions by class name.
	Raised latch.Set[string, Raised] `json:"raised,omitempty"`
}

// Raised is one active AER condition of a function.
type Raised struct {
	Check string    `json:"check"`
	Since time.Time `json:"since"`
	// Last is when its counters last moved (non-fatal clears after a
	// quiet period measured from it).
	Last time.Time `json:"last"`
}

// NewMemory returns an empty memory.
func NewMemory() *Memory {
	return &Memory{Version: MemoryVersion, Functions: map[string]*FunctionMemory{}}
}

// Validate drops entries no check could have written and lists them.
func (m *Memory) Validate() (dropped []string) {
	m.Version = MemoryVersion
	if m.Functions == nil {
		m.Functions = map[string]*FunctionMemory{}
	}
	var classes []string
	dropped = m.Functions.Keep("functions", func(k string, f *FunctionMemory) string {
		switch {
		case !topology.IsPCIAddress(k):
			return "not a PCI address"
		case f == nil:
			return "empty"
		}
		classes = append(classes, f.Raised.KeepKeys(fmt.Sprintf("functions[%q].raised", k), "unknown class",
			func(r string) bool { return classOf(r) >= 0 })...)
		return ""
	})
	dropped = append(dropped, classes...)
	sort.Strings(dropped)
	return dropped
}

func classOf(name string) aerfile.Class {
	for c := aerfile.Class(0); c < aerfile.NumClasses; c++ {
		if c.String() == name {
			return c
		}
	}
	return -1
}

// Replay applies an AER event whose effect the saved memory may not
// include (the outbox is written before the state): its raise or clear.
func (m *Memory) Replay(e *event.Event) {
	pci, cl := e.Metadata["pci"], classOf(e.Metadata["aer"])
	if pci == "" || cl < 0 {
		return
	}
	f := m.Functions[pci]
	if f == nil {
		return // first sight was not saved either: the next read baselines
	}
	switch e.Kind {
	case event.KindPCIeAERRecovered:
		f.Raised.Clear(cl.String())
	case event.KindPCIeAER:
		r := f.Raised[cl.String()]
		if r.Since.IsZero() {
			r.Since = e.GeneratedTimestamp
		}
		r.Check, r.Last = e.CheckName, e.GeneratedTimestamp
		f.Raised.Raise(cl.String(), r)
	}
}
