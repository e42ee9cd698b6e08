package cards

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
	"github.com/nichealth/nichealthd/observe"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

// Section is the card check's section of the state file.
const Section = "cards"

// MemoryVersion is the version of the section this build writes.
const MemoryVersion = 1

// Config is what card homogeneity takes from the configuration.
type Config struct {
	// Checks are the checks switched on: card homogeneity speaks for the
	// state check of a card's link layer, so a card whose check is off
	// raises nothing.
	Checks map[string]bool
	// Hold is cardAnomalyHold: how long a card stays short of its peers
	// (and a role group's IB ports wait for a subnet manager) before it
	// is reported (DESIGN.md differences 4 and 12).
	Hold time.Duration
}

// Ports is what card homogeneity needs of the port checks' memory: which
// ports are fatal on their own (a DOWN port is its own condition; one
// cable pull is one fatal condition, not two) and how many ports of each
// card are gone with a disappeared NIC.
type Ports interface {
	FatalOnItsOwn(device string, port int) bool
	GoneByCard() map[string]int
}

// Check is card homogeneity and the no-subnet-manager judgement, one step
// ("cards") over each state poll.
type Check struct {
	cfg   Config
	mem   *Memory
	ports Ports
	// planOf finds a discovered port's observation (plan is the plan it
	// was built for).
	planOf map[*topology.Port]*observe.Port
	plan   uint64
}

// NewCheck returns the check with empty memory.
func NewCheck(ports Ports) *Check {
	return &Check{mem: NewMemory(), ports: ports, planOf: map[*topology.Port]*observe.Port{}}
}

// Configure applies the configuration.
func (c *Check) Configure(cfg Config) { c.cfg = cfg }

// Memory is what the check remembers.
func (c *Check) Memory() *Memory { return c.mem }

func (*Check) Step() string { return "cards" }

func (*Check) Serves() []string {
	return []string{event.InfiniBandStateCheck, event.EthernetStateCheck}
}

// Run judges card homogeneity and the subnet manager. Homogeneity is
// judged on the first poll, whenever the device set changes (seed 7.2
// case 3), whenever a port comes up or goes down (seed 3.2 relies on it
// to escalate a port stuck in INIT/ARMED/Polling/LinkErrorRecovery while
// its peers are ACTIVE: DESIGN.md difference 9), and every poll while a
// card is short of its peers or anomalous (its hold runs, its ports may
// become fatal on their own). A steady healthy poll costs nothing here.
func (c *Check) Run(cy *checks.Cycle) {
	obs := cy.Obs
	if !obs.StatePoll {
		return
	}
	if c.plan != obs.Plan || len(c.planOf) != len(obs.Ports) {
		clear(c.planOf)
		for _, p := range obs.Ports {
			c.planOf[p.Port] = p
		}
		c.plan = obs.Plan
	}
	if obs.First || obs.DevicesChanged || obs.ActiveChanged || len(c.mem.Anomalies) > 0 || len(c.mem.Short) > 0 {
		// A port whose state was never read (a hung or garbled file)
		// counts as active: its unreadability is reported on its own, and
		// a file that cannot be read is not evidence of a failed port
		// (DESIGN.md difference 3).
		isActive := func(_ *topology.Device, port *topology.Port) bool {
			p := c.planOf[port]
			return p == nil || !p.Observed || p.Up()
		}
		ss, ch := c.mem.Judge(Input{
			Cards: Group(c.judgedDevices(obs), isActive),
			OwnFatal: func(p event.PortRef) bool {
				return c.ports.FatalOnItsOwn(p.Device, p.Port)
			},
			Gone: c.ports.GoneByCard(),
			Now:  obs.Now, Hold: c.cfg.Hold,
		})
		cy.Emit(ss...)
		if ch {
			cy.Changed()
		}
	}
	c.subnetManager(cy)
}

