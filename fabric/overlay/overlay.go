package overlay

import (
	"cmp"
	"slices"

	"github.com/nichealth/nichealthd/fabric/ibnet"
)

// Port is one port as a daemon reported it.
type Port struct {
	// Node is where the report came from: the Prometheus instance or the
	// dump's node name.
	Node     string     `json:"node"`
	Device   string     `json:"device"`
	Port     int        `json:"port"`
	NodeGUID ibnet.GUID `json:"nodeGUID"`
	PortGUID ibnet.GUID `json:"portGUID,omitempty"`
	Verdict  Verdict    `json:"verdict"`
	State    string     `json:"state,omitempty"`
	// Conditions are what makes the verdict: fatal and degraded
	// conditions, latched counters and firing alerts, one line each.
	Conditions []string `json:"conditions,omitempty"`
	// Cable is which way errors flow across the port's cable, as its
	// daemon's cable verdict says (DESIGN.md section 15): "to-host",
	// "from-host", "both", or "" when the cable is clean or not judged.
	Cable string `json:"cable,omitempty"`
}

// cableDirection keeps what a report says of a cable's direction to the
// closed vocabulary the page draws.
func cableDirection(s string) string {
	switch s {
	case "to-host", "from-host", "both":
		return s
	}
	return ""
}

// cableCondition is the verdict as a condition line.
func cableCondition(direction, suspect string) string {
	if suspect == "" {
		suspect = "unknown"
	}
	return "cable: errors " + direction + ", suspect " + suspect
}

// Overlay is the fleet's port health keyed by GUID.
type Overlay struct {
	// Source says where it came from ("prometheus http://…", "status
	// dumps in DIR").
	Source string  `json:"source"`
	Ports  []*Port `json:"ports"`
	// Switches are the switch ports the fleet's daemons read (their fabric
	// shares), sorted by switch GUID and port.
	Switches []*SwitchPort `json:"switches,omitempty"`
	byNode   map[nodePort]*Port
	byPort   map[ibnet.GUID]*Port
	bySwitch map[switchKey]*SwitchPort
}

type nodePort struct {
	guid ibnet.GUID
	port int
}

func newOverlay(source string) *Overlay {
	return &Overlay{Source: source, byNode: map[nodePort]*Port{}, byPort: map[ibnet.GUID]*Port{},
		bySwitch: map[switchKey]*SwitchPort{}}
}

// add indexes a port; a port reported twice (two scrape jobs, two dumps)
// keeps the worse verdict and both reports' conditions.
func (o *Overlay) add(p *Port) {
	if p.NodeGUID == 0 && p.PortGUID == 0 {
		return
	}
	if old := o.Lookup(p.NodeGUID, p.Port, p.PortGUID); old != nil {
		old.Verdict = Worse(old.Verdict, p.Verdict)
		if old.Cable == "" {
			old.Cable = p.Cable
		} else if p.Cable != "" && p.Cable != old.Cable {
			old.Cable = "both"
		}
		for _, c := range p.Conditions {
			if !slices.Contains(old.Conditions, c) {
				old.Conditions = append(old.Conditions, c)
			}
		}
		return
	}
	o.Ports = append(o.Ports, p)
	if p.NodeGUID != 0 {
		o.byNode[nodePort{p.NodeGUID, p.Port}] = p
	}
	if p.PortGUID != 0 {
		o.byPort[p.PortGUID] = p
	}
}

func (o *Overlay) sort() {
	slices.SortFunc(o.Ports, func(a, b *Port) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Device, b.Device), cmp.Compare(a.Port, b.Port))
	})
	for _, p := range o.Ports {
		slices.Sort(p.Conditions)
	}
}

// Lookup finds the report of a fabric port: by its port GUID when the
// dump printed one, else by node GUID and port number. It returns nil for
// a port no daemon reported (a switch, a host without nichealthd).
func (o *Overlay) Lookup(nodeGUID ibnet.GUID, port int, portGUID ibnet.GUID) *Port {
	if o == nil {
		return nil
	}
	if portGUID != 0 {
		if p := o.byPort[portGUID]; p != nil {
			return p
		}
	}
	return o.byNode[nodePort{nodeGUID, port}]
}
