package sim

import (
	"fmt"

	"github.com/nichealth/nichealthd/topology"
)

// pciAddr is a PCI function address: domain:bus:device.function.
type pciAddr struct{ domain, bus, dev, fn int }

func (a pciAddr) String() string {
	return fmt.Sprintf("%04x:%02x:%02x.%x", a.domain, a.bus, a.dev, a.fn)
}

// card is the physical card key (domain:bus:device) used for homogeneity.
func (a pciAddr) card() string {
	return fmt.Sprintf("%04x:%02x:%02x", a.domain, a.bus, a.dev)
}

// slotName is the systemd predictable-name fragment for the address:
// "p59s0" in domain 0, "P16p3s0" elsewhere (decimal, as udev prints it).
func (a pciAddr) slotName() string {
	if a.domain != 0 {
		return fmt.Sprintf("P%dp%ds%d", a.domain, a.bus, a.dev)
	}
	return fmt.Sprintf("p%ds%d", a.bus, a.dev)
}

type nodeKind int

const (
	kindBridge nodeKind = iota
	kindGPU
	kindHCA
	kindPlainNIC
)

// hcaModel describes one ConnectX/BlueField generation as sysfs shows it.
type hcaModel struct {
	hcaType  string // infiniband/<dev>/hca_type
	deviceID string // PCI device id of the PF
	vfID     string // PCI device id of its VFs
	fwVer    string
	boardID  string
	pciSpeed string
	name     string
	vendor   string // PCI vendor; "" means Mellanox 0x15b3
	driver   string // PCI driver; "" means mlx5_core
}

func (m hcaModel) pciVendor() string {
	if m.vendor == "" {
		return "0x15b3"
	}
	return m.vendor
}

func (m hcaModel) pciDriver() string {
	if m.driver == "" {
		return "mlx5_core"
	}
	return m.driver
}

var (
	cx6 = hcaModel{hcaType: "MT4123", deviceID: "0x101b", vfID: "0x101c", fwVer: "20.39.1002", boardID: "MT_0000000223", pciSpeed: "16.0 GT/s PCIe", name: "ConnectX-6"}
	cx7 = hcaModel{hcaType: "MT4129", deviceID: "0x1021", vfID: "0x101e", fwVer: "28.39.1002", boardID: "MT_0000000838", pciSpeed: "32.0 GT/s PCIe", name: "ConnectX-7"}
	// The dual-port ConnectX-7 a DGX H100 ships beside its eight compute
	// cards: the same ASIC and firmware line, another product (PSID), so
	// never compared with them for drift (DESIGN.md difference 20).
	cx7Dual = hcaModel{hcaType: "MT4129", deviceID: "0x1021", vfID: "0x101e", fwVer: "28.39.1002", boardID: "MT_0000000834", pciSpeed: "32.0 GT/s PCIe", name: "ConnectX-7 dual-port"}
	// An Intel E810 with irdma: a non-mlx5 RDMA device that shows up in
	// class/infiniband and must never be monitored (DESIGN.md section 2).
	e810 = hcaModel{hcaType: "E810", deviceID: "0x1593", vfID: "0x1889", fwVer: "1.70", boardID: "E810-C", pciSpeed: "16.0 GT/s PCIe", name: "E810", vendor: "0x8086", driver: "ice"}
	bf3  = hcaModel{hcaType: "MT41692", deviceID: "0xa2dc", vfID: "0x101e", fwVer: "32.39.1002", boardID: "MT_0000000884", pciSpeed: "32.0 GT/s PCIe", name: "BlueField-3"}
)

// gpuModel is a GPU as the PCI tree and nvidia-smi show it.
type gpuModel struct {
	deviceID string
	name     string
	pciSpeed string
}

var (
	gpuH100  = gpuModel{deviceID: "0x2330", name: "NVIDIA H100 80GB HBM3", pciSpeed: "32.0 GT/s PCIe"}
	gpuA100  = gpuModel{deviceID: "0x20b2", name: "NVIDIA A100-SXM4-80GB", pciSpeed: "16.0 GT/s PCIe"}
	gpuL40S  = gpuModel{deviceID: "0x26b9", name: "NVIDIA L40S", pciSpeed: "16.0 GT/s PCIe"}
	gpuGB200 = gpuModel{deviceID: "0x2941", name: "NVIDIA GB200", pciSpeed: "32.0 GT/s PCIe"}
)

