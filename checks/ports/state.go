package ports

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/nichealth/nichealthd/checks/latch"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

// PortKey is the state-file key of a port (seed 6.6): "<device>_<port>",
// the port key's underscored form (checks/latch).
func PortKey(device string, port int) string { return latch.PortOf(device, port).Underscored() }

// Observation is what one poll saw of one port.
type Observation struct {
	Device    string
	Port      int
	LinkLayer string
	State     sysfs.PortState
	Phys      sysfs.PortState
	// Operstate is the RoCE netdev's operstate ("" when there is none or it
	// could not be read). IPoIB operstate is never put here: an IPoIB netdev
	// is often administratively down while its IB port is ACTIVE.
	Operstate string
	// LinkDown is why a RoCE port's link went down, as its driver said
	// (ethtool's extended link state): machine names for the metadata
	// (linkDownReason, linkDownSubReason) and the sentence for the message;
	// empty when the driver said nothing.
	LinkDownReason, LinkDownSubReason, LinkDownWords string
}

// Link is the observation's state and phys_state as one reading.
func (o Observation) Link() sysfs.Link { return sysfs.Link{State: o.State, Phys: o.Phys} }

// Verdict is the health class of one observation.
type Verdict int

const (
	Healthy Verdict = iota
	// NonFatal: IB INIT/ARMED, Polling, LinkErrorRecovery and the like
	// (seed 3.2); a persistent one is escalated by card homogeneity.
	NonFatal
	// Fatal: DOWN or Disabled (seed Appendix A).
	Fatal
	// Transient: RoCE INIT/ARMED, a sub-second step of Ethernet link
	// training that seed 3.2 says not to report. The previous verdict holds.
	Transient
)

func (v Verdict) String() string {
	return [...]string{"healthy", "non-fatal", "fatal", "transient"}[v]
}

func roce(o Observation) bool { return o.LinkLayer == topology.LinkLayerEthernet }

// Judge classifies an observation (seed 3.2, 3.4 step 3, 9; DESIGN.md
// section 2).
func Judge(o Observation) Verdict {
	if o.State.ID == sysfs.StateDown || o.Phys.ID == sysfs.PhysDisabled {
		return Fatal
	}
	if o.Link().Up() {
		if roce(o) && operDown(o.Operstate) {
			// RDMA still flows, but RoCE v2 needs the netdev for GIDs and
			// routing; a port an operator can see is half-broken, not dead.
			return NonFatal
		}
		return Healthy
	}
	if roce(o) && (o.State.ID == sysfs.StateInit || o.State.ID == sysfs.StateArmed) && o.Phys.ID == sysfs.PhysLinkUp {
		return Transient
	}
	return NonFatal
}

func operDown(s string) bool { return s == "down" || s == "lowerlayerdown" || s == "notpresent" }

// Message renders the consolidated port message of seed 13.1.
func Message(o Observation, v Verdict) string {
	var sb strings.Builder
	if roce(o) {
		sb.WriteString("RoCE port ")
	} else {
		sb.WriteString("Port ")
	}
	fmt.Fprintf(&sb, "%s port %d: ", o.Device, o.Port)
	if v == Healthy {
		fmt.Fprintf(&sb, "healthy (%s, %s", o.State.Name, o.Phys.Name)
		if roce(o) && o.Operstate != "" {
			fmt.Fprintf(&sb, ", operstate %s", o.Operstate)
		}
		sb.WriteString(")")
		return sb.String()
	}
	fmt.Fprintf(&sb, "state %s, phys_state %s", o.State.Name, o.Phys.Name)
	if roce(o) && o.Operstate != "" {
		fmt.Fprintf(&sb, ", operstate %s", o.Operstate)
	}
	if roce(o) && o.LinkDownWords != "" {
		fmt.Fprintf(&sb, "; link down: %s", o.LinkDownWords)
	}
	return sb.String()
}

