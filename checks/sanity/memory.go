package sanity

import (
	"fmt"
	"sort"
	"strings"
)

// MemoryVersion is the version of the sanity pass's section of the state
// file this build writes.
const MemoryVersion = 1

// Memory is the link sanity findings already reported, keyed
// "<kind>|<device>|<port>" with their message, so a restart neither
// re-announces them nor forgets to resolve them. The daemon stores it as
// the "sanity" section of the state file.
type Memory struct {
	Version  int               `json:"version"`
	Reported map[string]string `json:"sanity"`
}

// NewMemory returns an empty memory.
func NewMemory() *Memory { return &Memory{Version: MemoryVersion, Reported: map[string]string{}} }

// Validate drops keys that are not "<kind>|<device>|<port>".
func (m *Memory) Validate() (dropped []string) {
	m.Version = MemoryVersion
	if m.Reported == nil {
		m.Reported = map[string]string{}
	}
	for k := range m.Reported {
		if len(strings.SplitN(k, "|", 3)) != 3 {
			dropped = append(dropped, fmt.Sprintf("sanity[%q]: key is not <kind>|<device>|<port>", k))
			delete(m.Reported, k)
		}
	}
	sort.Strings(dropped)
	return dropped
}

// Rename moves the findings of device old to nw.
func (m *Memory) Rename(old, nw string) {
	for k, v := range m.Reported {
		parts := strings.SplitN(k, "|", 3)
		if len(parts) == 3 && parts[1] == old {
			delete(m.Reported, k)
			m.Reported[parts[0]+"|"+nw+"|"+parts[2]] = v
		}
	}
}
