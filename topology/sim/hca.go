package sim

// The HCA side of a built tree: each RDMA device's class/infiniband
// directory, its ports and counters, its netdevs and bonds, and the
// identifiers (GUIDs, MACs, IPoIB addresses) they are derived from.

import (
	"fmt"
	"path/filepath"
	"strings"
)

// CounterNames returns the classic PMA counter file names (ports/<n>/counters)
// and the mlx5 extended ones (ports/<n>/hw_counters) every simulated port has.
func CounterNames() (counters, hw []string) {
	return append([]string(nil), classicCounters...), append([]string(nil), hwCounters...)
}

// trafficCounters start nonzero on a live port, as on a node that has run.
var trafficCounters = map[string]uint64{
	"port_xmit_data": 91824736512, "port_rcv_data": 88123456789, "port_xmit_packets": 421337012,
	"port_rcv_packets": 409876543, "unicast_xmit_packets": 421300000, "unicast_rcv_packets": 409800000,
	"multicast_xmit_packets": 37012, "multicast_rcv_packets": 76543,
}

func (b *builder) writeHCA(n *pciNode, idx int) {
	w := b.w
	h := n.hca
	pciRel := b.paths[n]
	ibRel := pciRel + "/infiniband/" + h.name
	ibDir := b.abs(ibRel)
	guid := guidFor(h.seq)
	up := h.state == "4: ACTIVE"
	w.dir(ibDir + "/ports")
	w.file(ibDir+"/hca_type", h.model.hcaType+"\n")
	w.file(ibDir+"/fw_ver", h.model.fwVer+"\n")
	w.file(ibDir+"/board_id", h.model.boardID+"\n")
	w.file(ibDir+"/node_guid", fmtGUID(guid)+"\n")
	w.file(ibDir+"/sys_image_guid", fmtGUID(guid)+"\n")
	w.file(ibDir+"/node_type", "1: CA\n")
	w.file(ibDir+"/node_desc", fmt.Sprintf("%s %s\n", b.opts.NodeName, h.name))
	w.link(ibDir+"/device", b.abs(pciRel))
	w.link(b.abs("class/infiniband/"+h.name), ibDir)

	// Character devices and their classes (DESIGN.md section 2 field facts).
	uv := fmt.Sprintf("uverbs%d", b.uverbs)
	b.uverbs++
	uvRel := pciRel + "/infiniband_verbs/" + uv
	w.dir(b.abs(uvRel))
	w.file(b.abs(uvRel+"/ibdev"), h.name+"\n")
	w.file(b.abs(uvRel+"/dev"), fmt.Sprintf("231:%d\n", 192+idx))
	w.link(b.abs(uvRel+"/device"), b.abs(pciRel))
	w.link(b.abs("class/infiniband_verbs/"+uv), b.abs(uvRel))
	w.file(filepath.Join(b.root, "dev/infiniband", uv), "")

	for p := 1; p <= h.ports; p++ {
		netdev := h.netdevs[p-1]
		pd := fmt.Sprintf("%s/ports/%d", ibDir, p)
		w.dir(pd + "/counters")
		w.dir(pd + "/hw_counters")
		w.dir(pd + "/gids")
		w.dir(pd + "/gid_attrs/types")
		w.dir(pd + "/gid_attrs/ndevs")
		w.file(pd+"/state", h.state+"\n")
		w.file(pd+"/phys_state", h.phys+"\n")
		w.file(pd+"/rate", h.rate+"\n")
		w.file(pd+"/link_layer", h.linkLayer+"\n")
		w.file(pd+"/lid_mask_count", "0\n")
		w.file(pd+"/sm_sl", "0\n")
		mac := macFor(h.seq*4 + p)
		if h.linkLayer == ib {
			lid, sm := "0x0", "0x0"
			if up {
				lid, sm = fmt.Sprintf("0x%x", h.seq*4+p), "0x1"
			}
			w.file(pd+"/lid", lid+"\n")
			w.file(pd+"/sm_lid", sm+"\n")
			w.file(pd+"/cap_mask", "0xa651e848\n")
			w.file(pd+"/gids/0", "fe80:0000:0000:0000:"+fmtGUID(guid+uint64(p-1))+"\n")
			w.file(pd+"/gid_attrs/types/0", "IB/RoCE v1\n")
			w.file(pd+"/gid_attrs/ndevs/0", "\n")
		} else {
			w.file(pd+"/lid", "0x0\n")
			w.file(pd+"/sm_lid", "0x0\n")
			w.file(pd+"/cap_mask", "0x04010000\n")
			w.writeGIDs(pd, roceGIDs(mac, netdev))
		}
		for _, c := range classicCounters {
			// Equal values on every live port keep Build fast (equal files
			// share an inode); detection only ever looks at deltas.
			v := uint64(0)
			if up {
				v = trafficCounters[c]
			}
			w.file(pd+"/counters/"+c, fmt.Sprintf("%d\n", v))
		}
		for _, c := range hwCounters {
			v := "0\n"
			if c == "lifespan" {
				v = "10\n"
			}
			w.file(pd+"/hw_counters/"+c, v)
		}

		um := b.umad
		b.umad++
		for _, kind := range []string{"umad", "issm"} {
			if kind == "issm" && h.linkLayer != ib {
				continue // issm exists only for IB-mode ports
			}
			name := fmt.Sprintf("%s%d", kind, um)
			rel := pciRel + "/infiniband_mad/" + name
			w.dir(b.abs(rel))
			w.file(b.abs(rel+"/ibdev"), h.name+"\n")
			w.file(b.abs(rel+"/port"), fmt.Sprintf("%d\n", p))
			w.file(b.abs(rel+"/dev"), fmt.Sprintf("231:%d\n", um))
			w.link(b.abs(rel+"/device"), b.abs(pciRel))
			w.link(b.abs("class/infiniband_mad/"+name), b.abs(rel))
			w.file(filepath.Join(b.root, "dev/infiniband", name), "")
		}

		ndRel := pciRel + "/net/" + netdev
		spec := netdevSpec{typ: "1", mtu: "9000", addr: mac, oper: "up", carrier: "1", devPort: p - 1}
		if h.linkLayer == ib {
			spec.typ, spec.mtu = "32", "4092"
			spec.addr = ipoibAddr(guid + uint64(p-1))
		}
		if !up {
			spec.oper, spec.carrier = "down", "0"
		}
		b.writeNetdev(ndRel, netdev, spec)
		w.link(b.abs(ndRel+"/device"), b.abs(pciRel))
		b.m.NetDevs = append(b.m.NetDevs, NetDevInfo{Name: netdev, Device: h.name, Port: p, Path: ndRel})
	}

	di := DeviceInfo{Name: h.name, PCIAddress: n.addr.String(), Card: n.addr.card(), NUMANode: n.numa,
		LinkLayer: h.linkLayer, Ports: h.ports, IsVF: h.isVF, NetDev: h.netdevs[0],
		NetDevs: append([]string(nil), h.netdevs...), HCAType: h.model.hcaType, FWVer: h.model.fwVer,
		Vendor: h.model.pciVendor(), Driver: h.model.pciDriver(),
		NodeGUID: fmtGUID(guid), PCIPath: pciRel, ExpectedRole: h.role, RoleReason: h.reason, BoardID: h.model.boardID}
	if h.isVF {
		di.PhysFn = h.pf.addr.String()
	} else {
		di.Serial = serialFor(h.seq)
	}
	b.m.Devices = append(b.m.Devices, di)
}

