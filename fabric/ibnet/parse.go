package ibnet

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unsafe"
)

// maxLine bounds one line: ibnetdiscover's longest (a port line with two
// 64-byte node descriptions) is far below it, so a longer one is not a
// topology line.
const maxLine = 4096

// ids are the key=value lines that precede a node's header line.
type ids struct {
	vendor, device uint32
	sysImage       GUID
	guid           GUID
	chassis        int
}

// remote is what a ports-report line says about its far end, kept until
// the far end's own lines (or none) have been read.
type remote struct {
	kind Kind
	lid  int32
	name string
}

type parser struct {
	g    *Graph
	line int
	// cur is the node whose block is being read (-1: none); its ports
	// start at g.Ports[curStart].
	cur      int32
	curStart int
	ids      ids
	// strs interns every string the graph keeps: a switch's description
	// is printed on every line that names it, and kept once.
	strs map[string]string

	// The ports report's state: the CA run being read, every local port
	// GUID, and the far ends not yet seen as local lines.
	run struct {
		node int32
		kind Kind
		name string
		last int
	}
	byPort  map[GUID]int32
	pending map[GUID]remote
}

// Parse reads ibnetdiscover's output: the topology format (plain or
// grouped with -g, with or without a node-name map applied, or
// ibdiagnet's .ibnetdiscover file) or the ports report of -p. A line it
// cannot read is skipped and listed in Graph.Problems; Parse never fails,
// so the caller decides whether a graph with problems (or with no node at
// all) is good enough.
func Parse(b []byte) *Graph {
	g, _ := ParseReader(bytes.NewReader(b))
	return g
}

// ParseReader is Parse over a stream: it holds one line at a time, never
// the whole input. Its error is the reader's (the graph holds what was
// read before it).
func ParseReader(r io.Reader) (*Graph, error) {
	p := &parser{g: &Graph{byGUID: map[GUID]int32{}}, cur: -1, strs: map[string]string{},
		byPort: map[GUID]int32{}, pending: map[GUID]remote{}}
	p.run.node = -1
	br := bufio.NewReaderSize(r, 64<<10)
	var rerr error
	for {
		ln, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			p.line++
			p.problem("longer than %d bytes", maxLine)
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err != nil && err != io.EOF {
				rerr = err
				break
			}
			if err == io.EOF {
				break
			}
			continue
		}
		if len(ln) > 0 {
			p.line++
			if len(ln) > maxLine {
				p.problem("longer than %d bytes", maxLine)
			} else {
				p.parseLine(ln)
			}
		}
		if err != nil {
			if err != io.EOF {
				rerr = err
			}
			break
		}
	}
	p.finish()
	return p.g, rerr
}

func (p *parser) problem(format string, args ...any) {
	if len(p.g.Problems) >= maxProblems {
		p.g.MoreProblems++
		return
	}
	p.g.Problems = append(p.g.Problems, Problem{Line: p.line, Reason: fmt.Sprintf(format, args...)})
}

// intern returns a kept copy of s, one per distinct string.
func (p *parser) intern(s string) string {
	if k, ok := p.strs[s]; ok {
		return k
	}
	k := strings.Clone(s)
	p.strs[k] = k
	return k
}

func (p *parser) parseLine(b []byte) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] == '#' {
		return
	}
	// The line is read in place: every string the graph keeps goes
	// through intern, which copies it, so nothing refers to the reader's
	// buffer once the next line is read.
	s := unsafe.String(&b[0], len(b))
	if s[0] == '[' {
		p.portLine(s)
		return
	}
	head := s
	if i := strings.IndexAny(s, " \t"); i > 0 {
		head = s[:i]
	}
	if k := reportKind(head); k != 0 {
		p.reportLine(k, s)
		return
	}
	word, rest, _ := strings.Cut(s, "=")
	switch word {
	case "vendid", "devid", "sysimgguid", "switchguid", "caguid", "rtguid":
		p.idLine(word, rest)
		return
	}
	switch head {
	case "Switch":
		p.header(Switch, s[len(head):])
	case "Ca":
		p.header(HCA, s[len(head):])
	case "Rt", "Router":
		p.header(Router, s[len(head):])
	case "Chassis", "Non-Chassis", "Hostname:":
		// Grouping headers of -g: a node's own chassis number is on its
		// sysimgguid line.
	default:
		p.problem("not a topology line: %.60q", s)
	}
}

