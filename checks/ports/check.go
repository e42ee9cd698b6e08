package ports

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
	"github.com/nichealth/nichealthd/internal/repeats"
	"github.com/nichealth/nichealthd/observe"
)

// The state checks a step serves.
var stateChecks = []string{event.InfiniBandStateCheck, event.EthernetStateCheck}

// Section is the port checks' section of the state file.
const Section = "ports"

// Config is what the port checks take from the configuration.
type Config struct {
	// Checks are the checks switched on; a state check that is off judges
	// nothing.
	Checks map[string]bool
}

// Checks are the port state checks over their one memory: Presence judges
// disappearance and renames after each complete enumeration (step
// "presence"), State judges every port whose observation moved (step
// "judge"). The runner runs Presence first, so a renamed device's memory
// moves to its new name before its ports are judged under it.
type Checks struct {
	cfg Config
	log *slog.Logger
	mem *PortMemory
	chk *PortStateCheck
	// judged is what State last judged of each port of the plan it saw
	// (obs.Plan): a port whose observation did not move cannot cross a
	// boundary, so a steady poll skips it.
	judged []judged
	plan   uint64
	// lastChange is when each port last crossed healthy/unhealthy.
	lastChange map[string]time.Time
	enumLogged bool
	// present is the observation's device set as Enumerated takes it, for
	// the plan presentPlan.
	present     map[string]Presence
	presentPlan uint64
	// backLogs collapses the "came back" line of a driver that reloads
	// again and again.
	backLogs repeats.Limiter
}

type judged struct {
	o  Observation
	ok bool
}

// New returns the port checks with empty memory. onRename is told when a
// device is recognised under a new name, so every check moves what it
// remembers of it.
func New(log *slog.Logger, onRename func(old, nw string)) *Checks {
	c := &Checks{log: log, mem: NewPortMemory(), chk: NewPortStateCheck(log), lastChange: map[string]time.Time{},
		backLogs: repeats.Limiter{Window: time.Hour}}
	c.chk.OnRename = onRename
	return c
}

// ClaimLossesWith says which check reports the loss of a NIC as its own
// one condition instead of this check's disappearance (the PCI
// inventory, DESIGN.md difference 18): claimed is asked with the
// device's name and last PCI address once it has missed DisappearAfter
// enumerations, and at every enumeration after that.
func (c *Checks) ClaimLossesWith(claimed func(device, addr string) bool) { c.chk.Claimed = claimed }

// GoneByCard counts, per card, the ports of its NICs missing from the last
// enumeration: reported gone (PortMemory.GoneByCard), and those still
// within their DisappearAfter enumerations. A missing NIC's ports are the
// presence judgement's: its loss is one condition once it counts as gone
// (the port check's or the claiming check's), and a driver reload that
// brings it back is none; card homogeneity reports neither a second time,
// whatever its hold (DESIGN.md differences 4 and 18).
func (c *Checks) GoneByCard() map[string]int { return c.mem.goneByCard(c.chk.misses) }

// FatalOnItsOwn is PortMemory.FatalOnItsOwn.
func (c *Checks) FatalOnItsOwn(device string, port int) bool {
	return c.mem.FatalOnItsOwn(device, port)
}

// Identity is what the last discovery said of a known device (its role
// and GPUs), kept while it is missing; ok is false for a device never
// seen this boot.
func (c *Checks) Identity(device string) (Identity, bool) {
	id, ok := c.mem.Identity[device]
	return id, ok
}

// Configure applies the configuration.
func (c *Checks) Configure(cfg Config) { c.cfg = cfg }

// Memory is what the checks remember (the views read it).
func (c *Checks) Memory() *PortMemory { return c.mem }

// Presence is the disappearance and rename check.
func (c *Checks) Presence() checks.Check { return presence{c} }

// State is the port state check.
func (c *Checks) State() checks.Check { return state{c} }

// LastChange is when a port last crossed healthy/unhealthy (zero: not in
// this process).
func (c *Checks) LastChange(device string, port int) time.Time {
	return c.lastChange[PortKey(device, port)]
}

type presence struct{ c *Checks }

func (presence) Step() string     { return "presence" }
func (presence) Serves() []string { return stateChecks }

// Run judges device presence after a complete enumeration (DESIGN.md
// difference 3); a listing that failed judges nothing and is said once.
func (p presence) Run(cy *checks.Cycle) {
	obs, c := cy.Obs, p.c
	if !obs.StatePoll {
		return
	}
	if obs.EnumErr != nil {
		if !c.enumLogged {
			c.enumLogged = true
			c.log.Warn("cannot list RDMA devices; device disappearance is not judged until listing works again",
				"dir", obs.Paths.ClassInfiniBand, "err", obs.EnumErr)
		}
		return
	}
	if !obs.Enumerated {
		return
	}
	learned := false
	if c.present == nil || c.presentPlan != obs.Plan {
		// Rebuilt with the plan (every discovery builds one), so a steady
		// poll allocates nothing.
		c.present, c.presentPlan = presentOf(obs), obs.Plan
		learned = c.mem.learnIdentity(obs.Present)
	}
	ss, ch := c.chk.Enumerated(c.mem, c.present, obs.Paths.ClassInfiniBand)
	cy.Emit(ss...)
	if ch || learned {
		cy.Changed()
	}
	for _, b := range c.chk.TakeBack() {
		// DESIGN.md difference 18: a reload shorter than the enumerations
		// is no condition, only a line (a non-fatal event would degrade
		// the node and count toward RepeatedNICDegradation for a
		// maintenance step, and clear a second later).
		if ok, n := c.backLogs.Note(b.Device, obs.Now); ok {
			c.log.Info("NIC left class/infiniband and came back before it counted as gone (a driver or devlink reload?): not a failure; its counters start from a fresh baseline",
				"device", b.Device, "missed_enumerations", b.Missed, "gone_after", DisappearAfter, "repeats", n)
		}
	}
}