type netdevSpec struct {
	typ, mtu, addr, oper, carrier string
	devPort                       int
}

func (b *builder) writeNetdev(rel, name string, s netdevSpec) {
	w := b.w
	d := b.abs(rel)
	w.dir(d + "/statistics")
	w.file(d+"/operstate", s.oper+"\n")
	w.file(d+"/carrier", s.carrier+"\n")
	w.file(d+"/carrier_changes", "2\n")
	w.file(d+"/mtu", s.mtu+"\n")
	w.file(d+"/address", s.addr+"\n")
	w.file(d+"/type", s.typ+"\n")
	w.file(d+"/dev_port", fmt.Sprintf("%d\n", s.devPort))
	w.file(d+"/ifindex", fmt.Sprintf("%d\n", len(b.m.NetDevs)+1))
	stats := map[string]string{"rx_bytes": "81234567890", "tx_bytes": "79876543210"}
	if s.oper == "down" {
		stats = nil
	}
	for _, st := range []string{"rx_bytes", "tx_bytes", "rx_packets", "tx_packets", "rx_errors", "tx_errors", "rx_dropped", "tx_dropped", "rx_crc_errors", "rx_missed_errors"} {
		v := stats[st]
		if v == "" {
			v = "0"
		}
		w.file(d+"/statistics/"+st, v+"\n")
	}
	w.link(b.abs("class/net/"+name), d)
}

func (b *builder) writeBond(slave string) {
	var slaveRel string
	for _, nd := range b.m.NetDevs {
		if nd.Name == slave {
			slaveRel = nd.Path
		}
	}
	rel := "devices/virtual/net/bond0"
	b.writeNetdev(rel, "bond0", netdevSpec{typ: "1", mtu: "9000", addr: macFor(999), oper: "up", carrier: "1"})
	b.w.dir(b.abs(rel + "/bonding"))
	b.w.file(b.abs(rel+"/bonding/slaves"), slave+"\n")
	b.w.file(b.abs(rel+"/bonding/mode"), "active-backup 1\n")
	b.w.link(b.abs(rel+"/lower_"+slave), b.abs(slaveRel))
	b.w.link(b.abs(slaveRel+"/upper_bond0"), b.abs(rel))
	b.w.link(b.abs(slaveRel+"/master"), b.abs(rel))
	b.m.NetDevs = append(b.m.NetDevs, NetDevInfo{Name: "bond0", Path: rel})
	b.m.DefaultRoute = "bond0"
}

func guidFor(seq int) uint64 { return 0xb83fd20300a0b000 + uint64(seq)*0x10 }

// fmtGUID prints a GUID as sysfs does: "b83f:d203:00a0:b010".
func fmtGUID(g uint64) string {
	return fmt.Sprintf("%04x:%04x:%04x:%04x", g>>48, (g>>32)&0xffff, (g>>16)&0xffff, g&0xffff)
}

func macFor(i int) string {
	return fmt.Sprintf("b8:3f:d2:%02x:%02x:%02x", (i>>16)&0xff, (i>>8)&0xff, i&0xff)
}

// eui64 derives the RoCE link-local GID interface id from a MAC (seed 9.1).
func eui64(mac string) string {
	var m [6]byte
	fmt.Sscanf(mac, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5])
	return fmt.Sprintf("%02x%02x:%02xff:fe%02x:%02x%02x", m[0]^0x02, m[1], m[2], m[3], m[4], m[5])
}

// ipoibAddr is the 20-byte IPoIB hardware address: QPN flags, GID prefix
// fe80::, port GUID.
func ipoibAddr(guid uint64) string {
	parts := []string{"00", "00", "10", "49", "fe", "80", "00", "00", "00", "00", "00", "00"}
	for i := 7; i >= 0; i-- {
		parts = append(parts, fmt.Sprintf("%02x", byte(guid>>(uint(i)*8))))
	}
	return strings.Join(parts, ":")
}
