package fattree

import (
	"bufio"
	"fmt"
	"io"
)

// LFTs routes every LID from every switch minimum-hop (as opensm's
// default engine does): out of the port whose peer is one hop nearer the
// destination, the destination LID picking among equal ports so the
// routes spread over the uplinks. lft[switch node][lid] is the out port,
// 0 for the switch's own LID; 255 where the LID is unreachable.
func (f *Fabric) LFTs() map[int][]uint8 {
	maxLID := 0
	for _, n := range f.Nodes {
		maxLID = max(maxLID, n.LID)
	}
	out := map[int][]uint8{}
	for i, n := range f.Nodes {
		if n.Kind == Switch {
			t := make([]uint8, maxLID+1)
			for l := range t {
				t[l] = 255
			}
			out[i] = t
		}
	}
	// Distances towards a destination: an HCA's are its leaf's plus one,
	// so hosts under one leaf share one search.
	cache := map[int][]int{}
	distTo := func(sw int) []int {
		if d, ok := cache[sw]; ok {
			return d
		}
		d := make([]int, len(f.Nodes))
		for i := range d {
			d[i] = -1
		}
		d[sw] = 0
		queue := []int{sw}
		for len(queue) > 0 {
			cur := queue[0]
			queue = queue[1:]
			for p, peer := range f.Nodes[cur].Ports {
				if p == 0 || peer.Node < 0 || f.Nodes[peer.Node].Kind != Switch || d[peer.Node] >= 0 {
					continue
				}
				d[peer.Node] = d[cur] + 1
				queue = append(queue, peer.Node)
			}
		}
		cache[sw] = d
		return d
	}
	for di, dst := range f.Nodes {
		var target int // the switch nearest the destination
		extra := 0
		if dst.Kind == Switch {
			target = di
		} else {
			if dst.Ports[1].Node < 0 {
				continue
			}
			target, extra = dst.Ports[1].Node, 1
		}
		dist := distTo(target)
		for si, t := range out {
			switch {
			case si == di:
				t[dst.LID] = 0
				continue
			case si == target && extra == 1:
				t[dst.LID] = uint8(dst.Ports[1].Port)
				continue
			case dist[si] < 0:
				continue
			}
			var cands []int
			for p, peer := range f.Nodes[si].Ports {
				if p > 0 && peer.Node >= 0 && f.Nodes[peer.Node].Kind == Switch && dist[peer.Node] == dist[si]-1 {
					cands = append(cands, p)
				}
			}
			if len(cands) > 0 {
				t[dst.LID] = uint8(cands[dst.LID%len(cands)])
			}
		}
	}
	return out
}

// WriteLFTs prints the forwarding tables as dump_lfts does.
func (f *Fabric) WriteLFTs(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	lfts := f.LFTs()
	kind := func(n Node) string {
		if n.Kind == Switch {
			return "Switch"
		}
		return "Channel Adapter"
	}
	byLID := map[int]int{}
	for i, n := range f.Nodes {
		byLID[n.LID] = i
	}
	for si, n := range f.Nodes {
		t, ok := lfts[si]
		if !ok {
			continue
		}
		fmt.Fprintf(bw, "Unicast lids [0x0-0x%x] of switch Lid %d guid 0x%016x (%s):\n", len(t)-1, n.LID, n.GUID, n.Desc)
		fmt.Fprintf(bw, "  Lid  Out   Destination\n       Port     Info \n")
		valid := 0
		for lid, port := range t {
			if lid == 0 || port == 255 {
				continue
			}
			d := f.Nodes[byLID[lid]]
			fmt.Fprintf(bw, "0x%04x %03d : (%s portguid 0x%016x: '%s')\n", lid, port, kind(d), d.PortGUID, d.Desc)
			valid++
		}
		fmt.Fprintf(bw, "%d valid lids dumped \n", valid)
	}
	return bw.Flush()
}