// hcaFn is one RDMA-capable PCI function (one ib device) of a card.
type hcaFn struct {
	name      string
	model     hcaModel
	linkLayer string
	ports     int
	rate      string
	totalVFs  int
	numVFs    int
	role      topology.Role
	reason    string
	isVF      bool
	pf        *pciNode
	vfs       []*pciNode
	netdevs   []string
	state     string // initial "4: ACTIVE"
	phys      string // initial "5: LinkUp"
	seq       int    // creation order, seeds GUIDs and MACs
	numFns    int    // PFs on the card (netdev naming)
}

type pciNode struct {
	kind     nodeKind
	addr     pciAddr
	secBus   int // bridges: secondary bus
	numa     int
	parent   *pciNode
	hb       *hostBridge
	children []*pciNode
	rootPort bool

	upstream  bool   // a switch's upstream port: its link goes up
	linkSpeed string // a switch port's max link speed; "" is Gen5

	gpuModel gpuModel
	gpuID    int
	c2c      bool

	hca *hcaFn

	netdev string // kindPlainNIC
}

type hostBridge struct {
	domain, bus, numa int
	nextBus           int
	children          []*pciNode
}

func (hb *hostBridge) name() string { return fmt.Sprintf("pci%04x:%02x", hb.domain, hb.bus) }

func (hb *hostBridge) alloc() int {
	// A shape that overflows 0xff is caught by layout.check, not here.
	hb.nextBus++
	return hb.nextBus
}

// layout is a shape before it is written: the PCI forest plus naming.
type layout struct {
	hbs      []*hostBridge
	gpus     []*pciNode
	hcas     []*pciNode // PFs in ib naming order
	plain    []*pciNode
	routeVia *pciNode // function whose first netdev carries the default route
	seq      int
}

func (l *layout) hostBridge(domain, bus, numa int) *hostBridge {
	hb := &hostBridge{domain: domain, bus: bus, numa: numa, nextBus: bus}
	l.hbs = append(l.hbs, hb)
	return hb
}

// rootPort adds a root port at <bus>:<dev>.0 of the host bridge; sec > 0
// forces its secondary bus (gb200 NICs sit on bus 3 of their domain).
func (hb *hostBridge) rootPort(dev, sec int) *pciNode {
	if sec <= 0 {
		sec = hb.alloc()
	} else if sec > hb.nextBus {
		hb.nextBus = sec
	}
	n := &pciNode{kind: kindBridge, addr: pciAddr{hb.domain, hb.bus, dev, 0}, secBus: sec, numa: hb.numa, hb: hb, rootPort: true}
	hb.children = append(hb.children, n)
	return n
}

// bridge adds a switch port below b at <b.secBus>:<dev>.0.
func (b *pciNode) bridge(dev int) *pciNode {
	n := &pciNode{kind: kindBridge, addr: pciAddr{b.hb.domain, b.secBus, dev, 0}, secBus: b.hb.alloc(), numa: b.numa, hb: b.hb, parent: b}
	b.children = append(b.children, n)
	return n
}

// sw adds a PCIe switch (upstream port plus n downstream ports) below b and
// returns the downstream ports.
func (b *pciNode) sw(n int) []*pciNode {
	up := b.bridge(0)
	up.upstream = true
	dn := make([]*pciNode, n)
	for i := range dn {
		dn[i] = up.bridge(i)
	}
	return dn
}

func (l *layout) gpu(b *pciNode, model gpuModel) *pciNode {
	n := &pciNode{kind: kindGPU, addr: pciAddr{b.hb.domain, b.secBus, 0, 0}, numa: b.numa, hb: b.hb, parent: b, gpuModel: model, gpuID: len(l.gpus)}
	b.children = append(b.children, n)
	l.gpus = append(l.gpus, n)
	return n
}