// judgedDevices are the devices whose state check is switched on.
func (c *Check) judgedDevices(obs *observe.Observation) []*topology.Device {
	out := make([]*topology.Device, 0, len(obs.Devices))
	for _, d := range obs.Devices {
		if c.cfg.Checks[event.StateCheckFor(d.LinkLayer())] {
			out = append(out, d)
		}
	}
	return out
}

// subnetManager judges, per role group, whether every IB port waits in
// INIT/ARMED for a subnet manager (sm_lid 0): DESIGN.md difference 12.
// sm_lid is read only while every IB port of a group is INIT or ARMED, so
// a node with a working fabric reads nothing here.
func (c *Check) subnetManager(cy *checks.Cycle) {
	obs := cy.Obs
	var waitingRoles []topology.Role
	for _, role := range []topology.Role{topology.RoleCompute, topology.RoleStorage} {
		total, waiting := 0, 0
		for _, p := range obs.Ports {
			if p.Device.Role != role || p.Port.LinkLayer != topology.LinkLayerInfiniBand {
				continue
			}
			total++
			if p.Observed && (p.Link.State.ID == sysfs.StateInit || p.Link.State.ID == sysfs.StateArmed) {
				waiting++
			}
		}
		if total > 0 && waiting == total {
			waitingRoles = append(waitingRoles, role)
		}
	}
	if len(waitingRoles) == 0 && len(c.mem.NoSM) == 0 {
		return
	}
	var groups []SMGroup
	for _, role := range []topology.Role{topology.RoleCompute, topology.RoleStorage} {
		g := SMGroup{Role: role}
		for _, p := range obs.Ports {
			if p.Device.Role == role && p.Port.LinkLayer == topology.LinkLayerInfiniBand {
				g.Ports = append(g.Ports, p.Key())
			}
		}
		if len(g.Ports) == 0 {
			continue
		}
		g.Waiting = containsRole(waitingRoles, role) && noSMLID(obs, role)
		groups = append(groups, g)
	}
	ss, ch := c.mem.JudgeSubnetManager(groups, obs.Now, c.cfg.Hold)
	cy.Emit(ss...)
	if ch {
		cy.Changed()
	}
}

// noSMLID reads sm_lid of every IB port of role and reports whether all
// are 0. A port whose sm_lid cannot be read or parsed says nothing, so the
// group is not judged as waiting (fail open).
func noSMLID(obs *observe.Observation, role topology.Role) bool {
	for _, p := range obs.Ports {
		if p.Device.Role != role || p.Port.LinkLayer != topology.LinkLayerInfiniBand {
			continue
		}
		b, err := obs.ReadFile(p.Port.Dir + "/sm_lid")
		if err != nil {
			return false
		}
		lid, err := strconv.ParseUint(strings.TrimSpace(string(sysfs.TrimValue(b))), 0, 16)
		if err != nil || lid != 0 {
			return false
		}
	}
	return true
}

func containsRole(rs []topology.Role, r topology.Role) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}

// Section is the check's section of the state file.
func (c *Check) Section() string { return Section }

// Restore starts the memory from the state file's section.
func (c *Check) Restore(raw []byte) []string {
	return checks.RestoreSection(Section, raw, MemoryVersion, c.mem, func() { *c.mem = *NewMemory() }, c.mem.Validate)
}

// Marshal is the section to save.
func (c *Check) Marshal() ([]byte, error) { return json.Marshal(c.mem) }

// Replay applies one of the check's events to the memory.
func (c *Check) Replay(e *event.Event) { c.mem.Replay(e) }

// Restate says, as events, the anomalies the memory holds (a state file
// written before the health model).
func (c *Check) Restate() []checks.Restated {
	var out []checks.Restated
	for card, a := range c.mem.Anomalies {
		out = append(out, checks.Restated{Since: a.Since, Spec: event.Spec{Kind: event.KindCardAnomaly, CheckName: event.InfiniBandStateCheck, IsFatal: true, Card: card,
			Message:   fmt.Sprintf("Card %s (%s) has %d active ports, expected %d", card, a.Role, a.Active, a.Expected),
			Condition: condition.OfCard(card)}})
	}
	return out
}
