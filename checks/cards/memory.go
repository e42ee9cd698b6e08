package cards

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/nichealth/nichealthd/checks/event"
	"github.com/nichealth/nichealthd/topology"
)

// MemoryVersion is the version of the card check's section of the state
// file this build writes.
const MemoryVersion = 1

// Memory is what card homogeneity remembers across restarts: the latched
// anomalies, so none is re-announced and each gets its recovery. The
// daemon stores it as the "cards" section of the state file.
type Memory struct {
	Version   int                `json:"version"`
	Anomalies map[string]Latched `json:"card_anomalies"`
}

// Latched is one latched anomaly of a card (keyed by card, domain:bus:dev).
type Latched struct {
	Role     string    `json:"role"`
	Active   int       `json:"active"`
	Expected int       `json:"expected"`
	Since    time.Time `json:"since"`
}

// NewMemory returns an empty memory.
func NewMemory() *Memory { return &Memory{Version: MemoryVersion, Anomalies: map[string]Latched{}} }

// Validate drops entries no check could have written and lists them.
func (m *Memory) Validate() (dropped []string) {
	m.Version = MemoryVersion
	if m.Anomalies == nil {
		m.Anomalies = map[string]Latched{}
	}
	for k, v := range m.Anomalies {
		switch {
		case !topology.PrintableName(k):
			dropped = append(dropped, fmt.Sprintf("card_anomalies[%q]: empty or unprintable key", k))
			delete(m.Anomalies, k)
		case v.Active < 0 || v.Expected < 0:
			dropped = append(dropped, fmt.Sprintf("card_anomalies[%q]: negative port count", k))
			delete(m.Anomalies, k)
		}
	}
	sort.Strings(dropped)
	return dropped
}

// Replay applies a card event whose effect the saved memory may not
// include (the outbox is written before the state).
func (m *Memory) Replay(e *event.Event) {
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
		delete(m.Anomalies, card)
	case event.KindCardAnomaly:
		active, _ := strconv.Atoi(e.Metadata["active"])
		expected, _ := strconv.Atoi(e.Metadata["expected"])
		m.Anomalies[card] = Latched{Role: e.Metadata["role"], Active: active, Expected: expected, Since: e.GeneratedTimestamp}
	}
}
