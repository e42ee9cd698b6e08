package persist

import "encoding/json"

// SchemaVersion is the state-file schema this build writes. A file with a
// higher version was written by a newer nichealthd and is refused rather
// than overwritten, so a downgrade cannot silently destroy latched breaches.
//
// Version 2 keeps each check's memory in a section of its own ("checks");
// version 1 (and the seed's files) kept them as top-level keys and is
// migrated on load (legacySections).
const SchemaVersion = 2

// State is the one state file of seed section 6.6. persist owns the file
// (its envelope, its atomic writes, its boot handling); what is inside each
// section belongs to the check that wrote it, which validates it when it
// is restored.
type State struct {
	Version int    `json:"version"`
	BootID  string `json:"boot_id"`

	// Checks holds each check's memory as its own versioned section, by
	// section name ("ports", "counters", "cards", "sanity").
	Checks map[string]json.RawMessage `json:"checks"`

	// OutboxSeq is the sequence number of the last outbox event whose effect
	// this state includes. Events are made durable before the state, so
	// after a crash the outbox may hold newer events; they are replayed onto
	// the checks at start-up, or consumers could be left believing a fatal
	// condition the daemon no longer remembers reporting. Kept across a
	// reboot's clear.
	OutboxSeq uint64 `json:"outbox_seq,omitempty"`

	// Health holds the health model's active conditions (checks/health),
	// committed with the checks' memory and the outbox sequence, so the
	// model, the checks and what consumers were told agree after any
	// restart. Absent in files from before the model.
	Health json.RawMessage `json:"health,omitempty"`
}

// legacySections says which top-level keys of a version 1 file belong to
// which section: the keys keep their names inside the section, so a
// migrated file reads exactly as it was written.
var legacySections = []struct {
	section string
	keys    []string
}{
	{"ports", []string{"port_states", "known_devices", "disappeared", "device_addrs"}},
	{"counters", []string{"counter_snapshots", "breach_flags", "saturated"}},
	{"cards", []string{"card_anomalies"}},
	{"sanity", []string{"sanity"}},
}

// NewState returns an empty state for bootID.
func NewState(bootID string) *State {
	return &State{Version: SchemaVersion, BootID: bootID, Checks: map[string]json.RawMessage{}}
}

// Section returns a check's section, nil when there is none.
func (s *State) Section(name string) json.RawMessage { return s.Checks[name] }

// SetSection stores a check's section (its JSON encoding).
func (s *State) SetSection(name string, raw json.RawMessage) {
	if s.Checks == nil {
		s.Checks = map[string]json.RawMessage{}
	}
	s.Checks[name] = raw
}

// Clone returns a copy of s that later SetSection calls on s do not
// change: a save can then run off the goroutine that keeps changing s.
// Sections are shared, not copied: each is replaced whole, never
// modified in place.
func (s *State) Clone() *State {
	c := *s
	c.Checks = make(map[string]json.RawMessage, len(s.Checks))
	for k, v := range s.Checks {
		c.Checks[k] = v
	}
	return &c
}
