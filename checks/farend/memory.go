package farend

import (
	"fmt"
	"slices"
	"time"

	"github.com/nichealth/nichealthd/checks/counters"
	"github.com/nichealth/nichealthd/checks/latch"
	"github.com/nichealth/nichealthd/config/countertable"
	"github.com/nichealth/nichealthd/mad/wire"
	"github.com/nichealth/nichealthd/topology"
)

// MemoryVersion is the version of the check's section this build writes.
const MemoryVersion = 1

// MaxPorts bounds the ports remembered: a host has a few dozen IB ports;
// a state file claiming more is cut where entries are added.
const MaxPorts = 1024

// Memory is what the far-end check remembers across restarts: each
// port's peer and its last reading, and the conditions raised. After a
// reboot the daemon clears every section.
type Memory struct {
	Version int                                `json:"version"`
	Ports   latch.Set[latch.Port, *PortMemory] `json:"ports"`
	// Lost is the helper's monitoring condition, when raised.
	Lost *Lost `json:"lost,omitempty"`
}

// PortMemory is one local port's far end.
type PortMemory struct {
	PeerGUID string `json:"peerGUID"`
	PeerPort int    `json:"peerPort"`
	PeerName string `json:"peerName,omitempty"`
	PeerLID  int    `json:"peerLID,omitempty"`
	// Values is the last reading of the PortCounters fields, in
	// wire.Fields' order, taken At; Wide says they came from
	// PortCountersExtended.
	Values [wire.NumFields]uint64 `json:"values"`
	At     time.Time              `json:"at"`
	Wide   bool                   `json:"wide,omitempty"`
	// Latched are the rows in breach and Saturated the saturated fields,
	// each with since when.
	Latched   latch.Set[string, time.Time] `json:"latched,omitempty"`
	Saturated latch.Set[string, time.Time] `json:"saturated,omitempty"`
	// Windows are the velocity rows' windows, by row name: the same rule
	// as the local counters' (counters.Slide), persisted so a restart
	// resumes them.
	Windows map[string]*counters.Slide `json:"windows,omitempty"`
	// SaturationAcked are the saturated fields an operator acknowledged:
	// not raised again until the field is seen to move (read below its
	// maximum: cleared on the fabric side) and saturate again.
	SaturationAcked latch.Set[string, time.Time] `json:"saturationAcked,omitempty"`
	// Peers are the distinct peers the port was cabled to lately, oldest
	// first (at most MaxPeersSeen), and StableSince when the current one
	// was first read: what says the peer is unstable, and when it is
	// stable again.
	Peers       []PeerSeen `json:"peers,omitempty"`
	StableSince time.Time  `json:"stableSince,omitempty"`
	// Witness is the last far-end link-down or link-recovery increment
	// taken as a local episode seen from the switch (no condition).
	Witness *Witness `json:"witness,omitempty"`
}

// PeerSeen is one peer a port was cabled to, and when it was last read.
type PeerSeen struct {
	GUID string    `json:"guid"`
	Port int       `json:"port"`
	Name string    `json:"name,omitempty"`
	At   time.Time `json:"at"`
}

// Witness is a far-end increment that was a local episode seen from the
// other end of the cable.
type Witness struct {
	Field   string    `json:"field"`
	Delta   uint64    `json:"delta"`
	At      time.Time `json:"at"`
	Episode Episode   `json:"episode"`
}

// Lost is the helper's monitoring condition.
type Lost struct {
	Since  time.Time `json:"since"`
	Reason string    `json:"reason"`
}

// NewMemory returns an empty memory.
func NewMemory() *Memory {
	return &Memory{Version: MemoryVersion, Ports: latch.Set[latch.Port, *PortMemory]{}}
}

