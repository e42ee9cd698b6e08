package countertable

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/observe"
)

// Threshold types (seed section 10.1).
const (
	TypeDelta    = "delta"
	TypeVelocity = "velocity"
	// TypeBER judges a counter of corrected bits as a bit error rate over
	// a held window (see phy.go).
	TypeBER = "ber"
	// TypeCongestion judges port_xmit_wait as the share of the port rate
	// lost to backpressure, in percent, over a held window: an
	// observation, not a latch (see congestion.go).
	TypeCongestion = "congestion"
)

// Velocity units (seed section 10.1).
const (
	UnitSecond = "second"
	UnitMinute = "minute"
	UnitHour   = "hour"
)

// Definition is one row of the counter table: what file to read and when a
// reading is a breach. Field names follow NVSentinel's configuration keys.
type Definition struct {
	Name    string
	Path    string // relative to ports/<n>, or /sys/class/net/{interface}/... for netdev counters
	Enabled bool
	IsFatal bool
	// ThresholdType is TypeDelta (change since the previous reading) or
	// TypeVelocity (change per VelocityUnit over a held window).
	ThresholdType string
	Threshold     float64
	VelocityUnit  string
	Description   string
}

// Defaults returns the seed's default table (section 10.2) with one
// deliberate change: carrier_changes is read from
// /sys/class/net/<iface>/carrier_changes, because the seed's statistics/
// path does not exist in Linux (DESIGN.md difference 1). The slice is new
// on every call, so callers may modify it.
func Defaults() []Definition {
	return []Definition{
		{Name: "link_downed", Path: "counters/link_downed", Enabled: true, IsFatal: true,
			ThresholdType: TypeDelta, Threshold: 0,
			Description: "Port Training State Machine failed - QP disconnect"},
		{Name: "excessive_buffer_overrun_errors", Path: "counters/excessive_buffer_overrun_errors", Enabled: true, IsFatal: true,
			ThresholdType: TypeDelta, Threshold: 0,
			Description: "HCA internal buffer overflow - lossless contract violated"},
		{Name: "local_link_integrity_errors", Path: "counters/local_link_integrity_errors", Enabled: true, IsFatal: true,
			ThresholdType: TypeDelta, Threshold: 0,
			Description: "Physical errors exceed LocalPhyErrors hardware cap"},
		{Name: "rnr_nak_retry_err", Path: "hw_counters/rnr_nak_retry_err", Enabled: true, IsFatal: true,
			ThresholdType: TypeDelta, Threshold: 0,
			Description: "Receiver Not Ready NAK retry exhausted - connection severed"},
		{Name: "symbol_error", Path: "counters/symbol_error", Enabled: true,
			ThresholdType: TypeVelocity, Threshold: 10, VelocityUnit: UnitSecond,
			Description: "PHY bit errors before FEC - physical layer degradation"},
		{Name: "symbol_error_fatal", Path: "counters/symbol_error", Enabled: true, IsFatal: true,
			ThresholdType: TypeVelocity, Threshold: 120, VelocityUnit: UnitHour,
			Description: "Symbol errors exceed IBTA BER threshold (10E-12) - link outside spec"},
		{Name: "link_error_recovery", Path: "counters/link_error_recovery", Enabled: true,
			ThresholdType: TypeVelocity, Threshold: 5, VelocityUnit: UnitMinute,
			Description: "Link retraining events - micro-flapping"},
		{Name: "port_rcv_errors", Path: "counters/port_rcv_errors", Enabled: true,
			ThresholdType: TypeVelocity, Threshold: 10, VelocityUnit: UnitSecond,
			Description: "Malformed packets received"},
		{Name: "out_of_sequence", Path: "hw_counters/out_of_sequence", Enabled: true,
			ThresholdType: TypeVelocity, Threshold: 100, VelocityUnit: UnitSecond,
			Description: "Fabric routing issues - out of sequence packets"},
		{Name: "local_ack_timeout_err", Path: "hw_counters/local_ack_timeout_err", Enabled: true,
			ThresholdType: TypeVelocity, Threshold: 1, VelocityUnit: UnitSecond,
			Description: "ACK timeout - potential fabric black hole"},
		{Name: "port_xmit_discards", Path: "counters/port_xmit_discards", Enabled: true,
			ThresholdType: TypeVelocity, Threshold: 100, VelocityUnit: UnitSecond,
			Description: "TX discards due to congestion"},
		// DESIGN.md difference 14: the seed's 10000 ticks/s is about 0.6
		// Mb/s lost, and a latch froze what it showed. Congestion is judged
		// as the share of the port rate lost, the xmit-wait note's lost
		// bandwidth, over a minute, and clears below half of it.
		{Name: "port_xmit_wait", Path: "counters/port_xmit_wait", Enabled: true,
			ThresholdType: TypeCongestion, Threshold: DefaultCongestionPercent, VelocityUnit: UnitMinute,
			Description: "TX wait ticks - congestion backpressure"},
		{Name: "roce_slow_restart", Path: "hw_counters/roce_slow_restart", Enabled: true,
			ThresholdType: TypeVelocity, Threshold: 10, VelocityUnit: UnitSecond,
			Description: "Victim flow oscillation"},
		{Name: "carrier_changes", Path: observe.NetClassPrefix + observe.InterfacePlaceholder + "/carrier_changes", Enabled: true,
			ThresholdType: TypeDelta, Threshold: 2,
			Description: "Link instability - carrier state changes"},
	}
}

