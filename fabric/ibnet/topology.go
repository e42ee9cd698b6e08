package ibnet

import (
	"slices"
	"strconv"
	"strings"
)

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
