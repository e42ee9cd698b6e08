package fattree

import (
	"bufio"
	"fmt"
	"io"
)

// Spec shapes a fat tree. Every switch has Radix ports, half down and
// half up. With Pods == 0 it is two tiers (leaves and spines, up to
// Radix/2 hosts per leaf); with Pods > 0 it is three (Pods pods of Radix/2
// leaves and Radix/2 aggregation switches, and the cores above them).
type Spec struct {
	Radix int
	// Hosts is how many hosts hang under the leaves, HostsPerLeaf each
	// (at most Radix/2 HCAs per leaf: Rails × HostsPerLeaf).
	Hosts        int
	HostsPerLeaf int
	// Rails is the number of HCAs per host; HCA r of every host hangs on
	// the leaves of rail r (rail-optimised, as DGX pods are cabled).
	Rails int
	Pods  int
	// HostFormat and SwitchFormat name the nodes (fmt verbs: host index;
	// switch tier and index). Defaults: "gpu%04d" and
	// "MF0;ibsw-t%d-%03d:MQM9700/U1".
	HostFormat, SwitchFormat string
	// Speed is the link speed word ("NDR" by default).
	Speed string
}

// Kind is a node's kind in the tools' words.
type Kind int

const (
	Switch Kind = iota
	HCA
)

// Node is one switch or HCA.
type Node struct {
	Kind     Kind
	GUID     uint64
	PortGUID uint64 // an HCA's port 1; a switch's ports share its node GUID
	Desc     string
	Host     string // the host an HCA belongs to
	LID      int
	Tier     int    // 0 HCA, 1 leaf, 2 spine or aggregation, 3 core
	Ports    []Peer // index = port number; Ports[0] unused
}

// Peer is the far end of a port (Node < 0: not cabled).
type Peer struct{ Node, Port int }

// Fabric is a built fat tree.
type Fabric struct {
	Nodes []Node
	Hosts []string
	spec  Spec
}

// Build makes the fabric a spec describes.
func Build(s Spec) (*Fabric, error) {
	if s.Radix < 4 || s.Radix%2 != 0 || s.Radix > 254 {
		return nil, fmt.Errorf("radix %d: want an even number of ports from 4 to 254", s.Radix)
	}
	if s.Rails <= 0 {
		s.Rails = 1
	}
	half := s.Radix / 2
	if s.HostsPerLeaf <= 0 {
		s.HostsPerLeaf = half
	}
	if s.HostsPerLeaf > half {
		return nil, fmt.Errorf("%d hosts per leaf: a leaf has %d down ports", s.HostsPerLeaf, half)
	}
	if s.HostFormat == "" {
		s.HostFormat = "gpu%04d"
	}
	if s.SwitchFormat == "" {
		s.SwitchFormat = "MF0;ibsw-t%d-%03d:MQM9700/U1"
	}
	if s.Speed == "" {
		s.Speed = "NDR"
	}
	f := &Fabric{spec: s}
	groups := (s.Hosts + s.HostsPerLeaf - 1) / s.HostsPerLeaf // leaves per rail
	nLeaves := groups * s.Rails
	leaves := make([]int, 0, nLeaves)
	mids := make([]int, 0, half)
	count := map[int]int{}
	newSwitch := func(tier int) int {
		count[tier]++
		i := len(f.Nodes)
		f.Nodes = append(f.Nodes, Node{Kind: Switch, GUID: 0xfc6a1c0300000000 | uint64(tier)<<24 | uint64(count[tier]),
			Desc: fmt.Sprintf(s.SwitchFormat, tier, count[tier]), Tier: tier, Ports: make([]Peer, s.Radix+1)})
		for p := range f.Nodes[i].Ports {
			f.Nodes[i].Ports[p] = Peer{-1, 0}
		}
		f.Nodes[i].PortGUID = f.Nodes[i].GUID
		return i
	}
	for range nLeaves {
		leaves = append(leaves, newSwitch(1))
	}
	// Hosts: host h's rail r HCA on leaf (r*groups + h/HostsPerLeaf).
	for h := range s.Hosts {
		name := fmt.Sprintf(s.HostFormat, h)
		f.Hosts = append(f.Hosts, name)
		for r := range s.Rails {
			guid := 0xb83fd20300000000 | uint64(h)<<8 | uint64(r)<<1
			i := len(f.Nodes)
			f.Nodes = append(f.Nodes, Node{Kind: HCA, GUID: guid, PortGUID: guid + 1, Desc: fmt.Sprintf("%s mlx5_%d", name, r),
				Host: name, Ports: []Peer{{-1, 0}, {-1, 0}}})
			leaf := leaves[r*groups+h/s.HostsPerLeaf]
			f.connect(leaf, 1+h%s.HostsPerLeaf, i, 1)
		}
	}
	if s.Pods == 0 {
		// Two tiers: each leaf's half uplinks spread over `half` spines.
		if nLeaves > s.Radix {
			return nil, fmt.Errorf("%d leaves: a two-tier tree of radix %d has at most %d; give Pods", nLeaves, s.Radix, s.Radix)
		}
		for range half {
			mids = append(mids, newSwitch(2))
		}
		for li, l := range leaves {
			for j := range half {
				f.connect(l, half+1+j, mids[j], 1+li)
			}
		}
	} else {
		per := (nLeaves + s.Pods - 1) / s.Pods
		if per > half {
			return nil, fmt.Errorf("%d leaves in %d pods: a pod holds %d", nLeaves, s.Pods, half)
		}
		aggs := make([][]int, s.Pods)
		for p := range s.Pods {
			for range half {
				aggs[p] = append(aggs[p], newSwitch(2))
			}
			for k := 0; k < per && p*per+k < nLeaves; k++ {
				l := leaves[p*per+k]
				for j := range half {
					f.connect(l, half+1+j, aggs[p][j], 1+k)
				}
			}
		}
		// Core group j serves aggregation switch j of every pod; each
		// aggregation switch's uplinks spread over its group's cores.
		perCore := max(1, s.Radix/s.Pods) // links a core takes from one aggregation switch
		groupSize := (half + perCore - 1) / perCore
		for j := range half {
			cores := make([]int, 0, groupSize)
			for range groupSize {
				cores = append(cores, newSwitch(3))
			}
			for p := range s.Pods {
				for u := range half {
					c := cores[u%groupSize]
					f.connect(aggs[p][j], half+1+u, c, 1+p*perCore+u/groupSize)
				}
			}
		}
	}
	lid := 1
	for i := range f.Nodes {
		f.Nodes[i].LID = lid
		lid++
	}
	return f, nil
}

