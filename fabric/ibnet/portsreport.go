package ibnet

import (
	"strconv"
	"strings"
)

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
