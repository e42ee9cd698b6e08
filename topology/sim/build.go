package sim

import (
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Host is a built fake host directory. Its methods are safe for concurrent
// use; several processes mutating the same tree must not overlap
// RemoveDevice/RestoreDevice/RenameDevice/SetDefaultRoute, which rewrite the
// manifest.
type Host struct {
	Root string // absolute path of H

	mu sync.Mutex
	m  *manifest
}

// Build creates shape in root (which may exist but must not hold a built
// tree) with default options. See BuildWith.
func Build(root, shape string) (*Host, error) {
	return BuildWith(root, shape, BuildOptions{})
}

// BuildWith creates shape in root:
//   - (h, nil): the tree, metadata (unless opts.NoMetadata) and manifest are written;
//   - (nil, err): unknown shape, root already built, or a write failed; a
//     partly written tree may remain and should be discarded.
func BuildWith(root, shape string, opts BuildOptions) (*Host, error) {
	def, ok := shapeTable()[shape]
	if !ok {
		return nil, fmt.Errorf("unknown shape %q (known: %s)", shape, strings.Join(Shapes(), ", "))
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("build %s: %w", root, err)
	}
	if _, err := os.Lstat(filepath.Join(abs, ManifestName)); err == nil {
		return nil, fmt.Errorf("build %s: a simulated host is already built there; use a fresh directory or sim.Open", abs)
	}
	if opts.NodeName == "" {
		opts.NodeName = "sim-" + shape
	}
	if opts.BootID == "" {
		if opts.BootID, err = newUUID(); err != nil {
			return nil, err
		}
	}
	l := def.build()
	if opts.ForeignRDMA {
		l.addForeignRDMA()
	}
	return buildLayout(abs, shape, l, opts, true)
}

// buildLayout writes l into abs (or, with write false, only computes the
// manifest: the scale shapes' layout tests use that).
func buildLayout(abs, shape string, l *layout, opts BuildOptions, write bool) (*Host, error) {
	if err := l.check(); err != nil {
		return nil, fmt.Errorf("shape %s: %w", shape, err)
	}
	b := &builder{root: abs, sys: filepath.Join(abs, "sys"), l: l, opts: opts, m: &manifest{Shape: shape, Options: opts}, dryRun: !write}
	if err := b.build(); err != nil {
		return nil, err
	}
	h := &Host{Root: abs, m: b.m}
	if !write {
		return h, nil
	}
	if !opts.NoMetadata {
		if err := h.WriteMetadata(); err != nil {
			return nil, err
		}
	}
	if err := h.writePHYStats(); err != nil {
		return nil, err
	}
	if err := h.makeKmsg(); err != nil {
		return nil, err
	}
	if err := h.saveManifest(); err != nil {
		return nil, err
	}
	return h, nil
}

// Open reopens a tree made by Build (in this or another process):
//   - (h, nil): the manifest was read;
//   - (nil, err): root holds no readable manifest.
func Open(root string) (*Host, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", root, err)
	}
	m, err := readManifest(abs)
	if err != nil {
		return nil, err
	}
	return &Host{Root: abs, m: m}, nil
}

// check rejects a layout with clashing PCI addresses or bus overflow; it
// guards the shape table, not user input.
func (l *layout) check() error {
	seen := map[pciAddr]bool{}
	names := map[string]bool{}
	var walk func(n *pciNode) error
	walk = func(n *pciNode) error {
		if n.addr.bus > 0xff || n.secBus > 0xff {
			return fmt.Errorf("PCI bus overflow at %s", n.addr)
		}
		if seen[n.addr] {
			return fmt.Errorf("PCI address %s used twice", n.addr)
		}
		seen[n.addr] = true
		if n.hca != nil {
			if names[n.hca.name] {
				return fmt.Errorf("ib device name %s used twice", n.hca.name)
			}
			names[n.hca.name] = true
		}
		for _, c := range n.children {
			if err := walk(c); err != nil {
				return err
			}
		}
		return nil
	}
	for _, hb := range l.hbs {
		for _, c := range hb.children {
			if err := walk(c); err != nil {
				return err
			}
		}
	}
	return nil
}