func (f *Fabric) connect(a, ap, b, bp int) {
	if f.Nodes[a].Ports[ap].Node >= 0 || f.Nodes[b].Ports[bp].Node >= 0 {
		panic(fmt.Sprintf("fattree: port cabled twice: %d/%d-%d/%d", a, ap, b, bp))
	}
	f.Nodes[a].Ports[ap] = Peer{b, bp}
	f.Nodes[b].Ports[bp] = Peer{a, ap}
}

func (f *Fabric) width() string { return "4x" }

// WriteTopology prints the fabric as ibnetdiscover does (switches first,
// then HCAs).
func (f *Fabric) WriteTopology(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	fmt.Fprintf(bw, "#\n# Topology file: generated on Mon Jan  5 00:00:00 2026\n#\n# Initiated from node %016x port %016x\n", f.Nodes[0].GUID, f.Nodes[0].GUID)
	for _, kind := range []Kind{Switch, HCA} {
		for _, n := range f.Nodes {
			if n.Kind != kind {
				continue
			}
			fmt.Fprintf(bw, "\nvendid=0x2c9\n")
			if kind == Switch {
				fmt.Fprintf(bw, "devid=0xd2f0\nsysimgguid=0x%x\nswitchguid=0x%x(%x)\n", n.GUID, n.GUID, n.PortGUID)
				fmt.Fprintf(bw, "Switch\t%d \"S-%016x\"\t\t# \"%s\" enhanced port 0 lid %d lmc 0\n", len(n.Ports)-1, n.GUID, n.Desc, n.LID)
				for p, peer := range n.Ports {
					if p == 0 || peer.Node < 0 {
						continue
					}
					r := f.Nodes[peer.Node]
					if r.Kind == Switch {
						fmt.Fprintf(bw, "[%d]\t\"S-%016x\"[%d]\t\t# \"%s\" lid %d %s%s\n", p, r.GUID, peer.Port, r.Desc, r.LID, f.width(), f.spec.Speed)
					} else {
						fmt.Fprintf(bw, "[%d]\t\"H-%016x\"[%d](%x) \t\t# \"%s\" lid %d %s%s\n", p, r.GUID, peer.Port, r.PortGUID, r.Desc, r.LID, f.width(), f.spec.Speed)
					}
				}
				continue
			}
			fmt.Fprintf(bw, "devid=0x1021\nsysimgguid=0x%x\ncaguid=0x%x\n", n.GUID, n.GUID)
			fmt.Fprintf(bw, "Ca\t%d \"H-%016x\"\t\t# \"%s\"\n", len(n.Ports)-1, n.GUID, n.Desc)
			for p, peer := range n.Ports {
				if p == 0 || peer.Node < 0 {
					continue
				}
				r := f.Nodes[peer.Node]
				fmt.Fprintf(bw, "[%d](%x) \t\"S-%016x\"[%d]\t\t# lid %d lmc 0 \"%s\" lid %d %s%s\n", p, n.PortGUID, r.GUID, peer.Port, n.LID, r.Desc, r.LID, f.width(), f.spec.Speed)
			}
		}
	}
	return bw.Flush()
}

// WritePorts prints the fabric as ibnetdiscover -p does: one line per
// port of every node, highest port first, unconnected switch ports too.
func (f *Fabric) WritePorts(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	kind := func(n Node) string {
		if n.Kind == Switch {
			return "SW"
		}
		return "CA"
	}
	for _, n := range f.Nodes {
		for p := len(n.Ports) - 1; p > 0; p-- {
			peer := n.Ports[p]
			fmt.Fprintf(bw, "%2s %5d %2d 0x%016x %s %s", kind(n), n.LID, p, n.PortGUID, f.width(), f.spec.Speed)
			if peer.Node < 0 {
				fmt.Fprintf(bw, "%36s'%s'\n", "", n.Desc)
				continue
			}
			r := f.Nodes[peer.Node]
			fmt.Fprintf(bw, " - %2s %5d %2d 0x%016x ( '%s' - '%s' )\n", kind(r), r.LID, peer.Port, r.PortGUID, n.Desc, r.Desc)
		}
	}
	return bw.Flush()
}
