package page

import (
	"fmt"
	"strings"

	"github.com/nichealth/nichealthd/fabric/ibnet"
	"github.com/nichealth/nichealthd/fabric/overlay"
)

// Model is what the page shows. It refers to nodes by index and to rates
// and chassis by index into tables, so each string of the fabric is in
// the page once: a fabric's page is smaller than its ibnetdiscover dump.
type Model struct {
	Title  string
	Source string
	// Health says where the overlay came from ("" when there is none).
	Health                  string
	Switches, HCAs, Routers int
	Notes                   []string
	Nodes                   []Node
	Links                   []Link
	// Rates are the distinct link rates (width and speed), Chassis the
	// distinct chassis names; links and nodes refer to them by index.
	Rates   []Rate
	Chassis []string
	// Ends are the link ends that carry more than their node and port:
	// an HCA's port GUID and LID, a switch port's label.
	Ends []End
	// Reports are what the daemons said about their ports.
	Reports []Report
}

// Node is a node as drawn.
type Node struct {
	GUID ibnet.GUID
	Name string
	LID  int32
	// Tier: 0 for HCAs and routers, 1 for leaf switches (those with an
	// HCA or router below), 2 for the spines above them, and so on.
	Tier int32
	// Chassis is the index in Model.Chassis of the director this switch
	// ASIC belongs to, or -1 for a standalone switch.
	Chassis int32
	// Leaf is, for an HCA or router, the index of the switch it hangs
	// under when drawn (its first port's switch), or -1.
	Leaf    int32
	Kind    ibnet.Kind
	Verdict overlay.Verdict
}

// Link is one link as drawn: node indexes and ports, its rate's index in
// Model.Rates and, when it trained below its peers, theirs.
type Link struct {
	A, B     int32
	AP, BP   uint8
	Rate     int16
	Expected int16 // -1 unless Degraded
	Degraded bool
	Disagree bool
	// Verdict is the worse of its two ends' reported verdicts: an HCA's
	// port as its daemon judged it, a switch port as the daemon that reads
	// it in its fabric share saw its counters.
	Verdict overlay.Verdict
	// Unread: a switch port of this link is in a fabric share but no
	// daemon has read it lately.
	Unread bool
	// ErrA and ErrB say the half of the link at end A (B) carries errors:
	// the receiver at that end counts them, by the HCA's cable verdict
	// (DESIGN.md section 15: to-host errs the HCA's half, from-host the
	// switch's, both both).
	ErrA, ErrB bool
}

// Rate is a link rate as printed ("4x", "NDR") and its data rate.
type Rate struct {
	Width ibnet.Width
	Speed ibnet.Speed
}

// End is a link end's own details.
type End struct {
	GUID  ibnet.GUID
	Label string
	Node  int32
	LID   int32
	Port  uint8
}

// Report is one port's report laid over the fabric.
type Report struct {
	Node, Port int
	Verdict    overlay.Verdict
	// Reporter is the daemon that judged it: "node mlx5_3 port 1", or for
	// a switch port "read by node".
	Reporter   string
	State      string
	Conditions []string
	// Unread: a switch port no daemon has read lately.
	Unread bool
}

