package plan

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/nichealth/nichealthd/fabric/ibnet"
	"github.com/nichealth/nichealthd/internal/fabricentry"
)

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
	pl := &planner{g: g, p: &Plan{Assignments: map[string][]Assignment{}, Unassigned: []Unassigned{}},
		owner: map[swPort]int{}, rule: map[swPort]Rule{}, required: map[swPort]bool{}}
	for _, h := range hosts {
		pl.p.Assignments[h] = []Assignment{}
	}
	var missing []string
	pl.hps, missing = HostPorts(g, hosts)
	for _, h := range missing {
		pl.note("%s: no HCA of this host is in the ibnetdiscover output (its NodeDescription's first word, or its name in the node-name map, must be the host name)", h)
	}
	pl.findReaders(hosts, missing)
	pl.tables(t)
	pl.cabled()
	pl.onPaths()
	pl.dropUnreadable()
	pl.assignRest()
	pl.lists()
	return pl.p, pl.notes
}

// planner is one Make: its inputs, what the rules have decided so far,
// and the notes on what the inputs lacked.
type planner struct {
	g   *ibnet.Graph
	p   *Plan
	hps []HostPort
	// readers are the job hosts with a LID, in list order; idx is each
	// one's place.
	readers []string
	idx     map[string]int
	// lfts are the forwarding tables by node index (nil: none, or not a
	// switch); lids the job's LIDs with their readers, reader by reader.
	lfts []*LFT
	lids []jobLID
	// required are the ports to read; owner the reader each assigned one
	// goes to, by the rule in rule.
	required map[swPort]bool
	owner    map[swPort]int
	rule     map[swPort]Rule
	notes    []string
}

// jobLID is one of the job's LIDs and the reader it belongs to.
type jobLID struct{ lid, reader int }

func (pl *planner) note(format string, args ...any) {
	if len(pl.notes) < maxProblems {
		pl.notes = append(pl.notes, fmt.Sprintf(format, args...))
	}
}

// findReaders takes the job hosts with a LID, in list order, and says
// which hosts found in the fabric read nothing.
func (pl *planner) findReaders(hosts, missing []string) {
	pl.idx = map[string]int{}
	pl.readers = make([]string, 0, len(hosts))
	for _, hp := range pl.hps {
		if hp.LID > 0 {
			if _, ok := pl.idx[hp.Host]; !ok {
				pl.idx[hp.Host] = len(pl.readers)
				pl.readers = append(pl.readers, hp.Host)
			}
		}
	}
	for _, h := range hosts {
		if _, ok := pl.idx[h]; !ok && !slices.Contains(missing, h) {
			pl.note("%s: none of its HCA ports has a LID (not active?); it reads nothing", h)
		}
	}
}

// tables indexes the forwarding tables by node and lists the job's LIDs
// (every LID of a port's LMC range), reader by reader.
func (pl *planner) tables(t *Tables) {
	pl.lfts = make([]*LFT, len(pl.g.Nodes))
	for i := range pl.g.Nodes {
		if pl.g.Nodes[i].Kind == ibnet.Switch {
			pl.lfts[i] = t.Switch(pl.g.Nodes[i].GUID)
		}
	}
	for _, hp := range pl.hps {
		if r, ok := pl.idx[hp.Host]; ok && hp.LID > 0 {
			for k := 0; k < 1<<hp.LMC; k++ {
				pl.lids = append(pl.lids, jobLID{hp.LID + k, r})
			}
		}
	}
	slices.SortFunc(pl.lids, func(a, b jobLID) int { return cmp.Or(cmp.Compare(a.reader, b.reader), cmp.Compare(a.lid, b.lid)) })
}

// cabled is rule 1: the switch port cabled to a host's HCA is that
// host's (when the host reads at all; else it is still required).
func (pl *planner) cabled() {
	for _, hp := range pl.hps {
		sp := swPort{hp.Switch, hp.SwitchPort}
		pl.required[sp] = true
		if r, ok := pl.idx[hp.Host]; ok {
			pl.owner[sp], pl.rule[sp] = r, Direct
		}
	}
}

