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
