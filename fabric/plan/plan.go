package plan

import (
	"cmp"
	"container/heap"
	"fmt"
	"slices"
	"strings"

	"github.com/nichealth/nichealthd/fabric/ibnet"
	"github.com/nichealth/nichealthd/internal/fabricentry"
)

// Threshold is the slides' static imbalance bound: a port goes to the
// host its forwarding table points at unless that host already reads
// this many ports more than the least-loaded host.
const Threshold = 5

// Assignment is one switch port for a host to read. Its Entry is what
// the host's file holds.
type Assignment struct {
	SwitchGUID ibnet.GUID
	Port       int
	SwitchName string
	// SwitchLID is the switch's port 0 LID, where its PMA answers: the
	// reading daemon sends its MADs there, after checking the LID still
	// belongs to SwitchGUID (0, left out of the file: the inputs gave
	// none, and a daemon refuses the entry).
	SwitchLID int
	// Rule says why the port is this host's (not in the file): Direct,
	// Forwarded or LeastLoaded.
	Rule Rule
}

// Unassigned is a port on the job's paths that no host of the job can
// read, and why.
type Unassigned struct {
	Assignment
	Reason string
}

// Rule is which of the slides' rules gave a port to its host.
type Rule uint8

const (
	// Direct: rule 1, the switch port cabled to the host's HCA.
	Direct Rule = iota + 1
	// Forwarded: rule 3, the port forwards one of the host's LIDs.
	Forwarded
	// LeastLoaded: rule 4, the host read the fewest ports (the forwarded
	// host was Threshold or more ahead, or no job host's LID leaves
	// through the port).
	LeastLoaded
)

// Plan is one list of switch ports per host of the job (rule 5). Whole
// and File give it the assignment file's shape.
type Plan struct {
	Assignments map[string][]Assignment
	Unassigned  []Unassigned
}

// HostPort is one cabled HCA port of a job host.
type HostPort struct {
	Host string
	// CA and Port are the HCA (node index in the graph) and its port.
	CA, Port int
	// LID is the port's base LID and LMC its LID mask: the port owns
	// LID … LID+2^LMC-1.
	LID, LMC int
	// Switch and SwitchPort are the far end (node index, port).
	Switch, SwitchPort int
}

// HostOf names the host an HCA belongs to: the first word of its name
// (the node-name map's, when one was applied, else its NodeDescription:
// "gpu-a017 mlx5_0", "node018 HCA-1").
func HostOf(name string) string {
	f, _, _ := strings.Cut(strings.TrimSpace(name), " ")
	return f
}

// sameHost matches a job's host name with an HCA's: case aside, and a
// fully qualified name matches its first label.
func sameHost(job, hca string) bool {
	if strings.EqualFold(job, hca) {
		return true
	}
	j, h := fabricentry.ShortHost(job), fabricentry.ShortHost(hca)
	return j != "" && strings.EqualFold(j, h)
}

// HostPorts finds the job hosts' cabled HCA ports in the graph, host by
// host in the order given. Hosts with no HCA in the fabric are returned
// apart.
func HostPorts(g *ibnet.Graph, hosts []string) ([]HostPort, []string) {
	want := map[string]string{} // lower-cased short name -> job name
	for _, h := range hosts {
		want[strings.ToLower(fabricentry.ShortHost(h))] = h
	}
	var out []HostPort
	found := map[string]bool{}
	for _, l := range g.Links {
		for _, pair := range [2][2]ibnet.End{{l.A, l.B}, {l.B, l.A}} {
			ca, sw := pair[0], pair[1]
			cn := g.End(ca)
			if cn.Kind != ibnet.HCA || g.End(sw).Kind != ibnet.Switch {
				continue
			}
			hca := HostOf(cn.Name)
			job, ok := want[strings.ToLower(fabricentry.ShortHost(hca))]
			if !ok || !sameHost(job, hca) {
				continue
			}
			hp := HostPort{Host: job, CA: int(ca.Node), Port: int(ca.Port), LID: cn.LID, Switch: int(sw.Node), SwitchPort: int(sw.Port)}
			if p := g.PortOf(int(ca.Node), int(ca.Port)); p != nil && p.LID > 0 {
				hp.LID, hp.LMC = int(p.LID), int(p.LMC)
			}
			out = append(out, hp)
			found[job] = true
		}
	}
	order := map[string]int{}
	for i, h := range hosts {
		order[h] = i
	}
	slices.SortStableFunc(out, func(a, b HostPort) int {
		return cmp.Or(cmp.Compare(order[a.Host], order[b.Host]), cmp.Compare(g.Nodes[a.CA].GUID, g.Nodes[b.CA].GUID), cmp.Compare(a.Port, b.Port))
	})
	var missing []string
	for _, h := range hosts {
		if !found[h] {
			missing = append(missing, h)
		}
	}
	return out, missing
}