// format settles which output the file is at its first recognised line;
// a line of the other format after that is a problem, not a second graph.
func (p *parser) format(f Format) bool {
	if p.g.Format == 0 {
		p.g.Format = f
	}
	if p.g.Format != f {
		p.problem("a %s line in a %s file", f, p.g.Format)
		return false
	}
	return true
}

func reportKind(s string) Kind {
	switch s {
	case "SW":
		return Switch
	case "CA":
		return HCA
	case "RT":
		return Router
	}
	return 0
}

// fieldsInto splits off up to len(dst) blank-separated fields of s into
// dst, without allocating, and returns how many and the rest.
func fieldsInto(dst []string, s string) (int, string) {
	n := 0
	for n < len(dst) {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			break
		}
		i := strings.IndexAny(s, " \t")
		if i < 0 {
			dst[n] = s
			return n + 1, ""
		}
		dst[n] = s[:i]
		s = s[i:]
		n++
	}
	return n, s
}

// skipFields drops the first n blank-separated fields of s.
func skipFields(s string, n int) string {
	for ; n > 0; n-- {
		s = strings.TrimLeft(s, " \t")
		i := strings.IndexAny(s, " \t")
		if i < 0 {
			return ""
		}
		s = s[i:]
	}
	return strings.TrimLeft(s, " \t")
}

// splitWidthSpeed splits "4xNDR" (or "??SDR", "4x???") in two.
func splitWidthSpeed(s string) (Width, Speed) {
	ws, ss := "", s
	if i := strings.IndexByte(s, 'x'); i > 0 {
		ws, ss = s[:i+1], s[i+1:]
	} else if strings.HasPrefix(s, "??") {
		ws, ss = "??", s[2:]
	}
	w, _ := parseWidth(ws)
	sp, _ := parseSpeed(ss)
	return w, sp
}

// finish resolves the far ends, orders the ports node by node, counts
// each physical link once and judges it against its peers.
func (p *parser) finish() {
	g := p.g
	if g.Format == PortsReport {
		p.resolveReport()
	}
	g.Ports = slices.DeleteFunc(g.Ports, func(pt Port) bool { return pt.Node < 0 || pt.Remote.Node < 0 })
	slices.SortStableFunc(g.Ports, func(a, b Port) int { return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Num, b.Num)) })
	// A ports report can list a switch port twice: the first line stands.
	g.Ports = slices.CompactFunc(g.Ports, func(a, b Port) bool {
		if a.Node == b.Node && a.Num == b.Num {
			p.line = 0
			p.problem("port %d of %s listed twice; the first line is kept", a.Num, g.Nodes[a.Node].GUID)
			return true
		}
		return false
	})
	for i := range g.Nodes {
		g.Nodes[i].first, g.Nodes[i].count = 0, 0
	}
	for i := 0; i < len(g.Ports); {
		j := i
		for j < len(g.Ports) && g.Ports[j].Node == g.Ports[i].Node {
			j++
		}
		nd := &g.Nodes[g.Ports[i].Node]
		nd.first, nd.count = int32(i), int32(j-i)
		i = j
	}
	for i := range g.Nodes {
		nd := &g.Nodes[i]
		if nd.Kind != Switch && nd.Described && g.Format == Topology {
			// An HCA's LID is its lowest-numbered port's.
			for _, pt := range g.PortsOf(i) {
				if pt.LID > 0 {
					nd.LID = int(pt.LID)
					break
				}
			}
		}
	}
	p.links()
	judgeLinks(g)
	// The parser's indexes are not the graph's: let them go before the
	// caller builds on the graph.
	p.strs, p.byPort, p.pending = nil, nil, nil
}

// before orders link ends by node GUID, then port.
func (g *Graph) before(a End, b End) int {
	return cmp.Or(cmp.Compare(g.Nodes[a.Node].GUID, g.Nodes[b.Node].GUID), cmp.Compare(a.Node, b.Node), cmp.Compare(a.Port, b.Port))
}