// Build lays the overlay (nil for none) over the graph.
func Build(title, source string, g *ibnet.Graph, o *overlay.Overlay) *Model {
	m := &Model{Title: title, Source: source, Switches: g.Count(ibnet.Switch), HCAs: g.Count(ibnet.HCA),
		Routers: g.Count(ibnet.Router), Nodes: make([]Node, len(g.Nodes)), Links: make([]Link, 0, len(g.Links))}
	if o != nil {
		m.Health = o.Source
	}
	tiers := Tiers(g)
	chassis := Chassis(g)
	chassisIndex := map[string]int{}
	for i := range g.Nodes {
		nd := &g.Nodes[i]
		n := Node{Kind: nd.Kind, GUID: nd.GUID, Name: nd.Name, LID: int32(nd.LID), Tier: int32(tiers[i]), Chassis: -1, Leaf: -1}
		if c, ok := chassis[i]; ok {
			k, seen := chassisIndex[c]
			if !seen {
				k = len(m.Chassis)
				chassisIndex[c] = k
				m.Chassis = append(m.Chassis, c)
			}
			n.Chassis = int32(k)
		}
		if nd.Kind != ibnet.Switch {
			for _, pt := range g.PortsOf(i) {
				if g.Nodes[pt.Remote.Node].Kind == ibnet.Switch {
					n.Leaf = pt.Remote.Node
					break
				}
			}
		}
		m.Nodes[i] = n
	}
	rateIndex := map[Rate]int{}
	rate := func(w ibnet.Width, s ibnet.Speed) int16 {
		r := Rate{w, s}
		k, ok := rateIndex[r]
		if !ok {
			k = len(m.Rates)
			rateIndex[r] = k
			m.Rates = append(m.Rates, r)
		}
		return int16(k)
	}
	// A port is judged by the daemon that owns it: HCA and router ports
	// only, found by port GUID when the dump printed one, else by node
	// GUID and port.
	type key struct{ node, port int }
	reported := map[key]overlay.Verdict{}
	cable := map[key]string{} // an HCA port's cable direction
	matched := 0
	report := func(node, port int, portGUID ibnet.GUID) {
		if o == nil || g.Nodes[node].Kind == ibnet.Switch {
			return
		}
		if _, done := reported[key{node, port}]; done {
			return
		}
		r := o.Lookup(g.Nodes[node].GUID, port, portGUID)
		if r == nil {
			return
		}
		matched++
		reported[key{node, port}] = r.Verdict
		if r.Cable != "" {
			cable[key{node, port}] = r.Cable
		}
		m.Reports = append(m.Reports, Report{Node: node, Port: port, Verdict: r.Verdict,
			Reporter: fmt.Sprintf("%s %s port %d", r.Node, r.Device, r.Port), State: r.State, Conditions: r.Conditions})
		m.Nodes[node].Verdict = overlay.Worse(m.Nodes[node].Verdict, r.Verdict)
	}
	// A switch port is judged by the daemon that reads it in its fabric
	// share, found by switch GUID and port.
	unread := map[key]bool{}
	switches := 0
	reportSwitch := func(node, port int) {
		if o == nil || g.Nodes[node].Kind != ibnet.Switch {
			return
		}
		if _, done := reported[key{node, port}]; done {
			return
		}
		sp := o.Switch(g.Nodes[node].GUID, port)
		if sp == nil {
			return
		}
		switches++
		reported[key{node, port}] = sp.Verdict
		unread[key{node, port}] = sp.Unread
		reporter := "read by no node"
		if len(sp.Readers) > 0 {
			reporter = "read by " + strings.Join(sp.Readers, ", ")
		}
		m.Reports = append(m.Reports, Report{Node: node, Port: port, Verdict: sp.Verdict, Reporter: reporter,
			Conditions: sp.Conditions, Unread: sp.Unread})
		m.Nodes[node].Verdict = overlay.Worse(m.Nodes[node].Verdict, sp.Verdict)
	}
	for i := range g.Nodes {
		for _, pt := range g.PortsOf(i) {
			report(i, int(pt.Num), pt.GUID)
			reportSwitch(i, int(pt.Num))
		}
	}
	for _, l := range g.Links {
		for _, e := range [2]ibnet.End{l.A, l.B} {
			// A port known only as a far end (its HCA has no block of its
			// own in the dump) is judged through the link's port GUID.
			report(int(e.Node), int(e.Port), e.PortGUID)
			reportSwitch(int(e.Node), int(e.Port))
			end := End{Node: e.Node, Port: e.Port, GUID: e.PortGUID}
			if p := g.PortOf(int(e.Node), int(e.Port)); p != nil {
				end.LID, end.Label = p.LID, p.Label
				if end.GUID == 0 {
					end.GUID = p.GUID
				}
			}
			if end.GUID != 0 || end.LID != 0 || end.Label != "" {
				m.Ends = append(m.Ends, end)
			}
		}
		ml := Link{A: l.A.Node, AP: l.A.Port, B: l.B.Node, BP: l.B.Port, Rate: rate(l.Width, l.Speed),
			Expected: -1, Degraded: l.Degraded, Disagree: l.Disagree,
			Verdict: overlay.Worse(reported[key{int(l.A.Node), int(l.A.Port)}], reported[key{int(l.B.Node), int(l.B.Port)}]),
			Unread:  unread[key{int(l.A.Node), int(l.A.Port)}] || unread[key{int(l.B.Node), int(l.B.Port)}]}
		if l.Degraded {
			ml.Expected = rate(l.ExpectedWidth, l.ExpectedSpeed)
		}
		ml.ErrA, ml.ErrB = errHalves(cable[key{int(l.A.Node), int(l.A.Port)}], cable[key{int(l.B.Node), int(l.B.Port)}])
		m.Links = append(m.Links, ml)
	}
	if o != nil {
		m.Notes = append(m.Notes, fmt.Sprintf("%d of %d reported ports are on this fabric", matched, len(o.Ports)))
		if len(o.Switches) > 0 {
			n := 0
			for _, sp := range o.Switches {
				if sp.Unread {
					n++
				}
			}
			m.Notes = append(m.Notes, fmt.Sprintf("%d of %d switch ports in the fabric shares are on this fabric; %d read by no node", switches, len(o.Switches), n))
		}
	}
	return m
}

