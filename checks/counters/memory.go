package counters

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/nichealth/nichealthd/checks/latch"
	"github.com/nichealth/nichealthd/config/countertable"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology"
)

// MemoryVersion is the version of the counter check's section of the
// state file this build writes.
const MemoryVersion = 1

// Memory is what the counter checks remember across restarts (seed 6.6):
// the snapshot each delta or velocity is measured from, the latched
// breaches, and the counters reported saturated. Keys are
// "<device>:<port>:<counter>" (Key). The daemon stores it as the
// "counters" section of the state file; nothing else writes it.
type Memory struct {
	Version          int                                `json:"version"`
	CounterSnapshots latch.Set[string, CounterSnapshot] `json:"counter_snapshots"`
	BreachFlags      latch.Set[string, BreachFlag]      `json:"breach_flags"`
	// Saturated counter files (keyed by file name), so a restart does not
	// re-announce them and each gets its clear.
	Saturated latch.Set[string, time.Time] `json:"saturated,omitempty"`
	// Congested ports (keyed by the congestion counter's name) and since
	// when: an observation that clears itself, not a latch.
	Congested latch.Set[string, time.Time] `json:"congested,omitempty"`
	// RaisedUnder is the check each saturation and congestion condition
	// was raised under, by the key of Saturated or Congested, so a clear
	// that no reading triggers (a reload that stops judging it) names the
	// same check.
	RaisedUnder latch.Set[string, string] `json:"raised_under,omitempty"`
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
	// Definition is the fingerprint of the counter definition that
	// latched, so a reload can tell whether the definition changed.
	Definition string `json:"definition,omitempty"`
	// Reading is what the counter read at the breach, as its event said
	// it ("value=5000, delta=5000, rate=5000.00/sec"): what latched, which
	// the views show beside the live rate.
	Reading string `json:"reading,omitempty"`
}

// NewMemory returns an empty memory.
func NewMemory() *Memory {
	return &Memory{Version: MemoryVersion, CounterSnapshots: map[string]CounterSnapshot{},
		BreachFlags: map[string]BreachFlag{}, Saturated: map[string]time.Time{}, Congested: map[string]time.Time{}}
}

// Validate makes a memory read from a state file usable: missing maps are
// made, and entries no check could have written are dropped and listed,
// so one bad entry (a hand edit, an older build's bug) costs that entry.
func (m *Memory) Validate() (dropped []string) {
	m.Version = MemoryVersion
	if m.CounterSnapshots == nil {
		m.CounterSnapshots = map[string]CounterSnapshot{}
	}
	dropped = m.CounterSnapshots.Keep("counter_snapshots", func(k string, v CounterSnapshot) string {
		if why := checkKey(k); why != "" {
			return why
		}
		if v.Timestamp.IsZero() {
			// A zero timestamp would make a velocity window look decades
			// long; dropping it only costs a fresh baseline.
			return "no timestamp"
		}
		return ""
	})
	if m.BreachFlags == nil {
		m.BreachFlags = map[string]BreachFlag{}
	}
	var readings []string
	dropped = append(dropped, m.BreachFlags.Keep("breach_flags", func(k string, fl BreachFlag) string {
		if why := checkKey(k); why != "" {
			return why
		}
		if fl.Reading != "" && !validReading(fl.Reading) {
			// Views print it: a hand edit costs the reading, not the latch.
			readings = append(readings, fmt.Sprintf("breach_flags[%q].reading: longer than %d bytes or not printable text", k, maxReading))
			fl.Reading = ""
			m.BreachFlags[k] = fl
		}
		return ""
	})...)
	if m.Saturated == nil {
		m.Saturated = map[string]time.Time{}
	}
	if m.Congested == nil {
		m.Congested = map[string]time.Time{}
	}
	byKey := func(k string, _ time.Time) string { return checkKey(k) }
	dropped = append(dropped, m.Saturated.Keep("saturated", byKey)...)
	dropped = append(dropped, m.Congested.Keep("congested", byKey)...)
	dropped = append(dropped, m.RaisedUnder.Keep("raised_under", func(k, _ string) string { return checkKey(k) })...)
	dropped = append(dropped, readings...)
	sort.Strings(dropped)
	return dropped
}