type builder struct {
	root, sys string
	l         *layout
	opts      BuildOptions
	m         *manifest
	w         *treeWriter
	paths     map[*pciNode]string // PCI dir relative to sys
	uverbs    int
	umad      int
	dryRun    bool
}

func (b *builder) abs(rel string) string { return filepath.Join(b.sys, rel) }

func (b *builder) build() error {
	if !b.dryRun {
		if err := os.MkdirAll(b.root, 0o755); err != nil {
			return fmt.Errorf("build %s: %w", b.root, err)
		}
	}
	b.w = newTreeWriter(b.root)
	b.w.private = b.opts.PrivateFiles
	w := b.w
	for _, d := range []string{
		"sys/class/infiniband", "sys/class/net", "sys/class/infiniband_verbs", "sys/class/infiniband_mad",
		"sys/bus/pci/devices", "sys/bus/pci/drivers/mlx5_core", "sys/bus/pci/drivers/nvidia",
		"sys/bus/pci/drivers/pcieport", "sys/bus/pci/drivers/bnxt_en", "sys/bus/pci/drivers/ice", "sys/devices/virtual/net",
		"dev/infiniband", "proc/net", "proc/sys/kernel/random", "var/lib/nvsentinel",
	} {
		w.dir(filepath.Join(b.root, d))
	}
	w.file(filepath.Join(b.root, "sys/class/infiniband_verbs/abi_version"), "6\n")
	w.file(filepath.Join(b.root, "dev/infiniband/rdma_cm"), "")
	w.file(filepath.Join(b.root, "proc/sys/kernel/random/boot_id"), b.opts.BootID+"\n")

	b.paths = map[*pciNode]string{}
	for _, hb := range b.l.hbs {
		hbRel := "devices/" + hb.name()
		w.dir(b.abs(hbRel))
		for _, c := range hb.children {
			b.assignPaths(c, hbRel)
		}
	}
	// PCI directories first (parents before children), then their contents.
	b.forEach(func(n *pciNode) { w.dir(b.abs(b.paths[n])) })
	b.forEach(b.writePCI)

	for _, g := range b.l.gpus {
		b.m.GPUs = append(b.m.GPUs, GPUInfo{ID: g.gpuID, PCIAddress: g.addr.String(), NUMANode: g.numa,
			Name: g.gpuModel.name, UUID: gpuUUID(b.m.Shape, g.gpuID), PCIPath: b.paths[g], C2C: g.c2c})
	}
	b.m.NetDevs = append(b.m.NetDevs, NetDevInfo{Name: "lo", Path: "devices/virtual/net/lo"})
	b.writeNetdev("devices/virtual/net/lo", "lo", netdevSpec{typ: "772", mtu: "65536", addr: "00:00:00:00:00:00", oper: "unknown", carrier: "1"})

	var all []*pciNode
	all = append(all, b.l.hcas...)
	for _, pf := range b.l.hcas {
		all = append(all, pf.hca.vfs...)
	}
	for i, n := range all {
		b.writeHCA(n, i)
	}
	for _, n := range b.l.plain {
		rel := b.paths[n] + "/net/" + n.netdev
		b.writeNetdev(rel, n.netdev, netdevSpec{typ: "1", mtu: "1500", addr: macFor(1000 + len(b.m.NetDevs)), oper: "up", carrier: "1"})
		b.m.NetDevs = append(b.m.NetDevs, NetDevInfo{Name: n.netdev, Path: rel})
	}
	if b.l.routeVia != nil {
		if b.l.routeVia.hca != nil {
			b.m.DefaultRoute = b.l.routeVia.hca.netdevs[0]
		} else {
			b.m.DefaultRoute = b.l.routeVia.netdev
		}
	}
	if b.opts.Bond && b.m.DefaultRoute != "" {
		b.writeBond(b.m.DefaultRoute)
	}
	if b.dryRun {
		return nil
	}
	if err := b.w.flush(); err != nil {
		return err
	}
	return writeRoute(b.root, b.m)
}

