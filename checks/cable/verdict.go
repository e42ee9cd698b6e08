package cable

import (
	"math"

	"github.com/nichealth/nichealthd/topology/module"
)

// Direction is which way across the cable errors flow, told by which
// receiver counts them: a receiver counts what the other end sent.
type Direction uint8

const (
	// None: no receiver counts errors and no lane says anything.
	None Direction = iota
	// ToHost: errors arrive at our port (switch-to-host).
	ToHost
	// FromHost: errors arrive at the switch port (host-to-switch).
	FromHost
	// Both directions err.
	Both
)

func (d Direction) String() string {
	switch d {
	case ToHost:
		return "to-host"
	case FromHost:
		return "from-host"
	case Both:
		return "both"
	}
	return "none"
}

// with is d joined with o: two directions are both.
func (d Direction) with(o Direction) Direction {
	switch {
	case d == None:
		return o
	case o == None || o == d:
		return d
	}
	return Both
}

// Suspect is the part to replace first.
type Suspect uint8

const (
	NoSuspect Suspect = iota
	HostTransceiver
	PeerTransceiver
	Cable
	HostPort
	Unknown
)

func (s Suspect) String() string {
	switch s {
	case HostTransceiver:
		return "host-transceiver"
	case PeerTransceiver:
		return "peer-transceiver"
	case Cable:
		return "cable"
	case HostPort:
		return "host-port"
	case Unknown:
		return "unknown"
	}
	return ""
}

// Suspects are every suspect kind, in the order views list them.
var Suspects = []Suspect{HostTransceiver, PeerTransceiver, Cable, HostPort, Unknown}

// Directions are every direction.
var Directions = []Direction{None, ToHost, FromHost, Both}

// MaxEvidence bounds a verdict's evidence (a port has a handful of error
// counters and lanes; past this the verdict is already clear).
const MaxEvidence = 8

// Verdict is one port's cable verdict. It is comparable: a cycle tells
// whether it moved with ==.
type Verdict struct {
	Direction Direction
	Suspect   Suspect
	// Serial is our module's serial when the suspect is our transceiver
	// (the part to order), Lane the lane that points at a fibre.
	Serial string
	Lane   int
	// Missing says which half of an InfiniBand port's evidence is absent
	// (the switch port's) and MissingWhy the reader's reason, if any.
	Missing    Missing
	MissingWhy string
	evidence   [MaxEvidence]Evidence
	n          int
}

// Evidence is the verdict's evidence, most telling first. The slice
// aliases v.
func (v *Verdict) Evidence() []Evidence { return v.evidence[:v.n] }

// Said reports whether the verdict says anything (a clean port says
// nothing).
func (v *Verdict) Said() bool { return v.Direction != None || v.Suspect != NoSuspect }

func (v *Verdict) add(e Evidence) {
	if v.n < MaxEvidence {
		v.evidence[v.n] = e
		v.n++
	}
}

// MaxCounters bounds the error counters one side of one port brings.
const MaxCounters = 8

// Input is one port's evidence for Judge, built by the Tracker from the
// cycle's observation.
type Input struct {
	// Ethernet: a RoCE port (no far end to read; module and link-down
	// reason instead). Up: the port is ACTIVE.
	Ethernet bool
	Up       bool
	// HostErrors and PeerErrors are the error counters that rose within
	// the window at our receiver and at the switch port's.
	HostErrors [MaxCounters]Evidence
	NHost      int
	PeerErrors [MaxCounters]Evidence
	NPeer      int
	// Missing (and MissingWhy) say the switch port's half is not there.
	Missing    Missing
	MissingWhy string
	// Module is our module as the last pass read it (nil: none read);
	// ModuleUp says the pass read it while the port was up. A module read
	// while the port was down has dark lanes and stale flags by nature:
	// only its high side (a laser driven too hard, a Tx fault) is
	// evidence then.
	Module   *module.Module
	ModuleUp bool
	// LinkDownReason and LinkDownSub are the kernel's machine names of why
	// the link is down (ethtool extended link state); LinkDownWords the
	// sentence.
	LinkDownReason, LinkDownSub, LinkDownWords string
}