// UnitDuration maps a velocity unit to its window; ok is false for an
// unknown unit.
func UnitDuration(unit string) (time.Duration, bool) {
	switch unit {
	case UnitSecond:
		return time.Second, true
	case UnitMinute:
		return time.Minute, true
	case UnitHour:
		return time.Hour, true
	}
	return 0, false
}

// Window is how long a velocity snapshot is held before the rate is
// computed (seed 10.4 step 5): one velocityUnit. It is 0 for delta
// counters, which are evaluated on every reading.
func (d *Definition) Window() time.Duration {
	if !d.Windowed() {
		return 0
	}
	w, _ := UnitDuration(d.VelocityUnit)
	return w
}

// Windowed reports whether the threshold type holds its snapshot for a
// window of one velocityUnit (velocity, ber, congestion).
func (d *Definition) Windowed() bool {
	return d.ThresholdType == TypeVelocity || d.ThresholdType == TypeBER || d.ThresholdType == TypeCongestion
}

// IsNetdev reports whether the counter lives under the port's network
// interface (class/net/<iface>/...) rather than under ports/<n>.
func (d *Definition) IsNetdev() bool { return observe.CounterPath(d.Path).Netdev() }

// AppliesTo reports whether the counter is monitored on a port of the given
// link layer (observe.CounterPath.AppliesTo).
func (d *Definition) AppliesTo(linkLayer string) bool {
	return observe.CounterPath(d.Path).AppliesTo(linkLayer)
}

// File resolves the definition to the absolute file to read
// (observe.CounterPath.File): "" for a netdev counter of a port without a
// netdev, and for a driver statistic.
func (d *Definition) File(portDir, netClassDir, iface string) string {
	return observe.CounterPath(d.Path).File(portDir, netClassDir, iface)
}

// Fingerprint identifies everything that decides a breach (path, type,
// threshold, unit, severity). A reload compares fingerprints to tell an
// unchanged counter, whose windows and latches carry over untouched, from a
// re-defined one. The description is left out: rewording a message does not
// change what was detected.
func (d *Definition) Fingerprint() string {
	var b strings.Builder
	b.WriteString(d.Path)
	b.WriteByte('|')
	b.WriteString(d.ThresholdType)
	b.WriteByte('|')
	b.WriteString(strconv.FormatFloat(d.Threshold, 'g', -1, 64))
	b.WriteByte('|')
	if d.Windowed() {
		b.WriteString(d.VelocityUnit)
	}
	b.WriteByte('|')
	b.WriteString(strconv.FormatBool(d.IsFatal))
	return b.String()
}

// DefaultCongestionPercent is the share of its rate a port may lose to
// backpressure, over the congestion window, before it is congested: the
// fleet's NICPortCongested alert uses the same tenth of the link.
const DefaultCongestionPercent = 10

// IsXmitWait reports whether a definition reads port_xmit_wait, whose rate
// is congestion rather than errors.
func IsXmitWait(d *Definition) bool { return FileName(d.Path) == "port_xmit_wait" }

// congestionProblem restricts the congestion type to port_xmit_wait (only
// its ticks convert to lost bandwidth) and to a percentage.
func congestionProblem(d *Definition) string {
	if d.ThresholdType != TypeCongestion {
		return ""
	}
	if !IsXmitWait(d) {
		return fmt.Sprintf("%q applies only to port_xmit_wait (counters/port_xmit_wait), whose ticks are lost bandwidth", TypeCongestion)
	}
	if d.Threshold > 100 {
		return fmt.Sprintf("congestion threshold %v is a percentage of the port rate: at most 100", d.Threshold)
	}
	return ""
}

// FileName is the last element of a counter path, which names the counter
// in saturation messages and keys: symbol_error and symbol_error_fatal
// read one file, and that file saturates once, not twice.
func FileName(path string) string {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[i+1:]
	}
	return path
}