// maxReading bounds a latch's reading ("value=..., delta=..., rate=...",
// under 100 bytes as the evaluator writes it).
const maxReading = 256

func validReading(r string) bool {
	if len(r) > maxReading || !utf8.ValidString(r) {
		return false
	}
	for _, c := range r {
		if unicode.IsControl(c) {
			return false
		}
	}
	return true
}

// checkKey validates "<device>:<port>:<counter>" (seed 6.6).
func checkKey(k string) string {
	dev, rest, ok := strings.Cut(k, ":")
	if !ok {
		return "key is not <device>:<port>:<counter>"
	}
	p, counter, ok := strings.Cut(rest, ":")
	if !ok {
		return "key is not <device>:<port>:<counter>"
	}
	if !topology.ValidDeviceName(dev) {
		return "bad device name"
	}
	if _, why := topology.ParsePortNumber(p); why != "" {
		return why
	}
	if !topology.PrintableName(counter) {
		return "empty or unprintable counter name"
	}
	return ""
}

// Rename moves every entry of device old to nw: a NIC renamed under the
// same PCI address keeps its windows and latches.
func (m *Memory) Rename(old, nw string) {
	rekey := func(k string) (string, bool) {
		if rest, ok := strings.CutPrefix(k, old+":"); ok {
			return nw + ":" + rest, true
		}
		return "", false
	}
	m.CounterSnapshots.Rekey(rekey)
	m.BreachFlags.Rekey(rekey)
	m.Saturated.Rekey(rekey)
	m.Congested.Rekey(rekey)
	m.RaisedUnder.Rekey(rekey)
}

// raisedUnder records the check a saturation or congestion condition of
// key was raised under ("" forgets it).
func (m *Memory) raisedUnder(key, check string) {
	if check == "" {
		m.RaisedUnder.Clear(key)
		return
	}
	m.RaisedUnder.Raise(key, check)
}

// checkOf is the check key's condition was raised under.
func (m *Memory) checkOf(key string) string {
	if c := m.RaisedUnder[key]; c != "" {
		return c
	}
	return event.InfiniBandDegradationCheck
}

// Replay applies an event this check emitted but whose effect the saved
// memory may not include: events are made durable before the state, so a
// crash in between leaves the outbox ahead of the memory. defs names the
// definitions, for a replayed latch's fingerprint.
func (m *Memory) Replay(e *event.Event, defs []countertable.Definition) {
	dev, port := e.Device(), portOf(e)
	name := e.Metadata["counter"]
	if name == "" && len(e.ErrorCode) == 1 {
		name = e.ErrorCode[0]
	}
	if name == "" || dev == "" {
		return
	}
	key := Key(dev, port, name)
	switch e.Kind {
	case event.KindCounterBreach:
		fp := ""
		if i := slices.IndexFunc(defs, func(d countertable.Definition) bool { return d.Name == name }); i >= 0 {
			fp = defs[i].Fingerprint()
		}
		m.BreachFlags[key] = BreachFlag{Breached: true, CheckName: e.CheckName, IsFatal: e.IsFatal, Since: breachedSince(e), Definition: fp,
			Reading: e.Metadata["reading"]}
	case event.KindCounterRecovered:
		if e.Metadata["reason"] == ReasonCheckRenamed {
			// The latch moved to another check, it did not end: the
			// breach raised under the new name follows.
			return
		}
		// Reset, acknowledgement or removal: the latch is gone, and the
		// snapshot is dropped so the counter re-baselines at its current
		// value instead of re-breaching against the old one.
		delete(m.BreachFlags, key)
		delete(m.CounterSnapshots, key)
	case event.KindCounterSaturated:
		m.Saturated[key] = e.GeneratedTimestamp
		m.raisedUnder(key, e.CheckName)
	case event.KindCounterUnsaturated:
		delete(m.Saturated, key)
		m.raisedUnder(key, "")
	case event.KindCongestion:
		if m.Congested == nil {
			m.Congested = map[string]time.Time{}
		}
		m.Congested[key] = e.GeneratedTimestamp
		m.raisedUnder(key, e.CheckName)
	case event.KindCongestionCleared:
		delete(m.Congested, key)
		m.raisedUnder(key, "")
	}
}
