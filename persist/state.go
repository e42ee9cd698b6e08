package persist

import (
	"encoding/json"
	"time"
)

// SchemaVersion is the state-file schema this build writes. A file with a
// higher version was written by a newer nichealthd and is refused rather
// than overwritten, so a downgrade cannot silently destroy latched breaches.
const SchemaVersion = 1

// State is the one state file of seed section 6.6, shared by every check.
// Map keys: counters "<device>:<port>:<counter>", ports "<device>_<port>".
type State struct {
	Version          int                        `json:"version"`
	BootID           string                     `json:"boot_id"`
	CounterSnapshots map[string]CounterSnapshot `json:"counter_snapshots"`
	BreachFlags      map[string]BreachFlag      `json:"breach_flags"`
	PortStates       map[string]PortState       `json:"port_states"`
	KnownDevices     []string                   `json:"known_devices"`

	// Beyond the seed: latched card anomalies (card key -> role) and
	// counters reported saturated, so neither is re-announced after a
	// restart; and devices currently reported disappeared.
	CardAnomalies map[string]CardAnomaly `json:"card_anomalies,omitempty"`
	Saturated     map[string]time.Time   `json:"saturated,omitempty"`
	Disappeared   []string               `json:"disappeared,omitempty"`
	// Sanity holds the link sanity findings already reported, keyed
	// "<kind>|<device>|<port>", so a restart does not re-announce them.
	Sanity map[string]string `json:"sanity,omitempty"`

	// OutboxSeq is the sequence number of the last outbox event whose effect
	// this state includes. Events are made durable before the state, so
	// after a crash the outbox may hold newer events; they are replayed onto
	// the state at start-up, or consumers could be left believing a fatal
	// condition the daemon no longer remembers reporting. Kept across a
	// reboot's clear.
	OutboxSeq uint64 `json:"outbox_seq,omitempty"`

	// DeviceAddrs maps each known device to its PCI address, so a device
	// renamed under the same address (rdma dev set … name …, udev naming
	// changes) is recognised as the same NIC rather than a disappearance.
	DeviceAddrs map[string]string `json:"device_addrs,omitempty"`

	// Health holds the health model's active conditions (checks/health),
	// opaque here: it is committed with the checks' state and the outbox
	// sequence, so the model, the checks and what consumers were told
	// agree after any restart. Absent in files from before the model.
	Health json.RawMessage `json:"health,omitempty"`
}

// CounterSnapshot is a counter reading and when it was taken. For velocity
// counters it is held for the whole window (seed 10.4 step 5).
type CounterSnapshot struct {
	Value     uint64    `json:"value"`
	Timestamp time.Time `json:"timestamp"`
}

// BreachFlag is a latched breach (seed 6.6).
type BreachFlag struct {
	Breached  bool      `json:"breached"`
	CheckName string    `json:"check_name"`
	IsFatal   bool      `json:"is_fatal"`
	Since     time.Time `json:"since"`
	// Threshold and Definition identify the counter definition that
	// latched, so a reload can tell whether the definition changed.
	Definition string `json:"definition,omitempty"`
}

// PortState is the last known state of a port (seed 6.6).
type PortState struct {
	State         string `json:"state"`
	PhysicalState string `json:"physical_state"`
	Device        string `json:"device"`
	Port          int    `json:"port"`
	LinkLayer     string `json:"link_layer,omitempty"`
	Operstate     string `json:"operstate,omitempty"`
}

// CardAnomaly is a latched card-homogeneity breach.
type CardAnomaly struct {
	Role     string    `json:"role"`
	Active   int       `json:"active"`
	Expected int       `json:"expected"`
	Since    time.Time `json:"since"`
}

// NewState returns an empty state for bootID.
func NewState(bootID string) *State {
	return &State{
		Version:          SchemaVersion,
		BootID:           bootID,
		CounterSnapshots: map[string]CounterSnapshot{},
		BreachFlags:      map[string]BreachFlag{},
		PortStates:       map[string]PortState{},
		KnownDevices:     []string{},
		CardAnomalies:    map[string]CardAnomaly{},
		Saturated:        map[string]time.Time{},
	}
}