// Tiers ranks every node by index: HCAs and routers 0, a switch with one
// of them attached 1 (a leaf), any other switch one more than its nearest
// leaf (spines 2, cores 3). A switch that reaches no leaf (an isolated
// switch island) counts as a spine.
func Tiers(g *ibnet.Graph) []int {
	t := make([]int, len(g.Nodes))
	for i := range t {
		t[i] = -1
	}
	var queue []int
	for i := range g.Nodes {
		if g.Nodes[i].Kind != ibnet.Switch {
			t[i] = 0
		}
	}
	// Leaves: switches cabled to an HCA or router, whichever end printed
	// the cable.
	for _, l := range g.Links {
		a, b := int(l.A.Node), int(l.B.Node)
		for _, pair := range [2][2]int{{a, b}, {b, a}} {
			sw, peer := pair[0], pair[1]
			if g.Nodes[sw].Kind == ibnet.Switch && g.Nodes[peer].Kind != ibnet.Switch && t[sw] != 1 {
				t[sw] = 1
				queue = append(queue, sw)
			}
		}
	}
	adj := make([][]int32, len(g.Nodes))
	for _, l := range g.Links {
		if g.Nodes[l.A.Node].Kind == ibnet.Switch && g.Nodes[l.B.Node].Kind == ibnet.Switch {
			adj[l.A.Node] = append(adj[l.A.Node], l.B.Node)
			adj[l.B.Node] = append(adj[l.B.Node], l.A.Node)
		}
	}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, peer := range adj[cur] {
			if t[peer] < 0 {
				t[peer] = t[cur] + 1
				queue = append(queue, int(peer))
			}
		}
	}
	for i := range t {
		if t[i] < 0 {
			t[i] = 2
		}
	}
	return t
}

// Chassis names the director each switch ASIC belongs to, by node index:
// switches that share a system image GUID are one chassis (named by the
// chassis number of a grouped dump when there is one, else by the GUID).
// A switch alone in its system image is not in a chassis.
func Chassis(g *ibnet.Graph) map[int]string {
	members := map[ibnet.GUID][]int{}
	for i := range g.Nodes {
		nd := &g.Nodes[i]
		if nd.Kind == ibnet.Switch && nd.SysImageGUID != 0 {
			members[nd.SysImageGUID] = append(members[nd.SysImageGUID], i)
		}
	}
	out := map[int]string{}
	for sys, nds := range members {
		if len(nds) < 2 {
			continue
		}
		name := "chassis " + sys.String()
		for _, i := range nds {
			if g.Nodes[i].Chassis != 0 {
				name = fmt.Sprintf("chassis %d (%s)", g.Nodes[i].Chassis, sys)
			}
		}
		for _, i := range nds {
			out[i] = name
		}
	}
	return out
}

func ibnetRate(r Rate) float64 { return ibnet.Rate(r.Width, r.Speed) }

// errHalves says which halves of a link err from the cable verdicts of its
// ends (a switch end has none): errors are drawn on the half next to the
// receiver that counts them, so to-host lights the HCA's half and
// from-host the far one.
func errHalves(a, b string) (errA, errB bool) {
	mark := func(d string, self, other *bool) {
		switch d {
		case "to-host":
			*self = true
		case "from-host":
			*other = true
		case "both":
			*self, *other = true, true
		}
	}
	mark(a, &errA, &errB)
	mark(b, &errB, &errA)
	return errA, errB
}
