package sanity

import (
	"sort"
	"strings"

	"github.com/nichealth/nichealthd/checks/latch"
)

// MemoryVersion is the version of the sanity pass's section of the state
// file this build writes.
const MemoryVersion = 1

// Memory is the link sanity findings already reported, keyed
// "<kind>|<device>|<port>" with their message, so a restart neither
// re-announces them nor forgets to resolve them. The daemon stores it as
// the "sanity" section of the state file.
type Memory struct {
	Version  int                       `json:"version"`
	Reported latch.Set[string, string] `json:"sanity"`
	// Hops are the PCIe path findings reported, keyed "<kind>|<PCI
	// address>" (one per hop, however many NICs are below it).
	Hops latch.Set[string, HopReport] `json:"pcieHops,omitempty"`
}

// HopReport is what a PCIe path finding said when it was raised, so its
// clear carries the same check and names the same NICs.
type HopReport struct {
	Check   string   `json:"check"`
	Message string   `json:"message"`
	NICs    []string `json:"nics"`
}

// NewMemory returns an empty memory.
func NewMemory() *Memory {
	return &Memory{Version: MemoryVersion, Reported: map[string]string{}, Hops: map[string]HopReport{}}
}

// Validate drops keys that are not "<kind>|<device>|<port>".
func (m *Memory) Validate() (dropped []string) {
	m.Version = MemoryVersion
	if m.Reported == nil {
		m.Reported = map[string]string{}
	}
	dropped = m.Reported.Keep("sanity", func(k, _ string) string {
		if len(strings.SplitN(k, "|", 3)) != 3 {
			return "key is not <kind>|<device>|<port>"
		}
		return ""
	})
	dropped = append(dropped, m.validateHops()...)
	sort.Strings(dropped)
	return dropped
}

// Rename moves the findings of device old to nw.
func (m *Memory) Rename(old, nw string) {
	m.Reported.Rekey(func(k string) (string, bool) {
		parts := strings.SplitN(k, "|", 3)
		if len(parts) == 3 && parts[1] == old {
			return parts[0] + "|" + nw + "|" + parts[2], true
		}
		return "", false
	})
	m.renameInHops(old, nw)
}

// validateHops drops hop keys that are not "<kind>|<PCI address>" and
// reports without a check name.
func (m *Memory) validateHops() (dropped []string) {
	if m.Hops == nil {
		m.Hops = map[string]HopReport{}
	}
	return m.Hops.Keep("pcieHops", func(k string, r HopReport) string {
		kind, addr, ok := strings.Cut(k, "|")
		if !ok || kind == "" || addr == "" || r.Check == "" {
			return "key is not <kind>|<PCI address> with a check"
		}
		return ""
	})
}

// renameInHops renames a NIC in the NICs the hop findings name.
func (m *Memory) renameInHops(old, nw string) {
	for _, r := range m.Hops {
		for i, n := range r.NICs {
			if n == old {
				r.NICs[i] = nw
			}
		}
	}
}