// swPort is a switch port: node index and port number.
type swPort struct{ sw, port int }

// Make plans the reading of the job's fabric by the slides' rules:
//
//  1. the switch port cabled to a host's HCA is that host's;
//  2. every switch port at either end of a link on the forwarding paths
//     between all pairs of the job's hosts is to be read (a path's entry
//     ports too: with up/down routing the way back may take another
//     spine);
//  3. each goes to a job host whose LID that port forwards (so the
//     port faces its reader and the hop count stays minimal in the
//     reverse direction), the least-loaded of them;
//  4. unless that host already reads Threshold or more ports more than
//     the least-loaded host: then to the least-loaded host, as is a port
//     no job host's LID leaves through;
//  5. one list per host.
//
// Hosts read only through a port with a LID: a host whose HCAs have none
// (ports not active) reads nothing, and its cable's switch port goes by
// rule 4. Ports go in switch-GUID and port order, hosts break ties by
// their place in the list, so a plan is a function of its inputs. The
// notes say what the inputs lacked (hosts not in the fabric, paths a
// table does not route).
func Make(g *ibnet.Graph, t *Tables, hosts []string) (*Plan, []string) {
	var notes []string
	note := func(format string, args ...any) {
		if len(notes) < maxProblems {
			notes = append(notes, fmt.Sprintf(format, args...))
		}
	}
	hps, missing := HostPorts(g, hosts)
	for _, h := range missing {
		note("%s: no HCA of this host is in the ibnetdiscover output (its NodeDescription's first word, or its name in the node-name map, must be the host name)", h)
	}
	p := &Plan{Assignments: map[string][]Assignment{}, Unassigned: []Unassigned{}}
	for _, h := range hosts {
		p.Assignments[h] = []Assignment{}
	}
	// The readers: job hosts with a LID, in list order.
	idx := map[string]int{}
	readers := make([]string, 0, len(hosts))
	for _, hp := range hps {
		if hp.LID > 0 {
			if _, ok := idx[hp.Host]; !ok {
				idx[hp.Host] = len(readers)
				readers = append(readers, hp.Host)
			}
		}
	}
	for _, h := range hosts {
		if _, ok := idx[h]; !ok && !slices.Contains(missing, h) {
			note("%s: none of its HCA ports has a LID (not active?); it reads nothing", h)
		}
	}

	// The tables by node index.
	lfts := make([]*LFT, len(g.Nodes))
	for i := range g.Nodes {
		if g.Nodes[i].Kind == ibnet.Switch {
			lfts[i] = t.Switch(g.Nodes[i].GUID)
		}
	}
	// The job's LIDs and whose they are, reader by reader.
	type jobLID struct{ lid, reader int }
	var lids []jobLID
	for _, hp := range hps {
		if r, ok := idx[hp.Host]; ok && hp.LID > 0 {
			for k := 0; k < 1<<hp.LMC; k++ {
				lids = append(lids, jobLID{hp.LID + k, r})
			}
		}
	}
	slices.SortFunc(lids, func(a, b jobLID) int { return cmp.Or(cmp.Compare(a.reader, b.reader), cmp.Compare(a.lid, b.lid)) })

	owner := map[swPort]int{} // assigned port -> reader index
	rule := map[swPort]Rule{}
	required := map[swPort]bool{}
	// Rule 1.
	for _, hp := range hps {
		sp := swPort{hp.Switch, hp.SwitchPort}
		required[sp] = true
		if r, ok := idx[hp.Host]; ok {
			owner[sp], rule[sp] = r, Direct
		}
	}
	// Rule 2: walk the tables towards every job LID from every switch a
	// job port is cabled to (but a host's own: traffic between its HCAs
	// is not the job's). The paths towards one LID form a tree, so a walk
	// stops at a switch already walked for that LID.
	type source struct {
		host  string
		multi bool // ports of two or more hosts
	}
	sources := map[int]source{}
	var srcOrder []int
	for _, hp := range hps {
		if hp.LID == 0 {
			continue
		}
		s, ok := sources[hp.Switch]
		if !ok {
			sources[hp.Switch] = source{host: hp.Host}
			srcOrder = append(srcOrder, hp.Switch)
		} else if s.host != hp.Host {
			s.multi = true
			sources[hp.Switch] = s
		}
	}
	walked := make([]int, len(g.Nodes)) // switch -> last LID walked from it, +1
	missingTable := map[int]bool{}
	for _, dst := range hps {
		for k := 0; k < 1<<dst.LMC && dst.LID > 0; k++ {
			lid := dst.LID + k
			for _, sw := range srcOrder {
				if s := sources[sw]; s.multi || s.host != dst.Host {
					p.walk(g, lfts, walked, required, missingTable, sw, lid, dst, note)
				}
			}
		}
	}
	var noTable []int
	for sw := range missingTable {
		noTable = append(noTable, sw)
	}
	slices.SortFunc(noTable, func(a, b int) int { return cmp.Compare(g.Nodes[a].GUID, g.Nodes[b].GUID) })
	for _, sw := range noTable {
		note("switch %s (%s) is on the job's paths but the forwarding tables have none for it: its ports beyond it are not planned",
			g.Nodes[sw].GUID, g.Nodes[sw].Name)
	}

	// A port no daemon can read (a number outside a switch's external
	// ports, a switch without a unicast LID: a damaged or crafted dump)
	// is said in the plan's unassigned list with the daemon's own reason,
	// never written into a host's list: a daemon refuses a whole file
	// that holds one.
	for _, sp := range sortedPorts(g, required) {
		why := fabricentry.Port(sp.port)
		if why == "" {
			why = fabricentry.LID(g.Nodes[sp.sw].LID)
		}
		if why != "" {
			delete(required, sp)
			delete(owner, sp)
			p.Unassigned = append(p.Unassigned, Unassigned{Assignment: p.assignment(g, sp, 0), Reason: why + ": no daemon reads it"})
		}
	}

	// Rules 3 and 4, port by port in switch GUID and port order.
	var todo []swPort
	for sp := range required {
		if _, done := owner[sp]; !done {
			todo = append(todo, sp)
		}
	}
	byGUID := func(a, b swPort) int {
		return cmp.Or(cmp.Compare(g.Nodes[a.sw].GUID, g.Nodes[b.sw].GUID), cmp.Compare(a.port, b.port))
	}
	slices.SortFunc(todo, byGUID)
	load := newLoads(len(readers))
	for _, r := range owner {
		load.add(r)
	}
	// Each switch's ports' candidates: the readers whose LIDs it forwards
	// out of each port, found once per switch (a reader's LIDs are in a
	// row, so a reader is added to a port once).
	candidates := map[swPort][]int{}
	var perPort [256][]int
	for i, sp := range todo {
		if (i > 0 && todo[i-1].sw == sp.sw) || lfts[sp.sw] == nil {
			continue
		}
		for port := range perPort {
			perPort[port] = nil
		}
		for _, jl := range lids {
			out := lfts[sp.sw].Port(jl.lid)
			if c := perPort[out]; len(c) == 0 || c[len(c)-1] != jl.reader {
				perPort[out] = append(c, jl.reader)
			}
		}
		for port, c := range perPort {
			if len(c) > 0 && required[swPort{sp.sw, port}] {
				candidates[swPort{sp.sw, port}] = c
			}
		}
	}
	for _, sp := range todo {
		if len(readers) == 0 {
			p.Unassigned = append(p.Unassigned, Unassigned{Assignment: p.assignment(g, sp, 0),
				Reason: "no host of the job has an active port to read it from"})
			continue
		}
		chosen, why := load.choose(candidates[sp])
		owner[sp], rule[sp] = chosen, why
		load.add(chosen)
	}

	// Rule 5.
	for sp, r := range owner {
		h := readers[r]
		p.Assignments[h] = append(p.Assignments[h], p.assignment(g, sp, rule[sp]))
	}
	for sp := range required {
		if _, ok := owner[sp]; !ok && len(readers) > 0 {
			// Unreachable: every required port has an owner when there is
			// a reader. Kept so a change that breaks it shows.
			p.Unassigned = append(p.Unassigned, Unassigned{Assignment: p.assignment(g, sp, 0), Reason: "not assigned"})
		}
	}
	for h := range p.Assignments {
		slices.SortFunc(p.Assignments[h], func(a, b Assignment) int {
			return cmp.Or(cmp.Compare(a.SwitchGUID, b.SwitchGUID), cmp.Compare(a.Port, b.Port))
		})
		if l := p.Assignments[h]; len(l) > fabricentry.MaxPorts {
			for _, a := range l[fabricentry.MaxPorts:] {
				p.Unassigned = append(p.Unassigned, Unassigned{Assignment: a,
					Reason: fmt.Sprintf("%s already reads %d ports, the most a daemon reads: plan the job over more hosts", h, fabricentry.MaxPorts)})
			}
			p.Assignments[h] = l[:fabricentry.MaxPorts]
		}
	}
	slices.SortFunc(p.Unassigned, func(a, b Unassigned) int {
		return cmp.Or(cmp.Compare(a.SwitchGUID, b.SwitchGUID), cmp.Compare(a.Port, b.Port))
	})
	return p, notes
}

