package daemon

import (
	"encoding/json"
	"fmt"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/checks/aer"
	"github.com/nichealth/nichealthd/checks/cards"
	"github.com/nichealth/nichealthd/checks/counters"
	"github.com/nichealth/nichealthd/checks/inventory"
	"github.com/nichealth/nichealthd/checks/kernellog"
	"github.com/nichealth/nichealthd/checks/sanity"
	"github.com/nichealth/nichealthd/persist"
)

// Memory is what every check remembers, each part owned by its check. The
// daemon keeps them in the state file as one versioned section each
// (persist writes the file; the checks validate what they read back).
type Memory struct {
	Ports     *checks.PortMemory
	Counters  *counters.Memory
	Cards     *cards.Memory
	Sanity    *sanity.Memory
	AER       *aer.Memory
	Inventory *inventory.Memory
	KernelLog *kernellog.Memory
}

// NewMemory returns every check's empty memory.
func NewMemory() *Memory {
	return &Memory{Ports: checks.NewPortMemory(), Counters: counters.NewMemory(), Cards: cards.NewMemory(), Sanity: sanity.NewMemory(), AER: aer.NewMemory(),
		KernelLog: kernellog.NewMemory(), Inventory: inventory.NewMemory()}
}

// section is one check's memory as the state file stores it.
type section struct {
	name     string
	mem      any
	version  int
	validate func() []string
}

func (m *Memory) sections() []section {
	return []section{
		{"ports", m.Ports, checks.PortMemoryVersion, m.Ports.Validate},
		{"counters", m.Counters, counters.MemoryVersion, m.Counters.Validate},
		{"cards", m.Cards, cards.MemoryVersion, m.Cards.Validate},
		{"sanity", m.Sanity, sanity.MemoryVersion, m.Sanity.Validate},
		{"pcieAER", m.AER, aer.MemoryVersion, m.AER.Validate},
		{"inventory", m.Inventory, inventory.MemoryVersion, m.Inventory.Validate},
		{"kernelLog", m.KernelLog, kernellog.MemoryVersion, m.KernelLog.Validate},
	}
}

// RestoreMemory reads each check's section of st. A section that cannot be
// read, or was written by a newer version of its check, starts that check
// fresh and is listed; entries the check finds invalid are dropped and
// listed. Other checks keep what they remembered.
func RestoreMemory(st *persist.State) (*Memory, []string) {
	m := NewMemory()
	var dropped []string
	for _, s := range m.sections() {
		raw := st.Section(s.name)
		if len(raw) == 0 {
			continue
		}
		var probe struct {
			Version int `json:"version"`
		}
		if err := json.Unmarshal(raw, &probe); err != nil {
			dropped = append(dropped, fmt.Sprintf("checks[%q]: unreadable (%v); that check starts fresh", s.name, err))
			continue
		}
		if probe.Version > s.version {
			dropped = append(dropped, fmt.Sprintf("checks[%q]: version %d is newer than this build's %d; that check starts fresh", s.name, probe.Version, s.version))
			continue
		}
		if err := json.Unmarshal(raw, s.mem); err != nil {
			dropped = append(dropped, fmt.Sprintf("checks[%q]: unreadable (%v); that check starts fresh", s.name, err))
			fresh := NewMemory()
			*m = replaceSection(*m, *fresh, s.name)
			continue
		}
		dropped = append(dropped, s.validate()...)
	}
	return m, dropped
}

// replaceSection resets one part of m after a failed partial decode.
func replaceSection(m, fresh Memory, name string) Memory {
	switch name {
	case "ports":
		m.Ports = fresh.Ports
	case "counters":
		m.Counters = fresh.Counters
	case "cards":
		m.Cards = fresh.Cards
	case "sanity":
		m.Sanity = fresh.Sanity
	case "pcieAER":
		m.AER = fresh.AER
	case "inventory":
		m.Inventory = fresh.Inventory
	case "kernelLog":
		m.KernelLog = fresh.KernelLog
	}
	return m
}

// StoreMemory writes each check's section into st, ready to be saved.
func StoreMemory(st *persist.State, m *Memory) error {
	for _, s := range m.sections() {
		b, err := json.Marshal(s.mem)
		if err != nil {
			return fmt.Errorf("encode the %s section of the state: %w", s.name, err)
		}
		st.SetSection(s.name, b)
	}
	return nil
}