// Validate drops what no check could have written and lists it.
func (m *Memory) Validate() (dropped []string) {
	m.Version = MemoryVersion
	if m.Ports == nil {
		m.Ports = latch.Set[latch.Port, *PortMemory]{}
	}
	var inner []string
	dropped = m.Ports.Keep("ports", func(k latch.Port, pm *PortMemory) string {
		switch {
		case !k.Valid():
			return "not DEVICE/PORT"
		case pm == nil || !wire.ValidGUID(pm.PeerGUID) || pm.PeerPort < 1 || pm.PeerPort > 255:
			return "no valid peer"
		case len(m.Ports) > MaxPorts:
			return fmt.Sprintf("over the bound of %d ports", MaxPorts)
		}
		pm.validateExtras(k, &inner)
		inner = append(inner, pm.Saturated.KeepKeys(fmt.Sprintf("ports[%q].saturated", k), notAField, isField)...)
		return ""
	})
	return append(dropped, inner...)
}

// isField and notAField are the rule on a saturated or acknowledged
// entry's key and why one that breaks it is dropped.
func isField(f string) bool { return wire.FieldIndex(f) >= 0 }

const notAField = "not a PortCounters field"

// maxWindows bounds the windows read back per port: one per velocity row
// of the far-end table (a handful).
const maxWindows = 64

// MaxPeersSeen bounds the peers a port's churn history keeps.
const MaxPeersSeen = 8

// validateExtras drops the windows, peers and acknowledgements a check
// could not have written.
func (pm *PortMemory) validateExtras(k latch.Port, dropped *[]string) {
	if len(pm.Windows) > maxWindows {
		*dropped = append(*dropped, fmt.Sprintf("ports[%q].windows: over the bound of %d rows", k, maxWindows))
		pm.Windows = nil
	}
	for row, w := range pm.Windows {
		if w == nil || !w.Valid() {
			*dropped = append(*dropped, fmt.Sprintf("ports[%q].windows[%q]: unbounded, untimed or out of order", k, row))
			delete(pm.Windows, row)
		}
	}
	if len(pm.Peers) > MaxPeersSeen {
		*dropped = append(*dropped, fmt.Sprintf("ports[%q].peers: over the bound of %d", k, MaxPeersSeen))
		pm.Peers = pm.Peers[len(pm.Peers)-MaxPeersSeen:]
	}
	for row := range pm.Latched {
		if !latchable(row) {
			*dropped = append(*dropped, fmt.Sprintf("ports[%q].latched[%q]: not a far-end row", k, clip(row)))
			delete(pm.Latched, row)
		}
	}
	// A name goes into messages, the Nagios line and the journal: one no
	// reader could have written (control characters) is dropped; the
	// next read names the peer again.
	if pm.PeerName != "" && !topology.PrintableName(pm.PeerName) {
		*dropped = append(*dropped, fmt.Sprintf("ports[%q].peerName: unprintable", k))
		pm.PeerName = ""
	}
	for i := range pm.Peers {
		if n := pm.Peers[i].Name; n != "" && !topology.PrintableName(n) {
			*dropped = append(*dropped, fmt.Sprintf("ports[%q].peers[%d].name: unprintable", k, i))
			pm.Peers[i].Name = ""
		}
	}
	*dropped = append(*dropped, pm.SaturationAcked.KeepKeys(fmt.Sprintf("ports[%q].saturationAcked", k), notAField, isField)...)
}

// latchable reports whether row can be latched: a row of the far-end
// table (countertable.FarEndFields, whatever the configuration judges
// now: a row switched off is cleared by Resume, with its event) or the
// peer-unstable finding. A state file's other keys are no condition any
// build raised, and nothing would ever clear them.
func latchable(row string) bool {
	if row == UnstableRow {
		return true
	}
	for _, f := range countertable.FarEndFields() {
		if f.Own != nil && f.Own.Name == row || slices.Contains(f.Rows, row) {
			return true
		}
	}
	return false
}

// clip bounds what a dropped entry's note repeats of a state file.
func clip(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return s
}