// ObservationOf rebuilds an observation from the persisted port state.
func ObservationOf(ps PortState) (Observation, bool) {
	s, err1 := sysfs.ParseState([]byte(ps.State))
	p, err2 := sysfs.ParsePhysState([]byte(ps.PhysicalState))
	if err1 != nil || err2 != nil {
		return Observation{}, false
	}
	return Observation{Device: ps.Device, Port: ps.Port, LinkLayer: ps.LinkLayer, State: s, Phys: p, Operstate: ps.Operstate}, true
}

func snapshotOf(o Observation) PortState {
	return PortState{
		State: fmt.Sprintf("%d: %s", o.State.ID, o.State.Name), PhysicalState: fmt.Sprintf("%d: %s", o.Phys.ID, o.Phys.Name),
		Device: o.Device, Port: o.Port, LinkLayer: o.LinkLayer, Operstate: o.Operstate,
	}
}

// Start says what the first poll of this process knows (seed 3.4 step 4).
type Start int

const (
	// Steady: not the first poll.
	Steady Start = iota
	// Baseline: the first poll after a reboot, or with no usable state
	// file. Healthy ports get a healthy baseline event; unhealthy ports are
	// reported only on anomalous cards (DESIGN.md difference 4).
	Baseline
	// Resume: the first poll after a restart in the same boot; compared
	// with the persisted state exactly like a steady poll.
	Resume
)

// PortStateCheck holds what the state checks remember between polls.
type PortStateCheck struct {
	Log *slog.Logger
	// OnRename is told when a device is recognised under a new name, so
	// the other checks move what they remember of it.
	OnRename func(old, nw string)
	// Claimed says whether another check reports the loss of a device
	// (its name and last PCI address) as its own one condition: the PCI
	// inventory, for a function still on the bus without its RDMA device
	// (DESIGN.md difference 18). nil: none does.
	Claimed func(device, addr string) bool
	// misses counts consecutive complete enumerations without a known
	// device (DESIGN.md difference 3).
	misses map[string]int
	// back lists the devices that came back before they counted as gone
	// (a driver or devlink reload), with how many enumerations missed
	// them, since the last TakeBack.
	back []Back
	// torn holds the ports whose last observation was a torn pair that
	// has not been judged yet (see Torn).
	torn map[string]Observation
}

// NewPortStateCheck returns a check with empty memory.
func NewPortStateCheck(log *slog.Logger) *PortStateCheck {
	return &PortStateCheck{Log: log, misses: map[string]int{}, torn: map[string]Observation{}}
}

// Torn reports a state/phys_state pair that a port does not hold for
// long: the logical state DOWN with the physical link up, or ACTIVE with
// the physical port disabled. state and phys_state are two files read one
// after the other, and the kernel (or a simulator) updates them one after
// the other, so a poll can land between the two changes; judging that pair
// at once would report "DOWN, LinkUp" and then stay silent about the
// settled "DOWN, Disabled" (both fatal), or flap fatal→healthy on a
// recovery. Such a pair holds the previous verdict for one poll and is
// judged only if the next poll sees it again.
func Torn(o Observation) bool {
	return (o.State.ID == sysfs.StateDown && o.Phys.ID == sysfs.PhysLinkUp) ||
		(o.State.ID == sysfs.StateActive && o.Phys.ID == sysfs.PhysDisabled)
}

// Holding reports whether Evaluate held the last observation of a port as
// a torn pair: the caller must evaluate the port again next poll even if
// it reads the same values.
func (c *PortStateCheck) Holding(device string, port int) bool {
	_, ok := c.torn[PortKey(device, port)]
	return ok
}

