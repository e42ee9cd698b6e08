package page

import (
	"fmt"

	"github.com/nichealth/nichealthd/fabric/ibnet"
	"github.com/nichealth/nichealthd/fabric/overlay"
)

// Model is what the page shows, in the form its script reads.
type Model struct {
	Title  string `json:"title"`
	Source string `json:"source"`
	// Health says where the overlay came from ("" when there is none).
	Health   string   `json:"health"`
	Switches int      `json:"switches"`
	HCAs     int      `json:"hcas"`
	Routers  int      `json:"routers"`
	Nodes    []Node   `json:"nodes"`
	Links    []Link   `json:"links"`
	Notes    []string `json:"notes,omitempty"`
}

// Node is a node as drawn.
type Node struct {
	ID   string `json:"id"` // node GUID
	Kind string `json:"kind"`
	Name string `json:"name"`
	LID  int    `json:"lid,omitempty"`
	// Tier: 0 for HCAs and routers, 1 for leaf switches (those with an
	// HCA or router below), 2 for the spines above them, and so on.
	Tier int `json:"tier"`
	// Chassis groups the switch ASICs of one director (a shared system
	// image GUID); "" for a standalone switch.
	Chassis string `json:"chassis,omitempty"`
	// Leaf is, for an HCA or router, the switch it hangs under when drawn
	// (its first port's switch).
	Leaf    string          `json:"leaf,omitempty"`
	Verdict overlay.Verdict `json:"verdict,omitempty"`
	Ports   []Port          `json:"ports"`
}

// Port is one connected port.
type Port struct {
	Num        int             `json:"num"`
	GUID       string          `json:"guid,omitempty"`
	LID        int             `json:"lid,omitempty"`
	Width      string          `json:"width"`
	Speed      string          `json:"speed"`
	Remote     string          `json:"remote"`
	RemotePort int             `json:"remotePort"`
	RemoteName string          `json:"remoteName"`
	Verdict    overlay.Verdict `json:"verdict,omitempty"`
	// Reporter is the daemon that judged it: "node mlx5_3 port 1".
	Reporter   string   `json:"reporter,omitempty"`
	State      string   `json:"state,omitempty"`
	Conditions []string `json:"conditions,omitempty"`
}

// Link is one link as drawn.
type Link struct {
	A        string  `json:"a"`
	AP       int     `json:"ap"`
	B        string  `json:"b"`
	BP       int     `json:"bp"`
	Width    string  `json:"width"`
	Speed    string  `json:"speed"`
	Gbps     float64 `json:"gbps"`
	Degraded bool    `json:"degraded,omitempty"`
	Expected string  `json:"expected,omitempty"`
	Disagree bool    `json:"disagree,omitempty"`
	// Verdict is the worse of its two ends' reported verdicts.
	Verdict overlay.Verdict `json:"verdict,omitempty"`
}