// cardSpec describes a NIC card: fns PCI functions, each one ib device.
type cardSpec struct {
	names     []string // one per function
	model     hcaModel
	linkLayer string
	ports     int // ports per function
	rate      string
	totalVFs  int
	numVFs    int
	role      topology.Role
	reason    string
}

func (l *layout) card(b *pciNode, c cardSpec) []*pciNode {
	if c.ports == 0 {
		c.ports = 1
	}
	out := make([]*pciNode, len(c.names))
	for i, name := range c.names {
		l.seq++
		n := &pciNode{kind: kindHCA, addr: pciAddr{b.hb.domain, b.secBus, 0, i}, numa: b.numa, hb: b.hb, parent: b}
		n.hca = &hcaFn{name: name, model: c.model, linkLayer: c.linkLayer, ports: c.ports, rate: c.rate,
			totalVFs: c.totalVFs, numVFs: c.numVFs, role: c.role, reason: c.reason,
			state: "4: ACTIVE", phys: "5: LinkUp", seq: l.seq, numFns: len(c.names)}
		b.children = append(b.children, n)
		l.hcas = append(l.hcas, n)
		out[i] = n
	}
	return out
}

// plainNIC adds an Ethernet function with no RDMA (no infiniband dir), the
// kind of NIC that carries the default route on OCI and GB200 nodes.
func (l *layout) plainNIC(b *pciNode, netdev string) *pciNode {
	if netdev == "" {
		netdev = "en" + pciAddr{b.hb.domain, b.secBus, 0, 0}.slotName()
	}
	n := &pciNode{kind: kindPlainNIC, addr: pciAddr{b.hb.domain, b.secBus, 0, 0}, numa: b.numa, hb: b.hb, parent: b, netdev: netdev}
	b.children = append(b.children, n)
	l.plain = append(l.plain, n)
	return n
}

// finish creates VFs (after all PFs in ib naming order, as mlx5 numbers
// them) and netdev names.
func (l *layout) finish(vfPrefix string) {
	next := len(l.hcas)
	for _, pf := range l.hcas {
		h := pf.hca
		h.netdevs = hcaNetdevs(pf)
		for i := 0; i < h.numVFs; i++ {
			idx := h.numFns + i // VFs follow the card's PFs (ARI numbering)
			l.seq++
			vf := &pciNode{kind: kindHCA, addr: pciAddr{pf.addr.domain, pf.addr.bus, idx / 8, idx % 8}, numa: pf.numa, hb: pf.hb, parent: pf.parent}
			vf.hca = &hcaFn{name: fmt.Sprintf("%s%d", vfPrefix, next), model: h.model, linkLayer: h.linkLayer, ports: 1,
				rate: placeholderRate(h.linkLayer), isVF: true, pf: pf, role: topology.RoleUnknown,
				reason: "SR-IOV virtual function (device/physfn): expected DOWN until assigned, not monitored",
				state:  "1: DOWN", phys: "3: Disabled", seq: l.seq, numFns: h.numFns}
			next++
			vf.hca.netdevs = []string{fmt.Sprintf("%sv%d", h.netdevs[0], i)}
			pf.parent.children = append(pf.parent.children, vf)
			h.vfs = append(h.vfs, vf)
		}
	}
}

func hcaNetdevs(n *pciNode) []string {
	h := n.hca
	f := ""
	if h.numFns > 1 {
		f = fmt.Sprintf("f%d", n.addr.fn)
	}
	out := make([]string, h.ports)
	for p := range out {
		if h.linkLayer == topology.LinkLayerInfiniBand {
			out[p] = "ib" + n.addr.slotName() + f
			if p > 0 {
				out[p] += fmt.Sprintf("d%d", p)
			}
		} else {
			out[p] = fmt.Sprintf("en%s%snp%d", n.addr.slotName(), f, p)
		}
	}
	return out
}

// placeholderRate is what a port that never trained reports (DESIGN.md
// section 2 field facts): 10 Gb/sec on IB, 40 Gb/sec on Ethernet.
func placeholderRate(linkLayer string) string {
	if linkLayer == topology.LinkLayerInfiniBand {
		return "10 Gb/sec (4X SDR)"
	}
	return "40 Gb/sec (4X QDR)"
}
