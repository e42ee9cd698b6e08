package cards

import (
	"fmt"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
	"github.com/nichealth/nichealthd/topology"
)

// NoSMErrorCode is the error code of the no-subnet-manager condition and
// of its clear.
const NoSMErrorCode = "no-subnet-manager"

// SMGroup is one role group's InfiniBand ports as the subnet manager
// judgement sees them.
type SMGroup struct {
	Role topology.Role
	// Ports are every monitored IB port of the group, in order.
	Ports []event.PortRef
	// Waiting: every one of them is in INIT or ARMED and its sm_lid is 0,
	// i.e. no subnet manager has configured any of them.
	Waiting bool
}

// JudgeSubnetManager raises one node-level condition per role group whose
// IB ports have all been waiting for a subnet manager for hold (DESIGN.md
// difference 12), and clears it when any of them stops waiting. Card
// homogeneity cannot see this: every card looks alike. The condition is
// non-fatal with action NONE (a missing subnet manager is the fabric's
// fault, not the node's), but it covers the group's ports, so the node is
// not healthy and wait-ready holds.
func (m *Memory) JudgeSubnetManager(groups []SMGroup, now time.Time, hold time.Duration) ([]event.Spec, bool) {
	if m.NoSM == nil {
		m.NoSM = map[string]NoSM{}
	}
	var specs []event.Spec
	changed := false
	seen := map[string]bool{}
	for _, g := range groups {
		role := string(g.Role)
		seen[role] = true
		st, had := m.NoSM[role]
		if !g.Waiting || len(g.Ports) == 0 {
			if had {
				if st.Raised {
					specs = append(specs, smFound(role, st, fmt.Sprintf(
						"Subnet manager seen on the %s fabric: its InfiniBand ports are no longer all waiting in INIT/ARMED with sm_lid 0", role)))
				}
				delete(m.NoSM, role)
				changed = true
			}
			continue
		}
		if !had {
			st = NoSM{Since: now}
			m.NoSM[role] = st
			changed = true
		}
		if st.Raised || now.Sub(st.Since) < hold {
			continue
		}
		st.Raised, st.Check, st.Ports = true, event.InfiniBandStateCheck, g.Ports
		m.NoSM[role] = st
		changed = true
		specs = append(specs, event.Spec{
			Kind: event.KindNoSubnetManager, CheckName: st.Check, Ports: st.Ports,
			ErrorCode: []string{NoSMErrorCode},
			Message: fmt.Sprintf("No subnet manager on the %s fabric: all %d InfiniBand ports of the node (%s) have been in INIT/ARMED with sm_lid 0x0 since %s; "+
				"no job can use them until a subnet manager (opensm, UFM) runs on the fabric: check it, and the node's cabling to the fabric's switches",
				role, len(g.Ports), portList(g.Ports), st.Since.UTC().Format(time.RFC3339)),
			Metadata:  map[string]string{"role": role, "since": st.Since.UTC().Format(time.RFC3339)},
			Condition: condition.OfNode("no-subnet-manager " + role),
		})
	}
	for role, st := range m.NoSM {
		if seen[role] {
			continue
		}
		if st.Raised {
			specs = append(specs, smFound(role, st, fmt.Sprintf("The %s group has no monitored InfiniBand port any more; its no-subnet-manager condition is cleared", role)))
		}
		delete(m.NoSM, role)
		changed = true
	}
	return specs, changed
}

func smFound(role string, st NoSM, message string) event.Spec {
	check := st.Check
	if check == "" {
		check = event.InfiniBandStateCheck
	}
	return event.Spec{
		Kind: event.KindSubnetManagerFound, CheckName: check, IsHealthy: true, Ports: st.Ports,
		ErrorCode: []string{NoSMErrorCode}, Message: message,
		Metadata:  map[string]string{"role": role},
		Condition: condition.OfNode("no-subnet-manager " + role),
	}
}

func portList(ps []event.PortRef) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = fmt.Sprintf("%s/%d", p.Device, p.Port)
	}
	return strings.Join(parts, ", ")
}