// onPaths is rule 2: walk the tables towards every job LID from every
// switch a job port is cabled to (but a host's own: traffic between its
// HCAs is not the job's). The paths towards one LID form a tree, so a
// walk stops at a switch already walked for that LID.
func (pl *planner) onPaths() {
	type source struct {
		host  string
		multi bool // ports of two or more hosts
	}
	sources := map[int]source{}
	var srcOrder []int
	for _, hp := range pl.hps {
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
	g := pl.g
	walked := make([]int, len(g.Nodes)) // switch -> last LID walked from it, +1
	missingTable := map[int]bool{}
	for _, dst := range pl.hps {
		for k := 0; k < 1<<dst.LMC && dst.LID > 0; k++ {
			lid := dst.LID + k
			for _, sw := range srcOrder {
				if s := sources[sw]; s.multi || s.host != dst.Host {
					pl.p.walk(g, pl.lfts, walked, pl.required, missingTable, sw, lid, dst, pl.note)
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
		pl.note("switch %s (%s) is on the job's paths but the forwarding tables have none for it: its ports beyond it are not planned",
			g.Nodes[sw].GUID, g.Nodes[sw].Name)
	}
}

// dropUnreadable: a port no daemon can read (a number outside a switch's
// external ports, a switch without a unicast LID: a damaged or crafted
// dump) is said in the plan's unassigned list with the daemon's own
// reason, never written into a host's list: a daemon refuses a whole
// file that holds one.
func (pl *planner) dropUnreadable() {
	for _, sp := range sortedPorts(pl.g, pl.required) {
		why := fabricentry.Port(sp.port)
		if why == "" {
			why = fabricentry.LID(pl.g.Nodes[sp.sw].LID)
		}
		if why != "" {
			delete(pl.required, sp)
			delete(pl.owner, sp)
			pl.p.Unassigned = append(pl.p.Unassigned, Unassigned{Assignment: pl.p.assignment(pl.g, sp, 0), Reason: why + ": no daemon reads it"})
		}
	}
}

// assignRest is rules 3 and 4, port by port in switch GUID and port
// order.
func (pl *planner) assignRest() {
	g := pl.g
	var todo []swPort
	for sp := range pl.required {
		if _, done := pl.owner[sp]; !done {
			todo = append(todo, sp)
		}
	}
	byGUID := func(a, b swPort) int {
		return cmp.Or(cmp.Compare(g.Nodes[a.sw].GUID, g.Nodes[b.sw].GUID), cmp.Compare(a.port, b.port))
	}
	slices.SortFunc(todo, byGUID)
	load := newLoads(len(pl.readers))
	for _, r := range pl.owner {
		load.add(r)
	}
	candidates := pl.candidates(todo)
	for _, sp := range todo {
		if len(pl.readers) == 0 {
			pl.p.Unassigned = append(pl.p.Unassigned, Unassigned{Assignment: pl.p.assignment(g, sp, 0),
				Reason: "no host of the job has an active port to read it from"})
			continue
		}
		chosen, why := load.choose(candidates[sp])
		pl.owner[sp], pl.rule[sp] = chosen, why
		load.add(chosen)
	}
}

// candidates are each switch's ports' candidates: the readers whose LIDs
// it forwards out of each port, found once per switch (a reader's LIDs
// are in a row, so a reader is added to a port once). todo is sorted by
// switch.
func (pl *planner) candidates(todo []swPort) map[swPort][]int {
	candidates := map[swPort][]int{}
	var perPort [256][]int
	for i, sp := range todo {
		if (i > 0 && todo[i-1].sw == sp.sw) || pl.lfts[sp.sw] == nil {
			continue
		}
		for port := range perPort {
			perPort[port] = nil
		}
		for _, jl := range pl.lids {
			out := pl.lfts[sp.sw].Port(jl.lid)
			if c := perPort[out]; len(c) == 0 || c[len(c)-1] != jl.reader {
				perPort[out] = append(c, jl.reader)
			}
		}
		for port, c := range perPort {
			if len(c) > 0 && pl.required[swPort{sp.sw, port}] {
				candidates[swPort{sp.sw, port}] = c
			}
		}
	}
	return candidates
}

// lists is rule 5: one list per host, in switch GUID and port order, cut
// at the most a daemon reads (the rest said unassigned, with the reason).
func (pl *planner) lists() {
	p := pl.p
	for sp, r := range pl.owner {
		h := pl.readers[r]
		p.Assignments[h] = append(p.Assignments[h], p.assignment(pl.g, sp, pl.rule[sp]))
	}
	for sp := range pl.required {
		if _, ok := pl.owner[sp]; !ok && len(pl.readers) > 0 {
			// Unreachable: every required port has an owner when there is
			// a reader. Kept so a change that breaks it shows.
			p.Unassigned = append(p.Unassigned, Unassigned{Assignment: p.assignment(pl.g, sp, 0), Reason: "not assigned"})
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
}