// learnIdentity records the role and GPUs of every monitored device seen
// now, and reports whether that changed the memory. A device missing now
// keeps what its last discovery said.
func (m *PortMemory) learnIdentity(present map[string]observe.Presence) bool {
	changed := false
	for name, p := range present {
		id := Identity{Role: string(p.Role), RoleReason: p.RoleReason, GPUs: p.GPUs}
		if old, ok := m.Identity[name]; ok && old == id {
			continue
		}
		if m.Identity == nil {
			m.Identity = map[string]Identity{}
		}
		m.Identity[name] = id
		changed = true
	}
	return changed
}

// presentOf is what Enumerated needs of the devices seen now.
func presentOf(obs *observe.Observation) map[string]Presence {
	out := make(map[string]Presence, len(obs.Present))
	for n, p := range obs.Present {
		out[n] = Presence{LinkLayer: p.LinkLayer, PCIAddress: p.PCIAddress}
	}
	return out
}

type state struct{ c *Checks }

func (state) Step() string     { return "judge" }
func (state) Serves() []string { return stateChecks }

// Run judges every port whose observation moved. It is edge-triggered: an
// observation equal to the one it last judged cannot cross a boundary, so
// a steady poll skips it (and its allocations) entirely.
func (s state) Run(cy *checks.Cycle) {
	obs, c := cy.Obs, s.c
	if !obs.StatePoll {
		return
	}
	if c.plan != obs.Plan || len(c.judged) != len(obs.Ports) {
		// A new plan: every port is judged again once (against memory, so
		// nothing is said twice).
		c.judged = slices.Grow(c.judged[:0], len(obs.Ports))[:len(obs.Ports)]
		clear(c.judged)
		c.plan = obs.Plan
	}
	start := Steady
	if obs.First {
		start = Resume
		if obs.Boot.Baseline() {
			start = Baseline
		}
	}
	for i, p := range obs.Ports {
		ll := p.Port.LinkLayer
		check := event.StateCheckFor(ll)
		if !p.Observed || !c.cfg.Checks[check] || cy.Failed(check) || !p.Readable {
			continue
		}
		o := Observation{Device: p.Device.Name, Port: p.Port.Num, LinkLayer: ll, State: p.Link.State, Phys: p.Link.Phys, Operstate: p.Operstate,
			LinkDownReason: p.LinkDown.Reason, LinkDownSubReason: p.LinkDown.SubReason, LinkDownWords: p.LinkDown.Words}
		if !obs.First && c.judged[i].ok && o == c.judged[i].o {
			continue
		}
		cy.Enter(check)
		sp, ch := c.chk.Evaluate(c.mem, o, start)
		// A torn state/phys_state pair is held one poll: the same pair
		// next poll must be judged, not skipped as unchanged.
		c.judged[i] = judged{o: o, ok: !c.chk.Holding(o.Device, o.Port)}
		if ch {
			cy.Changed()
		}
		if sp != nil {
			c.lastChange[PortKey(o.Device, o.Port)] = obs.Now
			cy.Emit(*sp)
		}
	}
}

// Section is the checks' section of the state file.
func (c *Checks) Section() string { return Section }

// Restore starts the memory from the state file's section.
func (c *Checks) Restore(raw []byte) []string {
	return checks.RestoreSection(Section, raw, PortMemoryVersion, c.mem, func() { *c.mem = *NewPortMemory() }, c.mem.Validate)
}

// Marshal is the section to save.
func (c *Checks) Marshal() ([]byte, error) { return json.Marshal(c.mem) }

// Replay applies one of the state checks' events to the memory.
func (c *Checks) Replay(e *event.Event) { c.mem.Replay(e) }

// AdoptReported fills in what the port check last reported, for a state
// file written before the port check remembered it: card homogeneity must
// know which ports are already fatal on their own. fatal lists the ports
// with a state-check condition and whether it is fatal.
func (c *Checks) AdoptReported(fatal map[event.PortRef]bool) {
	for pr, f := range fatal {
		k := PortKey(pr.Device, pr.Port)
		ps, ok := c.mem.PortStates[k]
		if !ok || ps.Reported != "" {
			continue
		}
		ps.Reported = ReportedNonFatal
		if f {
			ps.Reported = ReportedFatal
		}
		c.mem.PortStates[k] = ps
	}
}

// Restate says, as events, the conditions the memory implies: what a
// state file written before the health model held.
func (c *Checks) Restate() []checks.Restated {
	var out []checks.Restated
	for _, ps := range c.mem.PortStates {
		o, ok := ObservationOf(ps)
		if !ok {
			continue
		}
		if v := Judge(o); v == Fatal || v == NonFatal {
			out = append(out, checks.Restated{Spec: event.Spec{Kind: event.KindPortNonFatal, CheckName: event.StateCheckFor(o.LinkLayer), IsFatal: v == Fatal,
				Message: Message(o, v), Device: o.Device, Port: o.Port, Condition: condition.OfPort(o.Device, o.Port)}})
		}
	}
	for _, dev := range c.mem.Disappeared {
		out = append(out, checks.Restated{Spec: event.Spec{Kind: event.KindDeviceDisappeared, CheckName: event.InfiniBandStateCheck, IsFatal: true, Device: dev,
			Message:   fmt.Sprintf("NIC %s disappeared - hardware failure", dev),
			Condition: condition.OfNIC(dev)}})
	}
	return out
}
