package kernellog

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/nichealth/nichealthd/config/patterntable"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology"
)

// MemoryVersion is the version of the check's state section this build
// writes.
const MemoryVersion = 1

// Memory is what the check keeps across restarts: its cursor in the
// kernel's log (the boot and the last record judged), and every condition
// with its count. The daemon stores it as the "kernelLog" section; a
// reboot clears it (the ring starts again, and is read from its start).
type Memory struct {
	Version int    `json:"version"`
	BootID  string `json:"bootId,omitempty"`
	// Seq is the sequence number of the last record judged; HasSeq says
	// one was.
	Seq    uint64 `json:"seq"`
	HasSeq bool   `json:"hasSeq"`
	// Active are the conditions (raised, or gathering occurrences) by key
	// (pattern and PCI address, see Key).
	Active map[string]*Active `json:"active"`
}

// Port is one port a condition covers.
type Port = event.PortRef

// Active is one pattern's condition on one function (or the node).
type Active struct {
	Pattern string `json:"pattern"`
	// PCI is the function ("" for a node-level condition naming none);
	// Device its RDMA device when monitored, Ports its ports.
	PCI    string `json:"pci,omitempty"`
	Device string `json:"device,omitempty"`
	Ports  []Port `json:"ports,omitempty"`
	// Raised: the condition was emitted (otherwise occurrences are being
	// gathered towards the pattern's count).
	Raised bool   `json:"raised"`
	Fatal  bool   `json:"fatal"`
	Count  uint64 `json:"count"`
	// First and Last are the records' times; Reported is when the last
	// event was emitted and ReportedCount the count it said.
	First         time.Time `json:"first"`
	Last          time.Time `json:"last"`
	Reported      time.Time `json:"reported,omitzero"`
	ReportedCount uint64    `json:"reportedCount"`
	Seq           uint64    `json:"seq"`
	// Record is the last matching record's text (bounded).
	Record string `json:"record"`
	// Recent are the times of the occurrences inside the pattern's
	// window, while it needs more than one.
	Recent []time.Time `json:"recent,omitempty"`
}

// Key is a condition's identity in the memory: one per pattern and
// function.
func Key(pattern, pci string) string { return pattern + "|" + pci }

// NewMemory returns an empty memory.
func NewMemory() *Memory { return &Memory{Version: MemoryVersion, Active: map[string]*Active{}} }

// Bounds a restored memory must respect.
const (
	maxActive = 4096
	maxRecord = 512
)

// Validate drops entries no check could have written and lists them.
func (m *Memory) Validate() (dropped []string) {
	m.Version = MemoryVersion
	if m.Active == nil {
		m.Active = map[string]*Active{}
	}
	for k, a := range m.Active {
		why := ""
		switch {
		case a == nil:
			why = "empty"
		case !patterntable.ValidName(a.Pattern) || k != Key(a.Pattern, a.PCI):
			why = "key does not match its pattern and function"
		case a.PCI != "" && !topology.IsPCIAddress(a.PCI):
			why = "not a PCI address"
		case len(a.Recent) > patterntable.MaxOccurrences:
			why = "more occurrences than any pattern counts"
		}
		if why != "" {
			dropped = append(dropped, fmt.Sprintf("active[%q]: %s", k, why))
			delete(m.Active, k)
			continue
		}
		if len(a.Record) > maxRecord {
			a.Record = a.Record[:maxRecord]
		}
	}
	if len(m.Active) > maxActive {
		dropped = append(dropped, fmt.Sprintf("active: %d conditions, more than %d; the check starts with none", len(m.Active), maxActive))
		m.Active = map[string]*Active{}
	}
	sort.Strings(dropped)
	return dropped
}

// ForBoot ties the memory to a boot: a memory of another boot (its ring
// is gone) forgets its cursor. The state file's boot handling clears the
// whole section after a reboot; this guards a section restored without it.
func (m *Memory) ForBoot(bootID string) {
	if m.BootID != bootID {
		m.BootID, m.Seq, m.HasSeq = bootID, 0, false
	}
}

// Replay applies a kernel-log event the saved memory may not include (the
// outbox is written before the state): its raise or clear, and the cursor
// it carries, so a record judged before a crash is not judged again.
func (m *Memory) Replay(e *event.Event) {
	md := e.Metadata
	name, pci := md["pattern"], md["pci"]
	if name == "" {
		return
	}
	if s, err := strconv.ParseUint(md["seq"], 10, 64); err == nil && (!m.HasSeq || s > m.Seq) {
		m.Seq, m.HasSeq = s, true
	}
	k := Key(name, pci)
	switch e.Kind {
	case event.KindKernelLogCleared:
		delete(m.Active, k)
	case event.KindKernelLog:
		a := m.Active[k]
		if a == nil {
			a = &Active{Pattern: name, PCI: pci}
			m.Active[k] = a
		}
		a.Raised, a.Fatal, a.Device = true, e.IsFatal, md["nic"]
		a.Reported = e.GeneratedTimestamp
		if n, err := strconv.ParseUint(md["count"], 10, 64); err == nil && n > a.Count {
			a.Count = n
		}
		a.ReportedCount = a.Count
		if t, err := time.Parse(time.RFC3339Nano, md["first"]); err == nil && (a.First.IsZero() || t.Before(a.First)) {
			a.First = t
		}
		if t, err := time.Parse(time.RFC3339Nano, md["last"]); err == nil && t.After(a.Last) {
			a.Last = t
		}
		a.Ports = e.Ports()
		a.Recent = nil
	}
}