// Evaluate judges one port against what was persisted and returns the event
// to emit, if any. It updates st.PortStates, including what was last
// reported for the port (PortState.Reported).
//
// A port never seen before (the first poll after a reboot or with no
// state, or a device that appeared at run time) has nothing to cross
// from: a healthy one gets a healthy baseline at the first poll, an
// unhealthy one nothing (unprovisioned auxiliary ports are common). Card
// homogeneity reports it when its card lacks it against its peers for
// cardAnomalyHold (DESIGN.md difference 4): that card event is the
// port's one fatal condition, whatever the first poll saw.
func (c *PortStateCheck) Evaluate(st *PortMemory, o Observation, start Start) (*event.Spec, bool) {
	v := Judge(o)
	if v == Transient {
		return nil, false
	}
	key := PortKey(o.Device, o.Port)
	prev, had := st.PortStates[key]
	if Torn(o) && had && start != Baseline {
		if held, ok := c.torn[key]; !ok || held != o {
			c.torn[key] = o
			return nil, false
		}
	}
	delete(c.torn, key)
	next := snapshotOf(o)
	var spec *event.Spec
	switch {
	case start == Baseline || !had:
		if v == Healthy && start == Baseline {
			spec = c.spec(o, v, event.KindPortBaseline)
		} else if v != Healthy {
			c.Log.Info("port unhealthy on first sight; treating it as unprovisioned, not failed (card homogeneity reports it if its card lacks it against its peers)",
				"device", o.Device, "port", o.Port, "state", o.State.Name, "phys_state", o.Phys.Name)
		}
	default:
		next.Reported = prev.Reported
		pv := Healthy
		if po, ok := ObservationOf(prev); ok {
			pv = Judge(po)
			if pv == Transient {
				pv = Healthy
			}
		}
		switch {
		case (pv == Healthy) != (v == Healthy):
			spec = c.spec(o, v, kindFor(v))
		case pv == NonFatal && v == Fatal:
			// Beyond the seed: INIT → DOWN is unhealthy → unhealthy, which seed
			// 3.4 suppresses; but the platform was told "non-fatal" and the port
			// is now dead. Escalation is the one intermediate step reported.
			spec = c.spec(o, v, event.KindPortFatal)
		}
	}
	if spec != nil {
		next.Reported = reportedOf(v)
	}
	changed := !had || prev != next
	st.PortStates[key] = next
	return spec, changed
}

// What PortState.Reported says the state check last told about a port.
const (
	ReportedFatal    = "fatal"
	ReportedNonFatal = "non-fatal"
)

func reportedOf(v Verdict) string {
	switch v {
	case Fatal:
		return ReportedFatal
	case NonFatal:
		return ReportedNonFatal
	}
	return ""
}

// FatalOnItsOwn reports whether the state check's last event for the port
// said fatal (DOWN or Disabled), so the port is a fatal condition of its
// own that card homogeneity must not report a second time.
func (m *PortMemory) FatalOnItsOwn(device string, port int) bool {
	return m.PortStates[PortKey(device, port)].Reported == ReportedFatal
}

func kindFor(v Verdict) event.Kind {
	switch v {
	case Healthy:
		return event.KindPortRecovered
	case Fatal:
		return event.KindPortFatal
	}
	return event.KindPortNonFatal
}

func (c *PortStateCheck) spec(o Observation, v Verdict, k event.Kind) *event.Spec {
	md := map[string]string{
		"state": o.State.Name, "physState": o.Phys.Name, "linkLayer": o.LinkLayer,
	}
	if o.Operstate != "" {
		md["operstate"] = o.Operstate
	}
	if v != Healthy && roce(o) && o.LinkDownReason != "" {
		md["linkDownReason"] = o.LinkDownReason
		if o.LinkDownSubReason != "" {
			md["linkDownSubReason"] = o.LinkDownSubReason
		}
	}
	return &event.Spec{
		Kind: k, CheckName: event.StateCheckFor(o.LinkLayer),
		IsFatal: v == Fatal, IsHealthy: v == Healthy,
		Message: Message(o, v), Device: o.Device, Port: o.Port, Metadata: md,
		ErrorCode: []string{PortStateErrorCode},
		Condition: condition.OfPort(o.Device, o.Port),
	}
}

// Error codes of the state checks' events, raises and clears alike: a
// consumer that clears by entity and error code (NVSentinel's platform
// connector, DESIGN.md difference 13) then removes exactly the condition
// a clear is about, never a card anomaly naming the same port or another
// condition of the NIC.
const (
	PortStateErrorCode   = "port-state"
	DisappearedErrorCode = "device-disappeared"
)