// Judge computes the verdict of one port into v. The rules, in the order
// they decide the suspect (the first that applies names the part; every
// rule that applies adds its direction and evidence):
//
//  1. RuleLinkDownReason: a port that is down with a reason from the
//     kernel is taken as the kernel says.
//  2. RuleHostTxOutOfThresholds: our Tx bias or power past our module's
//     own thresholds is our transceiver, named by its serial.
//  3. RuleHostSideLOS: Tx LOS/LOL (the module lost the electrical signal
//     from our port) is our port.
//  4. RuleLaneLOS: Rx LOS/LOL on a lane of an ACTIVE port is that lane's
//     fibre.
//  5. RuleRxPowerLowWithErrors: errors arriving while our module receives
//     too little light points at the far transmitter or the fibre.
//  6. RuleBothEnds: errors at both receivers are the cable.
//  7. RuleOneEnd: errors at one receiver give the direction, not the part.
//  8. RuleMissingFarEnd: an InfiniBand port whose switch port was not
//     read says so instead of guessing.
//
// It allocates nothing.
func Judge(in *Input, v *Verdict) {
	*v = Verdict{}
	if in.Ethernet {
		in.Missing, in.MissingWhy = Complete, ""
	}
	// RuleLinkDownReason: the kernel knows why the link went down (its
	// firmware watched the link train); our counters and the module's
	// lanes say nothing while it is down.
	if !in.Up {
		if in.LinkDownReason != "" {
			v.Direction, v.Suspect = Both, downSuspect(in.LinkDownReason, in.LinkDownSub)
			v.add(Evidence{Kind: KindLinkDown, Name: in.LinkDownWords})
		}
		return
	}
	if m := in.Module; m != nil {
		judgeModule(in, m, v)
	}
	// RuleBothEnds / RuleOneEnd: a receiver counts what the other end
	// sent, so the receiver that counts gives the direction.
	if in.NHost > 0 {
		v.Direction = v.Direction.with(ToHost)
	}
	if in.NPeer > 0 {
		v.Direction = v.Direction.with(FromHost)
	}
	if v.Suspect == NoSuspect {
		switch {
		case in.NHost > 0 && in.NPeer > 0:
			// Both directions erring is what the two ends share: the
			// cable (or both optics, which a cable swap tells apart).
			v.Suspect = Cable
		case in.NHost > 0 || in.NPeer > 0:
			// One direction: the far transmitter, the fibres that way or
			// the near receiver; the counters cannot tell them apart.
			v.Suspect = Unknown
		}
	}
	for i := range in.NHost {
		v.add(in.HostErrors[i])
	}
	for i := range in.NPeer {
		v.add(in.PeerErrors[i])
	}
	// RuleMissingFarEnd: without the switch port's half, errors at our
	// port may be one direction or both; the verdict says what is missing.
	if !in.Ethernet {
		v.Missing, v.MissingWhy = in.Missing, in.MissingWhy
	}
}

