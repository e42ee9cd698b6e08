package ibnet

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
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

func (p *parser) idLine(key, rest string) {
	if !p.format(Topology) {
		return
	}
	val, comment, _ := strings.Cut(rest, "#")
	val = strings.TrimSpace(val)
	if key == "vendid" {
		// A new node's ids start here: forget the previous node's.
		p.ids = ids{}
		p.cur = -1
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
		node, _, _ := strings.Cut(val, "(")
		g, err := ParseGUID(node)
		if err != nil {
			p.problem("%s: %v", key, err)
			return
		}
		p.ids.guid = g
	}
}

// header reads `Switch\t36 "S-guid"\t\t# "desc" base port 0 lid 48 lmc 0`
// or `Ca\t1 "H-guid"\t\t# "desc"`.
func (p *parser) header(k Kind, s string) {
	if !p.format(Topology) {
		return
	}
	p.cur = -1
	s = strings.TrimSpace(s)
	nports, rest, ok := strings.Cut(s, " ")
	n, err := strconv.Atoi(strings.TrimSpace(nports))
	if !ok || err != nil || n < 0 || n > 255 {
		p.problem("%s header: bad port count %.20q", k, nports)
		return
	}
	rest = strings.TrimSpace(rest)
	kind, guid, rest, ok := nodeRef(rest)
	if !ok {
		p.problem("%s header: no quoted node id", k)
		return
	}
	if kind != k {
		p.problem("%s header names a %s id", k, kind)
	}
	_, comment, _ := strings.Cut(rest, "#")
	desc, tail := quoted(strings.TrimSpace(comment), []string{" base port ", " enhanced port "})
	i := p.node(k, guid, desc)
	nd := &p.g.Nodes[i]
	if nd.Described {
		p.problem("%s %s described twice; the later block wins", k, guid)
		// Its earlier block's ports are forgotten: they are dropped when
		// the graph is finished.
		for j := nd.first; j < nd.first+nd.count; j++ {
			p.g.Ports[j].Node = -1
		}
	}
	nd.Described = true
	nd.Kind = k
	nd.NumPorts = n
	nd.Desc = p.intern(desc)
	nd.Name = nd.Desc
	nd.VendorID, nd.DeviceID, nd.SysImageGUID, nd.Chassis = p.ids.vendor, p.ids.device, p.ids.sysImage, p.ids.chassis
	if p.ids.guid != 0 && p.ids.guid != guid {
		p.problem("%s header %s does not match its guid line %s", k, guid, p.ids.guid)
	}
	if k == Switch {
		// "base port 0 lid 6 lmc 0" (or "enhanced port 0 …"): the LID
		// follows the word lid wherever the header's words put it.
		if f := strings.Fields(tail); len(f) >= 4 {
			if i := slices.Index(f, "lid"); i >= 0 && i+1 < len(f) {
				if lid, err := strconv.Atoi(f[i+1]); err == nil && lid >= 0 && lid <= 0xffff {
					nd.LID = lid
				}
			}
		}
	} else {
		nd.LID = 0 // from its ports
	}
	p.cur = i
	p.curStart = len(p.g.Ports)
	nd.first, nd.count = int32(p.curStart), 0
	p.ids = ids{}
}

