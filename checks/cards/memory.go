package cards

import (
	"sort"
	"strconv"
	"time"

	"github.com/nichealth/nichealthd/checks/latch"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology"
)

// Memory is what card homogeneity remembers across restarts: the raised
// anomalies (so none is re-announced and each gets its clear, naming the
// same ports), when each short card fell below its peers (so the hold
// survives a restart instead of starting over), and the no-subnet-manager
// conditions. The daemon stores it as the "cards" section of the state
// file.
type Memory struct {
	Version   int                        `json:"version"`
	Anomalies latch.Set[string, Latched] `json:"card_anomalies"`
	// Short is when each card below its peers' mode was first seen so,
	// keyed by card; a card back at the mode is dropped.
	Short latch.Set[string, time.Time] `json:"short_since,omitempty"`
	// NoSM is the no-subnet-manager state of each role group (by role).
	NoSM latch.Set[string, NoSM] `json:"no_subnet_manager,omitempty"`
}

// Latched is one raised anomaly of a card (keyed by card, domain:bus:dev).
type Latched struct {
	Role     string    `json:"role"`
	Active   int       `json:"active"`
	Expected int       `json:"expected"`
	Since    time.Time `json:"since"`
	// Check and Ports are the raise's check name and the ports it named:
	// the clear repeats them, so a consumer that clears by entity (the
	// NVSentinel platform connector, DESIGN.md difference 13) removes
	// exactly this condition.
	Check string          `json:"check,omitempty"`
	Ports []event.PortRef `json:"ports,omitempty"`
}

// NoSM is one role group's no-subnet-manager state: Since when every IB
// port of the group was first seen waiting for a subnet manager, and,
// once raised, the check and ports the raise named.
type NoSM struct {
	Since  time.Time       `json:"since"`
	Raised bool            `json:"raised,omitempty"`
	Check  string          `json:"check,omitempty"`
	Ports  []event.PortRef `json:"ports,omitempty"`
}

// NewMemory returns an empty memory.
func NewMemory() *Memory {
	return &Memory{Version: MemoryVersion, Anomalies: map[string]Latched{}, Short: map[string]time.Time{}, NoSM: map[string]NoSM{}}
}

// Validate drops entries no check could have written and lists them.
func (m *Memory) Validate() (dropped []string) {
	m.Version = MemoryVersion
	if m.Anomalies == nil {
		m.Anomalies = map[string]Latched{}
	}
	if m.Short == nil {
		m.Short = map[string]time.Time{}
	}
	if m.NoSM == nil {
		m.NoSM = map[string]NoSM{}
	}
	dropped = m.Anomalies.Keep("card_anomalies", func(k string, v Latched) string {
		switch {
		case !topology.PrintableName(k):
			return "empty or unprintable key"
		case v.Active < 0 || v.Expected < 0:
			return "negative port count"
		case !validPorts(v.Ports):
			return "a port that is not <device> <port>"
		}
		return ""
	})
	dropped = append(dropped, m.Short.Keep("short_since", func(k string, t time.Time) string {
		if !topology.PrintableName(k) || t.IsZero() {
			return "empty key or no time"
		}
		return ""
	})...)
	dropped = append(dropped, m.NoSM.Keep("no_subnet_manager", func(k string, v NoSM) string {
		if !topology.PrintableName(k) || v.Since.IsZero() || !validPorts(v.Ports) {
			return "empty key, no time or a bad port"
		}
		return ""
	})...)
	sort.Strings(dropped)
	return dropped
}

func validPorts(ps []event.PortRef) bool {
	for _, p := range ps {
		if !topology.ValidDeviceName(p.Device) || p.Port <= 0 {
			return false
		}
	}
	return true
}

// Replay applies a card or subnet-manager event whose effect the saved
// memory may not include (the outbox is written before the state).
func (m *Memory) Replay(e *event.Event) {
	if m.Short == nil {
		m.Short = map[string]time.Time{}
	}
	if m.NoSM == nil {
		m.NoSM = map[string]NoSM{}
	}
	switch e.Kind {
	case event.KindNoSubnetManager:
		if role := e.Metadata["role"]; role != "" {
			m.NoSM[role] = NoSM{Since: e.GeneratedTimestamp, Raised: true, Check: e.CheckName, Ports: e.Ports()}
		}
		return
	case event.KindSubnetManagerFound:
		m.NoSM.Clear(e.Metadata["role"])
		return
	}
	card := e.Metadata["card"]
	for _, en := range e.EntitiesImpacted {
		if en.Type == event.EntityCard {
			card = en.Value // written before card events named their ports
		}
	}
	if card == "" {
		return
	}
	switch e.Kind {
	case event.KindCardRecovered:
		m.Anomalies.Clear(card)
	case event.KindCardAnomaly:
		active, _ := strconv.Atoi(e.Metadata["active"])
		expected, _ := strconv.Atoi(e.Metadata["expected"])
		m.Anomalies.Raise(card, Latched{Role: e.Metadata["role"], Active: active, Expected: expected, Since: e.GeneratedTimestamp,
			Check: e.CheckName, Ports: e.Ports()})
		if _, ok := m.Short[card]; !ok {
			m.Short[card] = e.GeneratedTimestamp
		}
	}
}