// judgeModule applies rules 2-5 to our module's lanes.
func judgeModule(in *Input, m *module.Module, v *Verdict) {
	th := &m.Thresholds
	first := func(s Suspect, d Direction, lane int) {
		if v.Suspect == NoSuspect {
			v.Suspect, v.Lane = s, lane
		}
		v.Direction = v.Direction.with(d)
	}
	up := in.ModuleUp
	var used, rxLow int
	rxLowLane := 0
	for i := range m.Lanes {
		l := &m.Lanes[i]
		if l.Unused() {
			continue
		}
		used++
		// RuleHostTxOutOfThresholds: our laser's bias or output outside
		// the limits its maker set is our module failing, whatever the
		// far end counts; the serial names the part to order.
		for _, q := range [2]struct {
			q   module.Quantity
			v   *float64
			lim *module.Limits
			f   module.LevelFlag
		}{{module.TxBias, l.TxBiasMA, th.TxBiasMA, l.TxBiasFlags}, {module.TxPower, l.TxPowerM, th.TxPowerMW, l.TxPowerFlags}} {
			if thr, ok := outside(q.v, q.lim, up); ok {
				first(HostTransceiver, FromHost, 0)
				v.Serial = m.Serial
				v.add(Evidence{Kind: KindLane, Side: Host, Lane: l.Lane, Name: q.q.Label(), Quantity: q.q, Value: *q.v, Threshold: thr})
			}
		}
		if l.TxFault {
			first(HostTransceiver, FromHost, 0)
			v.Serial = m.Serial
			v.add(Evidence{Kind: KindLane, Side: Host, Lane: l.Lane, Name: "Tx fault"})
		}
		// RuleHostSideLOS: Tx LOS/LOL is the module losing the electrical
		// signal our port drives into it: the port (or its cage), not a
		// fibre, which Tx does not see.
		if up && (l.TxLOS || l.TxLOL) {
			first(HostPort, FromHost, 0)
			v.add(Evidence{Kind: KindLane, Side: Host, Lane: l.Lane, Name: losName("Tx", l.TxLOS)})
		}
		// RuleLaneLOS: on an ACTIVE port the far end is sending, so a lane
		// that loses its received signal (or its clock) is that lane's
		// fibre or connector.
		if up && (l.RxLOS || l.RxLOL) {
			first(Cable, ToHost, l.Lane)
			v.add(Evidence{Kind: KindLane, Side: Host, Lane: l.Lane, Name: losName("Rx", l.RxLOS)})
		}
		if up && l.RxPowerM != nil && th.RxPowerMW != nil && *l.RxPowerM < th.RxPowerMW.LowWarning && !math.IsNaN(*l.RxPowerM) {
			rxLow++
			if rxLowLane == 0 {
				rxLowLane = l.Lane
			}
		}
	}
	// RuleRxPowerLowWithErrors: little light arriving and errors counted
	// on it. Every lane low is the far transmitter (one module feeds
	// them all); some lanes low while others are fine is those lanes'
	// fibres or connector (clean, then replace the cable). Low light with
	// no errors is the transceiver check's finding, not a cable verdict.
	if rxLow > 0 && in.NHost > 0 {
		if rxLow == used {
			first(PeerTransceiver, ToHost, 0)
		} else {
			first(Cable, ToHost, rxLowLane)
		}
		for i := range m.Lanes {
			l := &m.Lanes[i]
			if !l.Unused() && l.RxPowerM != nil && *l.RxPowerM < th.RxPowerMW.LowWarning {
				thr := th.RxPowerMW.LowWarning
				if *l.RxPowerM < th.RxPowerMW.LowAlarm {
					thr = th.RxPowerMW.LowAlarm
				}
				v.add(Evidence{Kind: KindLane, Side: Host, Lane: l.Lane, Name: module.RxPower.Label(), Quantity: module.RxPower, Value: *l.RxPowerM, Threshold: thr})
			}
		}
	}
}

// outside reports whether *val is past lim's warning thresholds (the low
// ones only when lowSide), and the threshold it is past (the alarm one
// when past both).
func outside(val *float64, lim *module.Limits, lowSide bool) (float64, bool) {
	if val == nil || lim == nil || math.IsNaN(*val) {
		return 0, false
	}
	switch x := *val; {
	case x > lim.HighAlarm:
		return lim.HighAlarm, true
	case x > lim.HighWarning:
		return lim.HighWarning, true
	case lowSide && x < lim.LowAlarm:
		return lim.LowAlarm, true
	case lowSide && x < lim.LowWarning:
		return lim.LowWarning, true
	}
	return 0, false
}

func losName(dir string, los bool) string {
	switch {
	case dir == "Tx" && los:
		return "Tx LOS"
	case dir == "Tx":
		return "Tx LOL"
	case los:
		return "Rx LOS"
	}
	return "Rx LOL"
}

// downSuspect takes the kernel's link-down reason as it says
// (ethtool's extended link states, machine names as topology/ethtool
// names them):
//   - no_cable, cable_issue: the cable (unplugged, unsupported, failed
//     its test);
//   - module, eeprom_issue, calibration_failure, overheat,
//     power_budget_exceeded: our module (not ready, unreadable, too hot,
//     or drawing more than the cage allows: a module this port does not
//     take);
//   - bad_signal_integrity: the cable (high BER, analogue loss of
//     signal), except a lost SerDes reference clock, which is our port;
//   - autoneg, link_training_failure, link_logical_mismatch: the two ends
//     disagree, which names no part.
func downSuspect(reason, sub string) Suspect {
	switch reason {
	case "no_cable", "cable_issue":
		return Cable
	case "module", "eeprom_issue", "calibration_failure", "overheat", "power_budget_exceeded":
		return HostTransceiver
	case "bad_signal_integrity":
		if sub == "serdes_reference_clock_lost" {
			return HostPort
		}
		return Cable
	}
	return Unknown
}