func (p *Plan) assignment(g *ibnet.Graph, sp swPort, r Rule) Assignment {
	n := &g.Nodes[sp.sw]
	return Assignment{SwitchGUID: n.GUID, Port: sp.port, SwitchName: fabricentry.CleanName(n.Name), SwitchLID: n.LID, Rule: r}
}

// sortedPorts is the ports of set in switch GUID and port order.
func sortedPorts(g *ibnet.Graph, set map[swPort]bool) []swPort {
	out := make([]swPort, 0, len(set))
	for sp := range set {
		out = append(out, sp)
	}
	slices.SortFunc(out, func(a, b swPort) int {
		return cmp.Or(cmp.Compare(g.Nodes[a.sw].GUID, g.Nodes[b.sw].GUID), cmp.Compare(a.port, b.port))
	})
	return out
}

// walk follows the tables from switch sw towards lid, marking both ends
// of every switch-to-switch link it crosses and the port it leaves the
// fabric by.
func (p *Plan) walk(g *ibnet.Graph, lfts []*LFT, walked []int, required map[swPort]bool, missingTable map[int]bool,
	sw, lid int, dst HostPort, note func(string, ...any)) {
	for hops := 0; hops <= len(g.Nodes); hops++ {
		if walked[sw] == lid+1 {
			return // the rest of the way is walked
		}
		walked[sw] = lid + 1
		t := lfts[sw]
		if t == nil {
			missingTable[sw] = true
			return
		}
		out := t.Port(lid)
		if out == NoRoute || out == 0 {
			note("switch %s (%s) does not forward LID %d (%s): the path to it stops there", g.Nodes[sw].GUID, g.Nodes[sw].Name, lid, dst.Host)
			return
		}
		pt := g.PortOf(sw, out)
		if pt == nil {
			note("switch %s (%s) forwards LID %d (%s) out of port %d, which has no cable in the ibnetdiscover output",
				g.Nodes[sw].GUID, g.Nodes[sw].Name, lid, dst.Host, out)
			required[swPort{sw, out}] = true
			return
		}
		required[swPort{sw, out}] = true
		far := int(pt.Remote.Node)
		if g.Nodes[far].Kind != ibnet.Switch {
			if far != dst.CA {
				note("switch %s (%s) forwards LID %d (%s) out of port %d to %s, not to the HCA that owns it",
					g.Nodes[sw].GUID, g.Nodes[sw].Name, lid, dst.Host, out, g.Nodes[far].Name)
			}
			return
		}
		required[swPort{far, int(pt.Remote.Port)}] = true
		sw = far
	}
	note("LID %d (%s): the forwarding tables loop", lid, dst.Host)
}

