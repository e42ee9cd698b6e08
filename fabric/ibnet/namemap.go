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
