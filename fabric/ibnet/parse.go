package ibnet

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
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
	portGUID       GUID
	chassis        int
}

// half is one port line: a link as seen from one of its ends.
type half struct {
	local, remote End
	width, speed  string
}

type parser struct {
	g     *Graph
	cur   *Node
	ids   ids
	halfs []half
	line  int
}

// Parse reads ibnetdiscover's topology output (plain or grouped with -g,
// with or without a node-name map applied). A line it cannot read is
// skipped and listed in Graph.Problems; Parse itself never fails, so the
// caller decides whether a graph with problems (or with no node at all)
// is good enough.
func Parse(b []byte) *Graph {
	p := &parser{g: &Graph{byGUID: map[GUID]*Node{}}}
	for len(b) > 0 {
		p.line++
		var ln []byte
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			ln, b = b[:i], b[i+1:]
		} else {
			ln, b = b, nil
		}
		if len(ln) > maxLine {
			p.problem("longer than %d bytes", maxLine)
			continue
		}
		p.parseLine(strings.TrimSpace(string(bytes.TrimRight(ln, "\r"))))
	}
	p.finish()
	return p.g
}

func (p *parser) problem(format string, args ...any) {
	p.g.Problems = append(p.g.Problems, Problem{Line: p.line, Reason: fmt.Sprintf(format, args...)})
}

