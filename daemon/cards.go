package daemon

import (
	"strconv"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/checks/cards"
	"github.com/nichealth/nichealthd/checks/event"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

// cards runs card homogeneity (checks/cards) and the no-subnet-manager
// judgement over this cycle's observations. Homogeneity is judged on the
// first poll, whenever the device set changes (seed 7.2 case 3), whenever
// a port becomes or stops being active (seed 3.2 relies on it to escalate
// a port stuck in INIT/ARMED/Polling/LinkErrorRecovery while its peers
// are ACTIVE: DESIGN.md difference 9), and every poll while a card is
// short of its peers or anomalous (its hold runs, its ports may become
// fatal on their own). A steady healthy poll costs nothing here.
func (m *Monitor) cards(now time.Time, specs *[]event.Spec, changed *bool) {
	mem := m.mem.Cards
	if m.cycles == 0 || m.devicesSetChanged || m.activeChanged || len(mem.Anomalies) > 0 || len(mem.Short) > 0 {
		isActive := func(_ *topology.Device, port *topology.Port) bool {
			p := m.planOf[port]
			return p == nil || p.activeOrUnread()
		}
		ss, ch := mem.Judge(cards.Input{
			Cards: cards.Group(m.judgedDevices(), isActive),
			OwnFatal: func(p event.PortRef) bool {
				return m.mem.Ports.FatalOnItsOwn(p.Device, p.Port)
			},
			Gone: m.goneByCard(),
			Now:  now, Hold: m.cfg.CardAnomalyHold,
		})
		*specs = append(*specs, ss...)
		*changed = *changed || ch
	}
	m.subnetManager(now, specs, changed)
}

// judgedDevices are the devices whose state check is switched on (checks,
// --checks): card homogeneity speaks for that check, so a switched-off
// check raises nothing through its cards either.
func (m *Monitor) judgedDevices() []*topology.Device {
	out := make([]*topology.Device, 0, len(m.devices))
	for _, d := range m.devices {
		if m.cfg.Checks[checks.StateCheckFor(d.LinkLayer())] {
			out = append(out, d)
		}
	}
	return out
}

// goneByCard counts, per card, the ports of its NICs that are reported
// disappeared: each is fatal on its own (device-disappeared).
func (m *Monitor) goneByCard() map[string]int {
	if len(m.mem.Ports.Disappeared) == 0 {
		return nil
	}
	out := map[string]int{}
	for _, dev := range m.mem.Ports.Disappeared {
		card := cardOfAddress(m.mem.Ports.DeviceAddrs[dev])
		if card == "" {
			continue
		}
		n := 0
		for _, ps := range m.mem.Ports.PortStates {
			if ps.Device == dev {
				n++
			}
		}
		out[card] += max(n, 1)
	}
	return out
}

// subnetManager judges, per role group, whether every IB port waits in
// INIT/ARMED for a subnet manager (sm_lid 0): DESIGN.md difference 12.
// sm_lid is read only while every IB port of a group is INIT or ARMED, so
// a node with a working fabric reads nothing here.
func (m *Monitor) subnetManager(now time.Time, specs *[]event.Spec, changed *bool) {
	var waitingRoles []topology.Role
	for _, role := range []topology.Role{topology.RoleCompute, topology.RoleStorage} {
		total, waiting := 0, 0
		for _, p := range m.ports {
			if p.dev.Role != role || p.port.LinkLayer != topology.LinkLayerInfiniBand {
				continue
			}
			total++
			if p.observed && (p.obs.State.ID == sysfs.StateInit || p.obs.State.ID == sysfs.StateArmed) {
				waiting++
			}
		}
		if total > 0 && waiting == total {
			waitingRoles = append(waitingRoles, role)
		}
	}
	if len(waitingRoles) == 0 && len(m.mem.Cards.NoSM) == 0 {
		return
	}
	var groups []cards.SMGroup
	for _, role := range []topology.Role{topology.RoleCompute, topology.RoleStorage} {
		g := cards.SMGroup{Role: role}
		for _, p := range m.ports {
			if p.dev.Role == role && p.port.LinkLayer == topology.LinkLayerInfiniBand {
				g.Ports = append(g.Ports, event.PortRef{Device: p.dev.Name, Port: p.port.Num})
			}
		}
		if len(g.Ports) == 0 {
			continue
		}
		g.Waiting = containsRole(waitingRoles, role) && m.noSMLID(role)
		groups = append(groups, g)
	}
	ss, ch := m.mem.Cards.JudgeSubnetManager(groups, now, m.cfg.CardAnomalyHold)
	*specs = append(*specs, ss...)
	*changed = *changed || ch
}

// noSMLID reads sm_lid of every IB port of role and reports whether all
// are 0. A port whose sm_lid cannot be read or parsed says nothing, so the
// group is not judged as waiting (fail open).
func (m *Monitor) noSMLID(role topology.Role) bool {
	for _, p := range m.ports {
		if p.dev.Role != role || p.port.LinkLayer != topology.LinkLayerInfiniBand {
			continue
		}
		b, err := m.readFile(p.port.Dir + "/sm_lid")
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
