package ibnet

import "github.com/nichealth/nichealthd/internal/nodenamemap"

// ParseNodeNameMap reads an opensm node-name map (internal/nodenamemap,
// the format the node daemon reads too): one `GUID "name"` per line; a
// line that does not start with a GUID is skipped and listed; a GUID given
// twice keeps its last name.
func ParseNodeNameMap(b []byte) (map[GUID]string, []Problem) {
	m, probs := nodenamemap.Parse(b)
	out := make(map[GUID]string, len(m))
	for g, name := range m {
		out[GUID(g)] = name
	}
	var ps []Problem
	for _, p := range probs {
		ps = append(ps, Problem{Line: p.Line, Reason: p.Reason})
	}
	return out, ps
}

// ApplyNames names every node the map knows, by node GUID or, for maps
// written per port, by one of its port GUIDs (its own ports', or those
// its links' far ends printed for it). It returns how many nodes it
// renamed.
func (g *Graph) ApplyNames(m map[GUID]string) int {
	if len(m) == 0 {
		return 0
	}
	named := make([]bool, len(g.Nodes))
	n := 0
	set := func(i int, name string) {
		if !named[i] {
			named[i] = true
			g.Nodes[i].Name = name
			n++
		}
	}
	for i := range g.Nodes {
		if name, ok := m[g.Nodes[i].GUID]; ok {
			set(i, name)
			continue
		}
		for _, pt := range g.PortsOf(i) {
			if name, ok := m[pt.GUID]; ok && pt.GUID != 0 {
				set(i, name)
				break
			}
		}
	}
	for _, l := range g.Links {
		for _, e := range [2]End{l.A, l.B} {
			if name, ok := m[e.PortGUID]; ok && e.PortGUID != 0 {
				set(int(e.Node), name)
			}
		}
	}
	return n
}