func (p *parser) parseLine(s string) {
	switch {
	case s == "" || s[0] == '#':
		return
	case s[0] == '[':
		p.portLine(s)
		return
	}
	word, rest, _ := strings.Cut(s, "=")
	switch word {
	case "vendid", "devid", "sysimgguid", "switchguid", "caguid", "rtguid":
		p.idLine(word, rest)
		return
	}
	head := s
	if i := strings.IndexAny(s, " \t"); i > 0 {
		head = s[:i]
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

func (p *parser) idLine(key, rest string) {
	val, comment, _ := strings.Cut(rest, "#")
	val = strings.TrimSpace(val)
	if key == "vendid" {
		// A new node's ids start here: forget the previous node's.
		p.ids = ids{}
		p.cur = nil
	}
	switch key {
	case "vendid", "devid":
		v, err := strconv.ParseUint(val, 0, 32)
		if err != nil {
			p.problem("%s: %v", key, err)
			return
		}
		if key == "vendid" {
			p.ids.vendor = uint32(v)
		} else {
			p.ids.device = uint32(v)
		}
	case "sysimgguid":
		g, err := ParseGUID(val)
		if err != nil {
			p.problem("sysimgguid: %v", err)
			return
		}
		p.ids.sysImage = g
		if c := strings.TrimSpace(comment); strings.HasPrefix(c, "Chassis ") {
			n, _, _ := strings.Cut(strings.TrimPrefix(c, "Chassis "), " ")
			p.ids.chassis, _ = strconv.Atoi(n)
		}
	default: // switchguid=0xNODE(PORT), caguid=0xNODE, rtguid=0xNODE
		node, port, _ := strings.Cut(val, "(")
		g, err := ParseGUID(node)
		if err != nil {
			p.problem("%s: %v", key, err)
			return
		}
		p.ids.guid = g
		if port != "" {
			if pg, err := ParseGUID(strings.TrimSuffix(port, ")")); err == nil {
				p.ids.portGUID = pg
			}
		}
	}
}

// header reads `Switch\t36 "S-guid"\t\t# "desc" base port 0 lid 48 lmc 0`
// or `Ca\t1 "H-guid"\t\t# "desc"`.
func (p *parser) header(k Kind, s string) {
	s = strings.TrimSpace(s)
	nports, rest, ok := strings.Cut(s, " ")
	n, err := strconv.Atoi(strings.TrimSpace(nports))
	if !ok || err != nil || n < 0 || n > 255 {
		p.problem("%s header: bad port count %q", k, nports)
		p.cur = nil
		return
	}
	rest = strings.TrimSpace(rest)
	kind, guid, rest, ok := nodeRef(rest)
	if !ok {
		p.problem("%s header: no quoted node id", k)
		p.cur = nil
		return
	}
	if kind != k {
		p.problem("%s header names a %s id", k, kind)
	}
	_, comment, _ := strings.Cut(rest, "#")
	desc, tail := quoted(strings.TrimSpace(comment), []string{" base port ", " enhanced port "})
	nd := p.node(k, guid)
	if nd.Described {
		p.problem("%s %s described twice; the later block wins", k, guid)
	}
	nd.Described = true
	nd.NumPorts = n
	nd.Desc, nd.Name = desc, desc
	nd.VendorID, nd.DeviceID, nd.SysImageGUID, nd.Chassis = p.ids.vendor, p.ids.device, p.ids.sysImage, p.ids.chassis
	if p.ids.guid != 0 && p.ids.guid != guid {
		p.problem("%s header %s does not match its guid line %s", k, guid, p.ids.guid)
	}
	if k == Switch {
		if f := strings.Fields(tail); len(f) >= 4 && f[2] == "lid" {
			nd.LID, _ = strconv.Atoi(f[3])
		}
	}
	p.cur = nd
	p.ids = ids{}
}

// node returns the node with that GUID, creating an undescribed one.
func (p *parser) node(k Kind, guid GUID) *Node {
	if nd := p.g.byGUID[guid]; nd != nil {
		if nd.Kind != k && !nd.Described {
			nd.Kind = k
		}
		return nd
	}
	nd := &Node{Kind: k, GUID: guid}
	p.g.byGUID[guid] = nd
	p.g.Nodes = append(p.g.Nodes, nd)
	return nd
}

// nodeRef reads `"S-005442ba00003080"` at the start of s.
func nodeRef(s string) (Kind, GUID, string, bool) {
	if len(s) < 4 || s[0] != '"' || s[2] != '-' {
		return 0, 0, s, false
	}
	end := strings.IndexByte(s[1:], '"')
	if end < 0 {
		return 0, 0, s, false
	}
	var k Kind
	switch s[1] {
	case 'S':
		k = Switch
	case 'H':
		k = HCA
	case 'R':
		k = Router
	default:
		return 0, 0, s, false
	}
	g, err := ParseGUID(s[3 : 1+end])
	if err != nil {
		return 0, 0, s, false
	}
	return k, g, s[2+end:], true
}

// quoted splits `"desc" tail` at the last closing quote that precedes one
// of the markers (or the last quote), so a description holding quotes or
// the marker words still reads whole.
func quoted(s string, markers []string) (string, string) {
	if !strings.HasPrefix(s, `"`) {
		return "", s
	}
	best := -1
	for _, m := range markers {
		if i := strings.LastIndex(s, `"`+m); i > 0 && i > best {
			best = i
		}
	}
	if best < 0 {
		best = strings.LastIndexByte(s, '"')
		if best <= 0 {
			return strings.TrimPrefix(s, `"`), ""
		}
	}
	return s[1:best], strings.TrimSpace(s[best+1:])
}

// bracket reads `[N]` (and a following `[ext N]`) at the start of s.
func bracket(s string) (int, string, bool) {
	if !strings.HasPrefix(s, "[") {
		return 0, s, false
	}
	end := strings.IndexByte(s, ']')
	if end < 0 {
		return 0, s, false
	}
	n, err := strconv.Atoi(s[1:end])
	if err != nil || n < 0 || n > 255 {
		return 0, s, false
	}
	s = s[end+1:]
	if strings.HasPrefix(s, "[ext ") {
		if e := strings.IndexByte(s, ']'); e > 0 {
			s = s[e+1:]
		}
	}
	return n, s, true
}

// paren reads an optional `(hexguid)` after optional blanks.
func paren(s string) (GUID, string) {
	t := strings.TrimLeft(s, " \t")
	if !strings.HasPrefix(t, "(") {
		return 0, s
	}
	end := strings.IndexByte(t, ')')
	if end < 0 {
		return 0, s
	}
	g, err := ParseGUID(t[1:end])
	if err != nil {
		return 0, s
	}
	return g, t[end+1:]
}

// portLine reads a connectivity line of the current node:
//
//	switch: [1]	"H-506b4b03003fa9b6"[1](506b4b03003fa9b6) 		# "node018 HCA-1" lid 67 4xEDR
//	CA:     [1](506b4b03003fa98a) 	"S-ec0d9a0300ec8240"[36]		# lid 83 lmc 0 "SwitchIB Mellanox Technologies" lid 48 4xEDR
func (p *parser) portLine(s string) {
	if p.cur == nil {
		p.problem("port line outside a node block")
		return
	}
	num, rest, ok := bracket(s)
	if !ok || num == 0 {
		p.problem("port line: bad local port number")
		return
	}
	localPG, rest := paren(rest)
	rk, rguid, rest, ok := nodeRef(strings.TrimLeft(rest, " \t"))
	if !ok {
		p.problem("port line: no quoted remote node id")
		return
	}
	rnum, rest, ok := bracket(rest)
	if !ok || rnum == 0 {
		p.problem("port line: bad remote port number")
		return
	}
	remotePG, rest := paren(rest)
	_, comment, _ := strings.Cut(rest, "#")
	comment = strings.TrimSpace(comment)
	port := &Port{Num: num, GUID: localPG, Remote: End{GUID: rguid, Port: rnum, PortGUID: remotePG, Kind: rk}}
	if p.cur.Kind == Switch {
		port.GUID = 0
	}
	if strings.HasPrefix(comment, "lid ") {
		// CA and router ports: their own LID and LMC come first.
		f := strings.Fields(comment)
		if len(f) >= 4 && f[2] == "lmc" {
			port.LID, _ = strconv.Atoi(f[1])
			port.LMC, _ = strconv.Atoi(f[3])
			comment = skipFields(comment, 4)
		}
	}
	desc, tail := quoted(comment, []string{" lid "})
	port.Remote.Name = desc
	remoteLID := 0
	if f := strings.Fields(tail); len(f) >= 3 && f[0] == "lid" {
		remoteLID, _ = strconv.Atoi(f[1])
		port.Width, port.Speed = splitWidthSpeed(f[2])
	} else {
		p.problem("port line: no remote lid and width/speed")
	}
	if p.cur.Kind != Switch && p.cur.LID == 0 {
		p.cur.LID = port.LID
	}
	for _, old := range p.cur.Ports {
		if old.Num == num {
			p.problem("port %d of %s listed twice", num, p.cur.GUID)
		}
	}
	p.cur.Ports = append(p.cur.Ports, port)
	rn := p.node(rk, rguid)
	if !rn.Described && rn.Desc == "" {
		rn.Desc, rn.Name = desc, desc
	}
	if rk == Switch && rn.LID == 0 {
		rn.LID = remoteLID
	}
	if rk != Switch && rn.LID == 0 && !rn.Described {
		rn.LID = remoteLID
	}
	p.halfs = append(p.halfs, half{
		local:  End{GUID: p.cur.GUID, Port: num, PortGUID: port.GUID, Kind: p.cur.Kind},
		remote: port.Remote, width: port.Width, speed: port.Speed,
	})
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
func splitWidthSpeed(s string) (string, string) {
	if i := strings.IndexByte(s, 'x'); i > 0 {
		return s[:i+1], s[i+1:]
	}
	if strings.HasPrefix(s, "??") {
		return "??", s[2:]
	}
	return "", s
}

type endKey struct {
	guid GUID
	port int
}

// finish counts each physical link once and judges it against its peers.
func (p *parser) finish() {
	g := p.g
	byKey := map[[2]endKey]*Link{}
	for _, h := range p.halfs {
		a, b := h.local, h.remote
		ka, kb := endKey{a.GUID, a.Port}, endKey{b.GUID, b.Port}
		if kb.guid < ka.guid || (kb.guid == ka.guid && kb.port < ka.port) {
			a, b, ka, kb = b, a, kb, ka
		}
		key := [2]endKey{ka, kb}
		l := byKey[key]
		if l == nil {
			l = &Link{A: a, B: b, Width: h.width, Speed: h.speed, Gbps: Rate(h.width, h.speed)}
			byKey[key] = l
			g.Links = append(g.Links, l)
			continue
		}
		if a.PortGUID != 0 {
			l.A.PortGUID = a.PortGUID
		}
		if b.PortGUID != 0 {
			l.B.PortGUID = b.PortGUID
		}
		if h.width != l.Width || h.speed != l.Speed {
			l.Disagree = true
			if r := Rate(h.width, h.speed); r < l.Gbps || l.Gbps == 0 {
				l.Width, l.Speed, l.Gbps = h.width, h.speed, r
			}
		}
	}
	slices.SortFunc(g.Links, func(x, y *Link) int {
		return cmp.Or(cmp.Compare(x.A.GUID, y.A.GUID), cmp.Compare(x.A.Port, y.A.Port),
			cmp.Compare(x.B.GUID, y.B.GUID), cmp.Compare(x.B.Port, y.B.Port))
	})
	for _, nd := range g.Nodes {
		slices.SortFunc(nd.Ports, func(x, y *Port) int { return x.Num - y.Num })
	}
	judgeLinks(g)
	g.refreshNames()
}

// judgeLinks marks links that trained below their peers: the links of the
// same class (switch to switch, or switch to HCA/router) on the same
// switches. The expected rate is the most common one among them, a tie
// taking the faster, so one slow cable among fast ones stands out while a
// fabric that is slow everywhere is not a finding.
func judgeLinks(g *Graph) {
	type class struct {
		sw    GUID
		inter bool
	}
	peers := map[class][]*Link{}
	for _, l := range g.Links {
		inter := l.A.Kind == Switch && l.B.Kind == Switch
		for _, e := range []End{l.A, l.B} {
			if e.Kind == Switch {
				c := class{e.GUID, inter}
				peers[c] = append(peers[c], l)
			}
		}
	}
	for _, l := range g.Links {
		if l.Gbps == 0 {
			continue
		}
		inter := l.A.Kind == Switch && l.B.Kind == Switch
		count := map[string]int{}
		rate := map[string]float64{}
		for _, e := range []End{l.A, l.B} {
			if e.Kind != Switch {
				continue
			}
			for _, q := range peers[class{e.GUID, inter}] {
				if q.Gbps > 0 {
					ws := q.Width + q.Speed
					count[ws]++
					rate[ws] = q.Gbps
				}
			}
		}
		best, bestN := "", 0
		for ws, n := range count {
			if n > bestN || (n == bestN && rate[ws] > rate[best]) {
				best, bestN = ws, n
			}
		}
		if best != "" && l.Gbps < rate[best] {
			l.Degraded, l.Expected = true, best
		}
	}
}

// refreshNames copies each node's Name to the link ends and port remotes
// that name it.
func (g *Graph) refreshNames() {
	name := func(e *End) {
		if nd := g.byGUID[e.GUID]; nd != nil {
			e.Name = nd.Name
		}
	}
	for _, l := range g.Links {
		name(&l.A)
		name(&l.B)
	}
	for _, nd := range g.Nodes {
		for _, pt := range nd.Ports {
			name(&pt.Remote)
		}
	}
}
