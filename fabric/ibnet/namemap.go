package ibnet

import (
	"bytes"
	"strings"
)

// ParseNodeNameMap reads an opensm node-name map: one `GUID "name"` per
// line, `#` comments and blank lines ignored, the name quoted (an
// unquoted name runs to the end of the line, as opensm reads it). A line
// that does not start with a GUID is skipped and listed; a GUID given
// twice keeps its last name, as opensm's map does.
func ParseNodeNameMap(b []byte) (map[GUID]string, []Problem) {
	out := map[GUID]string{}
	var probs []Problem
	line := 0
	for len(b) > 0 {
		line++
		var ln []byte
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			ln, b = b[:i], b[i+1:]
		} else {
			ln, b = b, nil
		}
		if len(ln) > maxLine {
			probs = append(probs, Problem{line, "longer than 4096 bytes"})
			continue
		}
		s := strings.TrimSpace(string(bytes.TrimRight(ln, "\r")))
		if s == "" || s[0] == '#' {
			continue
		}
		gs, rest := s, ""
		if i := strings.IndexAny(s, " \t#"); i >= 0 {
			gs, rest = s[:i], s[i:]
		}
		g, err := ParseGUID(gs)
		if err != nil {
			probs = append(probs, Problem{line, err.Error()})
			continue
		}
		rest = strings.TrimSpace(rest)
		var name string
		if strings.HasPrefix(rest, `"`) {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				probs = append(probs, Problem{line, "name has no closing quote"})
				continue
			}
			name = rest[1 : 1+end]
		} else {
			name, _, _ = strings.Cut(rest, "#")
			name = strings.TrimSpace(name)
		}
		if name == "" {
			probs = append(probs, Problem{line, "GUID " + g.String() + " has no name"})
			continue
		}
		out[g] = name
	}
	return out, probs
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