// links counts each physical link once: from the end that orders first,
// merged with the far end's own line when the dump has one. A loopback
// cable (two ports of one node cabled together) is one link.
func (p *parser) links() {
	g := p.g
	// Which ports start a link is known before any link is made, so the
	// slice is made once, at its size.
	starts := func(i int) (End, End, *Port, int, bool) {
		pt := &g.Ports[i]
		here := End{Node: pt.Node, Port: pt.Num, PortGUID: pt.GUID}
		there := pt.Remote
		back := g.PortOf(int(there.Node), int(there.Port))
		if back != nil && (back.Remote.Node != here.Node || back.Remote.Port != here.Port) {
			back = nil // the far end says it is cabled elsewhere
		}
		order := g.before(here, there)
		return here, there, back, order, !(order > 0 && back != nil) // else counted from the far end
	}
	n := 0
	for i := range g.Ports {
		if _, _, _, _, ok := starts(i); ok {
			n++
		}
	}
	g.Links = make([]Link, 0, n)
	for i := range g.Ports {
		here, there, back, order, ok := starts(i)
		if !ok {
			continue
		}
		pt := &g.Ports[i]
		if back != nil && back.GUID != 0 {
			there.PortGUID = back.GUID
		}
		l := Link{A: here, B: there, Width: pt.Width, Speed: pt.Speed}
		if back != nil && (back.Width != pt.Width || back.Speed != pt.Speed) {
			l.Disagree = true
			if r := Rate(back.Width, back.Speed); r < l.Gbps() || l.Gbps() == 0 {
				l.Width, l.Speed = back.Width, back.Speed
			}
		}
		if order > 0 {
			l.A, l.B = l.B, l.A
		}
		g.Links = append(g.Links, l)
	}
	slices.SortFunc(g.Links, func(x, y Link) int { return cmp.Or(g.before(x.A, y.A), g.before(x.B, y.B)) })
}

// judgeLinks marks links that trained below their peers: the links of the
// same class (switch to switch, or switch to HCA/router) on the same
// switches. The expected rate is the most common one among them, a tie
// taking the faster, so one slow cable among fast ones stands out while a
// fabric that is slow everywhere is not a finding.
func judgeLinks(g *Graph) {
	const rates = len(widthNames) * len(speedNames)
	type class struct {
		sw    int32
		inter bool
	}
	code := func(l *Link) int { return int(l.Width)*len(speedNames) + int(l.Speed) }
	hist := map[class]*[rates]int32{}
	classes := func(l *Link) (class, class, int) {
		inter := g.Nodes[l.A.Node].Kind == Switch && g.Nodes[l.B.Node].Kind == Switch
		n := 0
		var c [2]class
		for _, e := range [2]End{l.A, l.B} {
			if g.Nodes[e.Node].Kind == Switch {
				c[n] = class{e.Node, inter}
				n++
			}
		}
		return c[0], c[1], n
	}
	for i := range g.Links {
		l := &g.Links[i]
		if l.Gbps() == 0 {
			continue
		}
		a, b, n := classes(l)
		for _, c := range []class{a, b}[:n] {
			h := hist[c]
			if h == nil {
				h = new([rates]int32)
				hist[c] = h
			}
			h[code(l)]++
		}
	}
	for i := range g.Links {
		l := &g.Links[i]
		if l.Gbps() == 0 {
			continue
		}
		a, b, n := classes(l)
		var sum [rates]int32
		for _, c := range []class{a, b}[:n] {
			if h := hist[c]; h != nil {
				for k, v := range h {
					sum[k] += v
				}
			}
		}
		best, bestN, bestRate := -1, int32(0), 0.0
		for k, v := range sum {
			if v == 0 {
				continue
			}
			r := Rate(Width(k/len(speedNames)), Speed(k%len(speedNames)))
			if v > bestN || (v == bestN && r > bestRate) {
				best, bestN, bestRate = k, v, r
			}
		}
		if best >= 0 && l.Gbps() < bestRate {
			l.Degraded = true
			l.ExpectedWidth, l.ExpectedSpeed = Width(best/len(speedNames)), Speed(best%len(speedNames))
		}
	}
}
