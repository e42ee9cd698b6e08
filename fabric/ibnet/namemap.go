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
// written per port, by one of its port GUIDs. It returns how many nodes
// it renamed.
func (g *Graph) ApplyNames(m map[GUID]string) int {
	n := 0
	for _, nd := range g.Nodes {
		name, ok := m[nd.GUID]
		if !ok {
			for _, pt := range nd.Ports {
				if pt.GUID == 0 {
					continue
				}
				if name, ok = m[pt.GUID]; ok {
					break
				}
			}
		}
		if !ok {
			for _, l := range g.Links {
				for _, e := range []End{l.A, l.B} {
					if e.GUID == nd.GUID && e.PortGUID != 0 {
						if nm, found := m[e.PortGUID]; found && !ok {
							name, ok = nm, true
						}
					}
				}
			}
		}
		if ok {
			nd.Name = name
			n++
		}
	}
	g.refreshNames()
	return n
}