func (b *builder) assignPaths(n *pciNode, parent string) {
	b.paths[n] = parent + "/" + n.addr.String()
	for _, c := range n.children {
		b.assignPaths(c, b.paths[n])
	}
}

func (b *builder) forEach(f func(*pciNode)) {
	var walk func(n *pciNode)
	walk = func(n *pciNode) {
		f(n)
		for _, c := range n.children {
			walk(c)
		}
	}
	for _, hb := range b.l.hbs {
		for _, c := range hb.children {
			walk(c)
		}
	}
}

func (b *builder) writePCI(n *pciNode) {
	w := b.w
	rel := b.paths[n]
	dir := b.abs(rel)
	var vendor, device, class, driver, speed, width string
	switch n.kind {
	case kindBridge:
		vendor, device, class, driver, speed, width = "0x10b5", "0xc010", "0x060400", "pcieport", "32.0 GT/s PCIe", "16"
		if n.rootPort {
			vendor, device = "0x8086", "0x352a"
		}
	case kindGPU:
		vendor, device, class, driver, speed, width = "0x10de", n.gpuModel.deviceID, "0x030200", "nvidia", n.gpuModel.pciSpeed, "16"
	case kindHCA:
		vendor, device, class, driver, speed, width = n.hca.model.pciVendor(), n.hca.model.deviceID, "0x020700", n.hca.model.pciDriver(), n.hca.model.pciSpeed, "16"
		if n.hca.linkLayer == eth {
			class = "0x020000"
		}
		if n.hca.isVF {
			device = n.hca.model.vfID
		}
	case kindPlainNIC:
		vendor, device, class, driver, speed, width = "0x14e4", "0x1750", "0x020000", "bnxt_en", "16.0 GT/s PCIe", "8"
	}
	w.file(dir+"/vendor", vendor+"\n")
	w.file(dir+"/device", device+"\n")
	w.file(dir+"/subsystem_vendor", vendor+"\n")
	w.file(dir+"/subsystem_device", "0x0001\n")
	w.file(dir+"/class", class+"\n")
	w.file(dir+"/numa_node", fmt.Sprintf("%d\n", n.numa))
	w.file(dir+"/enable", "1\n")
	b.writeLink(dir, n, speed, width)
	b.writeAER(n, dir)
	w.file(dir+"/uevent", fmt.Sprintf("DRIVER=%s\nPCI_CLASS=%s\nPCI_ID=%s:%s\nPCI_SLOT_NAME=%s\n",
		driver, strings.TrimLeft(strings.TrimPrefix(class, "0x"), "0"), strings.ToUpper(vendor[2:]), strings.ToUpper(device[2:]), n.addr))
	drv := filepath.Join(b.sys, "bus/pci/drivers", driver)
	w.link(dir+"/driver", drv)
	w.link(drv+"/"+n.addr.String(), dir)
	w.link(b.abs("bus/pci/devices/"+n.addr.String()), dir)
	if n.hca != nil && !n.hca.isVF && n.hca.totalVFs > 0 {
		w.file(dir+"/sriov_totalvfs", fmt.Sprintf("%d\n", n.hca.totalVFs))
		w.file(dir+"/sriov_numvfs", fmt.Sprintf("%d\n", n.hca.numVFs))
		for i, vf := range n.hca.vfs {
			w.link(fmt.Sprintf("%s/virtfn%d", dir, i), b.abs(b.paths[vf]))
		}
	}
	if n.hca != nil && n.hca.isVF {
		w.link(dir+"/physfn", b.abs(b.paths[n.hca.pf]))
	}
	if n.hca != nil && !n.hca.isVF {
		// Real sysfs makes vpd root-only (0600); the simulated one is
		// readable by anyone, so a test run as any user sees the serial.
		w.file(dir+"/vpd", string(vpdFor(n.hca.model, serialFor(n.hca.seq), false)))
	}
}