// node returns the index of the node with that GUID, creating an
// undescribed one named desc.
func (p *parser) node(k Kind, guid GUID, desc string) int32 {
	if i, ok := p.g.byGUID[guid]; ok {
		nd := &p.g.Nodes[i]
		if nd.Kind != k && !nd.Described {
			nd.Kind = k
		}
		return i
	}
	i := int32(len(p.g.Nodes))
	d := p.intern(desc)
	p.g.Nodes = append(p.g.Nodes, Node{Kind: k, GUID: guid, Desc: d, Name: d, first: -1})
	p.g.byGUID[guid] = i
	return i
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

// bracket reads `[N]` (and a following `[ext N]` of -g) at the start of s.
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

// groups reads the parenthesised groups after a port number: a port GUID
// (`(506b4b03003fa98a)`, printed for HCA and router ports) and the port
// label Quantum-2 (NDR) switches print for their ports
// (`(1/1/1)`: cage, port, split). Either, both or neither may be there.
func groups(s string) (GUID, string, string) {
	var guid GUID
	var label string
	for {
		t := strings.TrimLeft(s, " \t")
		if !strings.HasPrefix(t, "(") {
			return guid, label, s
		}
		end := strings.IndexByte(t, ')')
		if end < 0 {
			return guid, label, s
		}
		in := t[1:end]
		if g, err := ParseGUID(in); err == nil && guid == 0 && !strings.Contains(in, ":") {
			guid = g
		} else if isLabel(in) && label == "" {
			label = in
		} else {
			return guid, label, s
		}
		s = t[end+1:]
	}
}

// isLabel accepts what a switch prints as a port label: a few digits,
// letters and separators ("1/1/1", "17/2", "L03/P05").
func isLabel(s string) bool {
	if s == "" || len(s) > 24 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '/' || c == '.' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// portLine reads a connectivity line of the current node:
//
//	switch: [1]	"H-506b4b03003fa9b6"[1](506b4b03003fa9b6) 		# "node018 HCA-1" lid 67 4xEDR
//	CA:     [1](506b4b03003fa98a) 	"S-ec0d9a0300ec8240"[36]		# lid 83 lmc 0 "SwitchIB Mellanox Technologies" lid 48 4xEDR
//	NDR:    [1](1/1/1)	"S-b83fd20300aa0001"[33](1/17/1)		# "spine" lid 7 4xNDR
func (p *parser) portLine(s string) {
	if !p.format(Topology) {
		return
	}
	if p.cur < 0 {
		p.problem("port line outside a node block")
		return
	}
	num, rest, ok := bracket(s)
	if !ok || num == 0 {
		p.problem("port line: bad local port number")
		return
	}
	localPG, label, rest := groups(rest)
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
	remotePG, _, rest := groups(rest)
	_, comment, _ := strings.Cut(rest, "#")
	comment = strings.TrimSpace(comment)
	cur := &p.g.Nodes[p.cur]
	port := Port{Node: p.cur, Num: uint8(num), Remote: End{Port: uint8(rnum), PortGUID: remotePG}}
	if label != "" {
		port.Label = p.intern(label)
	}
	if cur.Kind != Switch {
		port.GUID = localPG
	}
	if rk == Switch {
		port.Remote.PortGUID = 0
	}
	if strings.HasPrefix(comment, "lid ") {
		// CA and router ports: their own LID and LMC come first.
		var f [4]string
		if n, _ := fieldsInto(f[:], comment); n == 4 && f[2] == "lmc" {
			lid, _ := strconv.Atoi(f[1])
			lmc, _ := strconv.Atoi(f[3])
			if lid >= 0 && lid <= 0xffff {
				port.LID = int32(lid)
			}
			if lmc >= 0 && lmc <= 7 {
				port.LMC = uint8(lmc)
			}
			comment = skipFields(comment, 4)
		}
	}
	desc, tail := quoted(comment, []string{" lid "})
	remoteLID := 0
	var f [3]string
	if n, _ := fieldsInto(f[:], tail); n == 3 && f[0] == "lid" {
		remoteLID, _ = strconv.Atoi(f[1])
		port.Width, port.Speed = splitWidthSpeed(f[2])
	} else {
		p.problem("port line: no remote lid and width/speed")
	}
	for _, old := range p.g.Ports[p.curStart:] {
		if old.Num == port.Num && old.Node == p.cur {
			p.problem("port %d of %s listed twice; the first line is kept", num, cur.GUID)
			return
		}
	}
	if cur.Kind != Switch && cur.LID == 0 {
		cur.LID = int(port.LID)
	}
	ri := p.node(rk, rguid, desc)
	rn := &p.g.Nodes[ri]
	if !rn.Described && remoteLID > 0 && remoteLID <= 0xffff && rn.LID == 0 {
		rn.LID = remoteLID
	}
	if rk == Switch && rn.LID == 0 && remoteLID > 0 && remoteLID <= 0xffff {
		rn.LID = remoteLID
	}
	port.Remote.Node = ri
	p.g.Ports = append(p.g.Ports, port)
	p.g.Nodes[p.cur].count++
}

// reportLine reads one line of `ibnetdiscover -p`:
//
//	CA    44  1 0x0002c9030045f121 4x FDR - SW     2 17 0x0002c903006e1430 ( 'localhost HCA-1' - 'MF0;js01ib2:SX60XX/U1' )
//	SW     2 19 0x0002c903006e1430 4x SDR                                    'MF0;js01ib2:SX60XX/U1'
//
// A node's ports are printed together, highest first; an HCA's or
// router's lines carry its ports' GUIDs, not its node GUID, so the lines
// of one are those in a row with one name and falling port numbers.
func (p *parser) reportLine(k Kind, s string) {
	if !p.format(PortsReport) {
		return
	}
	var f [6]string
	n, rest := fieldsInto(f[:], s)
	if n < 6 {
		p.problem("ports report line: want type, LID, port, GUID, width and speed")
		return
	}
	lid, err1 := strconv.Atoi(f[1])
	num, err2 := strconv.Atoi(f[2])
	guid, err3 := ParseGUID(f[3])
	if err1 != nil || err2 != nil || err3 != nil || lid < 0 || lid > 0xffff || num <= 0 || num > 255 {
		p.problem("ports report line: bad LID, port or GUID")
		return
	}
	width, _ := parseWidth(f[4])
	speed, _ := parseSpeed(f[5])
	rest = strings.TrimSpace(rest)
	var name string
	var far *End
	if strings.HasPrefix(rest, "- ") {
		var rf [4]string
		rn, tail := fieldsInto(rf[:], rest[2:])
		if rn < 4 || reportKind(rf[0]) == 0 {
			p.problem("ports report line: bad far end")
			return
		}
		rlid, e1 := strconv.Atoi(rf[1])
		rnum, e2 := strconv.Atoi(rf[2])
		rguid, e3 := ParseGUID(rf[3])
		if e1 != nil || e2 != nil || e3 != nil || rlid < 0 || rlid > 0xffff || rnum <= 0 || rnum > 255 {
			p.problem("ports report line: bad far end LID, port or GUID")
			return
		}
		local, remoteName, ok := namePair(tail)
		if !ok {
			p.problem("ports report line: names not ( 'local' - 'remote' )")
			return
		}
		name = local
		far = &End{Node: -1, Port: uint8(rnum), PortGUID: rguid}
		if _, seen := p.pending[rguid]; !seen {
			if _, described := p.byPort[rguid]; !described {
				p.pending[rguid] = remote{kind: reportKind(rf[0]), lid: int32(rlid), name: p.intern(remoteName)}
			}
		}
	} else {
		// An unconnected port: only the node's name (quoted since
		// infiniband-diags 1.5, bare before).
		name = rest
		if len(rest) >= 2 && rest[0] == '\'' && rest[len(rest)-1] == '\'' {
			name = rest[1 : len(rest)-1]
		}
	}
	i := p.reportNode(k, guid, num, name)
	if i < 0 {
		return
	}
	nd := &p.g.Nodes[i]
	if lid > 0 {
		// An HCA's lines come highest port first: the last one read is
		// its lowest port's, whose LID the node is known by.
		nd.LID = lid
	}
	nd.NumPorts = max(nd.NumPorts, num)
	if far == nil {
		return
	}
	port := Port{Node: i, Num: uint8(num), Width: width, Speed: speed, Remote: *far}
	if k != Switch {
		port.GUID = guid
		port.LID = int32(lid)
	}
	p.g.Ports = append(p.g.Ports, port)
}

// reportNode finds or makes the node a ports-report line belongs to, or
// returns -1 for a line it cannot take.
func (p *parser) reportNode(k Kind, guid GUID, num int, name string) int32 {
	if k == Switch {
		p.run.node = -1
		if i, ok := p.byPort[guid]; ok {
			nd := &p.g.Nodes[i]
			if nd.Kind != Switch {
				p.problem("GUID %s is a %s and a switch", guid, nd.Kind)
				return -1
			}
			return i
		}
		i := p.newReportNode(k, guid, name)
		p.byPort[guid] = i
		return i
	}
	if _, ok := p.byPort[guid]; ok {
		p.problem("port GUID %s listed twice; the first line is kept", guid)
		return -1
	}
	r := &p.run
	if r.node >= 0 && r.kind == k && r.name == name && num < r.last {
		r.last = num
		// The lowest-numbered port's GUID names the node, as an HCA's
		// node GUID is commonly its port 1's.
		p.g.Nodes[r.node].GUID = guid
		p.byPort[guid] = r.node
		return r.node
	}
	i := p.newReportNode(k, guid, name)
	p.byPort[guid] = i
	r.node, r.kind, r.name, r.last = i, k, p.g.Nodes[i].Name, num
	return i
}

func (p *parser) newReportNode(k Kind, guid GUID, name string) int32 {
	i := int32(len(p.g.Nodes))
	n := p.intern(name)
	p.g.Nodes = append(p.g.Nodes, Node{Kind: k, GUID: guid, Desc: n, Name: n, Described: true, first: -1})
	delete(p.pending, guid)
	return i
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

// namePair reads `( 'local' - 'remote' )`.
func namePair(s string) (string, string, bool) {
	s = strings.TrimSpace(s)
	if len(s) < 6 || !strings.HasPrefix(s, "( '") || !strings.HasSuffix(s, "' )") {
		return "", "", false
	}
	in := s[3 : len(s)-3]
	a, b, ok := strings.Cut(in, "' - '")
	return a, b, ok
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

// resolveReport points every ports-report port at its far end's node,
// making the far ends no line described.
func (p *parser) resolveReport() {
	g := p.g
	for i := range g.Ports {
		pt := &g.Ports[i]
		ri, ok := p.byPort[pt.Remote.PortGUID]
		if !ok {
			r := p.pending[pt.Remote.PortGUID]
			ri = int32(len(g.Nodes))
			g.Nodes = append(g.Nodes, Node{Kind: r.kind, GUID: pt.Remote.PortGUID, Desc: r.name, Name: r.name, LID: int(r.lid), first: -1})
			p.byPort[pt.Remote.PortGUID] = ri
		}
		pt.Remote.Node = ri
		if g.Nodes[ri].Kind == Switch {
			pt.Remote.PortGUID = 0
		}
	}
	for guid, i := range p.byPort {
		g.byGUID[guid] = i
	}
	for i := range g.Nodes {
		g.byGUID[g.Nodes[i].GUID] = int32(i)
	}
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
