package kernellog

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/nichealth/nichealthd/checks/latch"
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
	Active latch.Set[string, *Active] `json:"active"`

	// folded are conditions a restored memory or the health model held
	// past the bounds: Start clears each and counts it on the overflow
	// condition, so the model and the memory agree.
	folded []foldedEntry
}

type foldedEntry struct {
	key string
	a   *Active
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
func NewMemory() *Memory {
	return &Memory{Version: MemoryVersion, Active: latch.Set[string, *Active]{}}
}

// Bounds of the memory, enforced where a condition is added (a record, a
// restored state, the health model's conditions adopted at start): a
// storm of records naming thousands of functions keeps the memory, the
// state file and the events flat. Past them the records count on one
// overflow condition ("and N more").
const (
	// MaxConditions bounds the conditions in all (the overflow's aside).
	MaxConditions = 256
	// MaxPerFunction bounds the conditions of one function (one per
	// pattern; a function matching more patterns than this is storming).
	MaxPerFunction = 16
	// MaxOtherFunctions bounds the functions without a monitored RDMA
	// device that may have conditions of their own (a function that
	// failed to probe; a real host has a handful).
	MaxOtherFunctions = 16
	maxRecord         = 512
)

// OverflowName is the pattern name of the condition that counts the
// records past the bounds: node-level, fatal when a fatal one was among
// them, cleared by nichealthctl ack DEVICE PORT kernel_log (or by its own
// name).
const OverflowName = patterntable.Overflow

// room says why a new condition for fn cannot be kept ("" when it can).
func (m *Memory) room(pci, device string) string {
	total, per := 0, 0
	var others []string
	for _, a := range m.Active {
		if a == nil || a.Pattern == OverflowName {
			continue
		}
		total++
		if a.PCI == pci {
			per++
		}
		if a.Device == "" && a.PCI != "" && !slices.Contains(others, a.PCI) {
			others = append(others, a.PCI)
		}
	}
	switch {
	case total >= MaxConditions:
		return fmt.Sprintf("more than %d kernel-log conditions in all", MaxConditions)
	case per >= MaxPerFunction:
		return fmt.Sprintf("more than %d kernel-log conditions on one function", MaxPerFunction)
	case per == 0 && device == "" && pci != "" && len(others) >= MaxOtherFunctions:
		return fmt.Sprintf("more than %d functions without a monitored RDMA device", MaxOtherFunctions)
	}
	return ""
}

// fold takes a condition the memory cannot keep off it: Start clears it
// and counts it on the overflow condition.
func (m *Memory) fold(key string, a *Active) {
	delete(m.Active, key)
	m.folded = append(m.folded, foldedEntry{key, a})
}

// overflow is the overflow condition, created when absent.
func (m *Memory) overflow(first time.Time) *Active {
	k := Key(OverflowName, "")
	a := m.Active[k]
	if a == nil {
		a = &Active{Pattern: OverflowName, First: first}
		m.Active[k] = a
	}
	return a
}

// Validate drops entries no check could have written and lists them.
func (m *Memory) Validate() (dropped []string) {
	m.Version = MemoryVersion
	if m.Active == nil {
		m.Active = latch.Set[string, *Active]{}
	}
	dropped = m.Active.Keep("active", func(k string, a *Active) string {
		switch {
		case a == nil:
			return "empty"
		case !patterntable.ValidName(a.Pattern) || k != Key(a.Pattern, a.PCI):
			return "key does not match its pattern and function"
		case a.PCI != "" && !topology.IsPCIAddress(a.PCI):
			return "not a PCI address"
		case len(a.Recent) > patterntable.MaxOccurrences:
			return "more occurrences than any pattern counts"
		}
		if len(a.Record) > maxRecord {
			a.Record = a.Record[:maxRecord]
		}
		return ""
	})
	sort.Strings(dropped)
	if n := m.bound(); n > 0 {
		dropped = append(dropped, fmt.Sprintf("active: %d conditions past the bounds (%d in all, %d per function, %d functions without a monitored RDMA device); they are cleared at start and counted on the %s condition",
			n, MaxConditions, MaxPerFunction, MaxOtherFunctions, OverflowName))
	}
	return dropped
}

// bound folds what a restored memory holds past the bounds, keeping the
// raised fatal conditions first, then the raised ones, in key order, and
// returns how many it folded.
func (m *Memory) bound() int {
	keys := make([]string, 0, len(m.Active))
	for k := range m.Active {
		keys = append(keys, k)
	}
	rank := func(a *Active) int {
		switch {
		case a == nil:
			return 4
		case a.Pattern == OverflowName:
			return 0
		case a.Raised && a.Fatal:
			return 1
		case a.Raised:
			return 2
		}
		return 3
	}
	sort.Slice(keys, func(i, j int) bool {
		ri, rj := rank(m.Active[keys[i]]), rank(m.Active[keys[j]])
		return ri < rj || ri == rj && keys[i] < keys[j]
	})
	kept := NewMemory()
	n := 0
	for _, k := range keys {
		a := m.Active[k]
		if a == nil {
			continue
		}
		if a.Pattern != OverflowName && kept.room(a.PCI, a.Device) != "" {
			m.fold(k, a)
			n++
			continue
		}
		kept.Active[k] = a
	}
	return n
}

// Held is a kernel-log condition the health model holds (restored from
// the state file's conditions).
type Held struct {
	Pattern, PCI string
	Ports        []Port
	Fatal        bool
	Since        time.Time
}

// Adopt takes on the health model's kernel-log conditions the memory does
// not hold (its section was unreadable, or written by an older build that
// dropped them): each becomes a raised condition again, so an operator's
// acknowledgement clears it and a repeated record is not raised twice;
// one past the bounds is folded (cleared at start, counted on the
// overflow condition). It returns how many it adopted.
func (m *Memory) Adopt(held []Held) (adopted int) {
	for _, h := range held {
		k := Key(h.Pattern, h.PCI)
		if !patterntable.ValidName(h.Pattern) || h.PCI != "" && !topology.IsPCIAddress(h.PCI) || m.Active[k] != nil {
			continue
		}
		a := &Active{Pattern: h.Pattern, PCI: h.PCI, Ports: slices.Clone(h.Ports), Raised: true, Fatal: h.Fatal,
			Count: 1, ReportedCount: 1, First: h.Since, Last: h.Since, Reported: h.Since}
		if len(a.Ports) > 0 {
			a.Device = a.Ports[0].Device
		}
		if h.Pattern == OverflowName {
			m.Active[k] = a
			adopted++
			continue
		}
		if m.room(a.PCI, a.Device) != "" {
			m.folded = append(m.folded, foldedEntry{k, a})
			continue
		}
		m.Active[k] = a
		adopted++
	}
	return adopted
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
		m.Active.Clear(k)
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