// Build lays the overlay (nil for none) over the graph.
func Build(title, source string, g *ibnet.Graph, o *overlay.Overlay) *Model {
	m := &Model{Title: title, Source: source, Switches: g.Count(ibnet.Switch), HCAs: g.Count(ibnet.HCA),
		Routers: g.Count(ibnet.Router), Nodes: []Node{}, Links: []Link{}}
	if o != nil {
		m.Health = o.Source
	}
	tiers := Tiers(g)
	chassis := Chassis(g)
	verdictOf := map[[2]any]overlay.Verdict{}
	matched := 0
	for _, nd := range g.Nodes {
		n := Node{ID: nd.GUID.String(), Kind: nd.Kind.String(), Name: nd.Name, LID: nd.LID, Tier: tiers[nd.GUID],
			Chassis: chassis[nd.GUID], Ports: []Port{}}
		for _, pt := range nd.Ports {
			p := Port{Num: pt.Num, LID: pt.LID, Width: pt.Width, Speed: pt.Speed, Remote: pt.Remote.GUID.String(),
				RemotePort: pt.Remote.Port, RemoteName: pt.Remote.Name}
			if pt.GUID != 0 {
				p.GUID = pt.GUID.String()
			}
			if n.Leaf == "" && nd.Kind != ibnet.Switch && pt.Remote.Kind == ibnet.Switch {
				n.Leaf = p.Remote
			}
			if r := o.Lookup(nd.GUID, pt.Num, pt.GUID); r != nil && nd.Kind != ibnet.Switch {
				matched++
				p.Verdict, p.State, p.Conditions = r.Verdict, r.State, r.Conditions
				p.Reporter = fmt.Sprintf("%s %s port %d", r.Node, r.Device, r.Port)
				n.Verdict = overlay.Worse(n.Verdict, r.Verdict)
				verdictOf[[2]any{nd.GUID, pt.Num}] = r.Verdict
			}
			n.Ports = append(n.Ports, p)
		}
		m.Nodes = append(m.Nodes, n)
	}
	// A port known only as a far end (its HCA has no block of its own in
	// the dump) can still be judged through the link's port GUID.
	for _, l := range g.Links {
		for _, e := range []ibnet.End{l.A, l.B} {
			if _, ok := verdictOf[[2]any{e.GUID, e.Port}]; !ok && e.Kind != ibnet.Switch {
				if r := o.Lookup(e.GUID, e.Port, e.PortGUID); r != nil {
					verdictOf[[2]any{e.GUID, e.Port}] = r.Verdict
				}
			}
		}
		m.Links = append(m.Links, Link{A: l.A.GUID.String(), AP: l.A.Port, B: l.B.GUID.String(), BP: l.B.Port,
			Width: l.Width, Speed: l.Speed, Gbps: l.Gbps, Degraded: l.Degraded, Expected: l.Expected, Disagree: l.Disagree,
			Verdict: overlay.Worse(verdictOf[[2]any{l.A.GUID, l.A.Port}], verdictOf[[2]any{l.B.GUID, l.B.Port}])})
	}
	if o != nil {
		m.Notes = append(m.Notes, fmt.Sprintf("%d of %d reported ports are on this fabric", matched, len(o.Ports)))
	}
	return m
}

// Tiers ranks every node: HCAs and routers 0, a switch with one of them
// attached 1 (a leaf), any other switch one more than its nearest leaf
// (spines 2, cores 3). A switch that reaches no leaf (an isolated switch
// island) counts as a spine.
func Tiers(g *ibnet.Graph) map[ibnet.GUID]int {
	t := map[ibnet.GUID]int{}
	adj := map[ibnet.GUID][]ibnet.GUID{}
	for _, l := range g.Links {
		adj[l.A.GUID] = append(adj[l.A.GUID], l.B.GUID)
		adj[l.B.GUID] = append(adj[l.B.GUID], l.A.GUID)
	}
	var queue []ibnet.GUID
	for _, nd := range g.Nodes {
		if nd.Kind != ibnet.Switch {
			t[nd.GUID] = 0
			continue
		}
		for _, peer := range adj[nd.GUID] {
			if p := g.Node(peer); p != nil && p.Kind != ibnet.Switch {
				t[nd.GUID] = 1
				queue = append(queue, nd.GUID)
				break
			}
		}
	}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, peer := range adj[cur] {
			if p := g.Node(peer); p == nil || p.Kind != ibnet.Switch {
				continue
			}
			if _, seen := t[peer]; !seen {
				t[peer] = t[cur] + 1
				queue = append(queue, peer)
			}
		}
	}
	for _, nd := range g.Nodes {
		if _, ok := t[nd.GUID]; !ok {
			t[nd.GUID] = 2
		}
	}
	return t
}

// Chassis names the director each switch ASIC belongs to: switches that
// share a system image GUID are one chassis (named by the chassis number
// of a grouped dump when there is one, else by the GUID). A switch alone
// in its system image is not in a chassis.
func Chassis(g *ibnet.Graph) map[ibnet.GUID]string {
	members := map[ibnet.GUID][]*ibnet.Node{}
	for _, nd := range g.Nodes {
		if nd.Kind == ibnet.Switch && nd.SysImageGUID != 0 {
			members[nd.SysImageGUID] = append(members[nd.SysImageGUID], nd)
		}
	}
	out := map[ibnet.GUID]string{}
	for sys, nds := range members {
		if len(nds) < 2 {
			continue
		}
		name := "chassis " + sys.String()
		for _, nd := range nds {
			if nd.Chassis != 0 {
				name = fmt.Sprintf("chassis %d (%s)", nd.Chassis, sys)
			}
		}
		for _, nd := range nds {
			out[nd.GUID] = name
		}
	}
	return out
}