// loads keeps how many ports each reader has and finds the least-loaded
// one (fewest ports, then first in the job's list) in log time.
type loads struct {
	n    []int
	heap []int // reader indexes
	pos  []int // reader -> place in heap
}

func newLoads(readers int) *loads {
	l := &loads{n: make([]int, readers), heap: make([]int, readers), pos: make([]int, readers)}
	for i := range readers {
		l.heap[i], l.pos[i] = i, i
	}
	heap.Init(l)
	return l
}

func (l *loads) add(r int) {
	l.n[r]++
	heap.Fix(l, l.pos[r])
}

func (l *loads) least() int { return l.heap[0] }

// choose picks a port's reader among the readers its table forwards to
// (rule 3: the least-loaded of them) unless that one reads Threshold or
// more ports more than the least-loaded reader of all (rule 4: then that
// one, as when there is no candidate).
func (l *loads) choose(candidates []int) (int, Rule) {
	least := l.least()
	if len(candidates) == 0 {
		return least, LeastLoaded
	}
	best := candidates[0]
	for _, r := range candidates[1:] {
		if l.n[r] < l.n[best] || l.n[r] == l.n[best] && r < best {
			best = r
		}
	}
	if l.n[best]-l.n[least] >= Threshold {
		return least, LeastLoaded
	}
	return best, Forwarded
}

func (l *loads) Len() int { return len(l.heap) }
func (l *loads) Less(i, j int) bool {
	a, b := l.heap[i], l.heap[j]
	return l.n[a] < l.n[b] || l.n[a] == l.n[b] && a < b
}
func (l *loads) Swap(i, j int) {
	l.heap[i], l.heap[j] = l.heap[j], l.heap[i]
	l.pos[l.heap[i]], l.pos[l.heap[j]] = i, j
}
func (l *loads) Push(any) {}
func (l *loads) Pop() any { return nil }