var classicCounters = []string{
	"symbol_error", "port_rcv_errors", "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors",
	"link_error_recovery", "port_xmit_constraint_errors", "port_rcv_constraint_errors",
	"local_link_integrity_errors", "excessive_buffer_overrun_errors", "VL15_dropped", "port_xmit_discards",
	"port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets", "port_xmit_wait", "link_downed",
	"unicast_xmit_packets", "unicast_rcv_packets", "multicast_xmit_packets", "multicast_rcv_packets",
}

var hwCounters = []string{
	"out_of_buffer", "out_of_sequence", "duplicate_request", "rnr_nak_retry_err", "packet_seq_err",
	"implied_nak_seq_err", "local_ack_timeout_err", "resp_local_length_error", "resp_cqe_error", "req_cqe_error",
	"req_remote_invalid_request", "req_remote_access_errors", "resp_remote_access_errors", "resp_cqe_flush_error",
	"req_cqe_flush_error", "roce_adp_retrans", "roce_adp_retrans_to", "roce_slow_restart", "roce_slow_restart_cnps",
	"roce_slow_restart_trans", "rp_cnp_ignored", "rp_cnp_handled", "np_ecn_marked_roce_packets", "np_cnp_sent",
	"rx_icrc_encapsulated", "lifespan",
}

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

// writeRoute writes proc/net/route and proc/net/ipv6_route in the kernel's
// formats: a subnet route per up netdev and, when set, the default route
// (IPv4: destination 00000000, flags 0003 = RTF_UP|RTF_GATEWAY; IPv6: ::/0
// via a link-local gateway). The IPv6 table always ends with the kernel's
// "unreachable" default on lo (flags RTF_REJECT), which is not a default
// route and must not be read as one.
func writeRoute(root string, m *manifest) error {
	var sb strings.Builder
	line := func(s string) { fmt.Fprintf(&sb, "%-127s\n", s) }
	line("Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT")
	if m.DefaultRoute != "" {
		line(m.DefaultRoute + "\t00000000\t0100000A\t0003\t0\t0\t100\t00000000\t0\t0\t0")
	}
	const zero = "00000000000000000000000000000000"
	var v6 strings.Builder
	if m.DefaultRoute6 != "" {
		fmt.Fprintf(&v6, "%s 00 %s 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003 %8s\n", zero, zero, m.DefaultRoute6)
	}
	for i, nd := range m.NetDevs {
		if nd.Name == "lo" || nd.Device != "" && nd.Port != 1 {
			continue
		}
		line(fmt.Sprintf("%s\t%08X\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0", nd.Name, uint32(i)<<16|0x0A))
		fmt.Fprintf(&v6, "fe800000000000000000000000000000 40 %s 00 %s 00000100 00000001 00000000 00000001 %8s\n", zero, zero, nd.Name)
	}
	fmt.Fprintf(&v6, "%s 00 %s 00 %s ffffffff 00000001 00000000 00200200       lo\n", zero, zero, zero)
	if err := writeAtomic(root, filepath.Join(root, "proc/net/ipv6_route"), []byte(v6.String())); err != nil {
		return err
	}
	return writeAtomic(root, filepath.Join(root, "proc/net/route"), []byte(sb.String()))
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

func newUUID() (string, error) {
	var u [16]byte
	if _, err := rand.Read(u[:]); err != nil {
		return "", fmt.Errorf("generate boot id: %w", err)
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmtUUID(u[:]), nil
}

func fmtUUID(u []byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

func gpuUUID(shape string, id int) string {
	s := sha256.Sum256([]byte(fmt.Sprintf("%s/gpu/%d", shape, id)))
	return "GPU-" + fmtUUID(s[:16])
}
