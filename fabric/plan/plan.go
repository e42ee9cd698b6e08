package plan

import (
	"cmp"
	"container/heap"
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
