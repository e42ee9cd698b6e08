package cable

import (
	"fmt"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/topology/module"
)

// Kind is what one piece of evidence is.
type Kind uint8

const (
	// KindCounter: an error counter rose within the window.
	KindCounter Kind = iota + 1
	// KindLane: a module lane's reading or flag.
	KindLane
	// KindLinkDown: the kernel's link-down reason.
	KindLinkDown
)

// Side is whose receiver or module the evidence is from.
type Side uint8

const (
	Host Side = iota
	Peer
)

// Evidence is one counter, lane or reason behind a verdict. Its strings
// are the observation's own (counter and field names, the reason's
// words): building one allocates nothing.
type Evidence struct {
	Kind Kind
	Side Side
	// Name is the counter ("symbol_error", "SymbolErrorCounter"), the
	// lane's quantity or flag ("Rx power", "Rx LOS"), or the link-down
	// reason in words.
	Name string
	// Rise is how much the counter rose within Window.
	Rise   uint64
	Window time.Duration
	// Lane is the module lane (1-based); Value and Threshold the lane's
	// reading and the module's threshold it is past, in the quantity's
	// unit (mW, mA); Quantity says which (empty for a flag).
	Lane      int
	Quantity  module.Quantity
	Value     float64
	Threshold float64
}

// String is the evidence in a few words, as every view shows it:
// "host symbol_error +12 in 2m0s", "switch SymbolErrorCounter +55 in
// 2m0s", "lane 2 Rx power -12.10 dBm < -11.40 dBm", "lane 3 Rx LOS",
// "link down: no cable".
func (e Evidence) String() string {
	switch e.Kind {
	case KindCounter:
		who := "host"
		if e.Side == Peer {
			who = "switch"
		}
		return fmt.Sprintf("%s %s +%d in %s", who, e.Name, e.Rise, e.Window)
	case KindLane:
		if e.Quantity == "" {
			return fmt.Sprintf("lane %d %s", e.Lane, e.Name)
		}
		rel := "<"
		if e.Value > e.Threshold {
			rel = ">"
		}
		return fmt.Sprintf("lane %d %s %s %s %s", e.Lane, e.Name, e.Quantity.Format(e.Value), rel, e.Quantity.Format(e.Threshold))
	case KindLinkDown:
		return "link down: " + e.Name
	}
	return ""
}

// Missing is which half of an InfiniBand port's evidence is not there.
type Missing uint8

const (
	// Complete: both receivers were read (or the port is RoCE, which has
	// no far end to read).
	Complete Missing = iota
	// FarEndOff: the far end is not read ([farEnd] enabled = false, or a
	// one-shot check).
	FarEndOff
	// FarEndUnavailable: the host cannot read it (no umad device, the
	// helper or its libraries missing); MissingWhy says why.
	FarEndUnavailable
	// PeerNotFound: the port's peer did not answer its discovery.
	PeerNotFound
	// PeerNotRead: the peer is known but its counters not read yet.
	PeerNotRead
)

// EvidenceText is the evidence joined with "; " (event metadata
// cableEvidence, nichealthctl cables).
func (v *Verdict) EvidenceText() string {
	parts := make([]string, 0, v.n+1)
	for _, e := range v.Evidence() {
		parts = append(parts, e.String())
	}
	if m := v.MissingText(); m != "" {
		parts = append(parts, m)
	}
	return strings.Join(parts, "; ")
}

// MissingText says which half of the evidence is missing ("" none).
func (v *Verdict) MissingText() string {
	why := ""
	if v.MissingWhy != "" {
		why = ": " + v.MissingWhy
	}
	switch v.Missing {
	case FarEndOff:
		return "switch port not read (the far end is off: [farEnd] enabled = false)"
	case FarEndUnavailable:
		return "switch port not read" + why
	case PeerNotFound:
		return "switch port not found" + why
	case PeerNotRead:
		return "switch port not read yet"
	}
	return ""
}

// Part names the suspect part in a sentence, for the Nagios line and
// messages: "host transceiver (serial MT2245VS01234)", "cable (lane 2)".
func (v *Verdict) Part() string {
	switch v.Suspect {
	case HostTransceiver:
		if v.Serial != "" {
			return "host transceiver (serial " + v.Serial + ")"
		}
		return "host transceiver"
	case PeerTransceiver:
		return "switch-side transceiver"
	case Cable:
		if v.Lane > 0 {
			return fmt.Sprintf("cable (lane %d fibre)", v.Lane)
		}
		return "cable"
	case HostPort:
		return "host port"
	case Unknown:
		return "unknown part"
	}
	return ""
}
