package sim

import (
	"fmt"
	"sort"

	"github.com/nichealth/nichealthd/topology"
)

const (
	ib  = topology.LinkLayerInfiniBand
	eth = topology.LinkLayerEthernet

	rateNDR     = "400 Gb/sec (4X NDR)"
	rateHDR     = "200 Gb/sec (4X HDR)"
	rateEDR     = "100 Gb/sec (4X EDR)"
	rateEth200  = "200 Gb/sec (4X HDR)"
	rateEth100  = "100 Gb/sec (4X EDR)"
	vfPrefixMLX = "mlx5_"
)

// shapeDef is one named node shape: a description and a layout recipe.
type shapeDef struct {
	desc  string
	build func() *layout
}

func shapeTable() map[string]shapeDef {
	return map[string]shapeDef{
		"dgx-h100":    {"DGX H100: 2 NUMA, 8 H100 SXM, 8 IB CX-7 compute (PIX, 2 VFs each, PSID MT_0000000838), 2 dual-port RoCE storage cards (PSID MT_0000000834), 1 RoCE management NIC with the default route", dgxH100},
		"dgx-h100-ib": {"DGX H100 with its 2 dual-port cards (PSID MT_0000000834) on InfiniBand: compute NICs by link layer beside the 8 PIX compute cards (PSID MT_0000000838), 1 RoCE management NIC with the default route", func() *layout { return dgxH100With(ib) }},
		"gb200":       {"GB200 NVL4: 2 Grace NUMA, 4 GPUs on NVLink-C2C (all SYS), 4 IB CX-7 (ibp3s0 ...), 2 BlueField-3 RoCE, default route on a non-RDMA NIC", gb200},
		"l40s-onprem": {"on-prem L40S: 2 NUMA, 8 PCIe GPUs, 1 Ethernet management NIC with the default route, 4 IB compute NICs (NODE)", l40sOnprem},
		"minimal":     {"1 H100 GPU and 1 single-port IB CX-7 mlx5_0 under the same PCIe switch (PIX), NUMA 0", minimal},
		"a100-oci":    {"OCI A100 RoCE: 4 NUMA (0,2,4,6), 8 GPUs on NUMA 2 and 4, 18 RoCE PFs: mlx5_0 (NUMA 0) and mlx5_13 (NUMA 6) management by the NUMA gate, 16 compute PXB", a100OCI},
		"h100-oci":    {"OCI H100: 2 NUMA, 8 GPUs, 8 dual-function RoCE cards PXB to one GPU each (16 compute), storage mlx5_2 and mlx5_11 (NODE), default route on a non-RDMA NIC", h100OCI},
		"l40s-oci":    {"OCI L40S: 2 NUMA, 4 PCIe GPUs, 6 RoCE NICs NODE/SYS only (6 storage), default route on a non-RDMA NIC", l40sOCI},
		"xl":          {"scale: 8 GPUs, 32 dual-port IB PFs (PIX) with 8 VFs each (256 VFs)", func() *layout { return scale(8, 4, 8) }},
		"xxl":         {"scale: 8 GPUs, 128 dual-port IB PFs (PIX) with 8 VFs each (1024 VFs)", func() *layout { return scale(8, 16, 8) }},
	}
}

// Shapes lists the shape names Build accepts, sorted.
func Shapes() []string {
	t := shapeTable()
	out := make([]string, 0, len(t))
	for name := range t {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// Describe returns a one-line description of a shape, or false if the shape
// does not exist.
func Describe(shape string) (string, bool) {
	d, ok := shapeTable()[shape]
	return d.desc, ok
}

func mlx(i int) string { return fmt.Sprintf("mlx5_%d", i) }

// freshRootPort returns a root port on a new host bridge: the usual way a
// CPU socket exposes one x16 slot.
func (l *layout) freshRootPort(domain, bus, numa int) *pciNode {
	return l.hostBridge(domain, bus, numa).rootPort(1, 0)
}

func dgxH100() *layout { return dgxH100With(eth) }

// dgxH100With is a DGX H100 whose two dual-port cards run link layer ll:
// Ethernet, storage beside the compute fabric; or InfiniBand, where the
// link layer makes them compute NICs too, in one role with cards of
// another PSID.
func dgxH100With(ll string) *layout {
	l := &layout{}
	buses := []int{0x15, 0x26, 0x37, 0x58, 0x97, 0xa8, 0xb7, 0xd8}
	for g, bus := range buses {
		dn := l.freshRootPort(0, bus, g/4).sw(2)
		l.gpu(dn[0], gpuH100)
		l.card(dn[1], cardSpec{names: []string{mlx(g)}, model: cx7, linkLayer: ib, rate: rateNDR,
			totalVFs: 16, numVFs: 2, role: topology.RoleCompute, reason: fmt.Sprintf("PIX to GPU %d (shares its PCIe switch)", g)})
	}
	for s, bus := range []int{0x40, 0xc0} {
		spec := cardSpec{names: []string{mlx(8 + 2*s), mlx(9 + 2*s)}, model: cx7Dual, linkLayer: eth, rate: rateEth200,
			totalVFs: 8, role: topology.RoleStorage, reason: fmt.Sprintf("Ethernet, NODE to the GPUs of NUMA %d, no PIX/PXB", s)}
		if ll == ib {
			spec.linkLayer, spec.rate, spec.role = ib, rateNDR, topology.RoleCompute
			spec.reason = "InfiniBand, NODE to local GPUs, no PIX/PXB: link layer decides"
		}
		l.card(l.freshRootPort(0, bus, s), spec)
	}
	mg := l.card(l.freshRootPort(0, 0x0c, 0), cardSpec{names: []string{mlx(12)}, model: cx7, linkLayer: eth, rate: rateEth100,
		role: topology.RoleManagement, reason: "carries the default route"})
	l.routeVia = mg[0]
	l.finish(vfPrefixMLX)
	return l
}

func gb200() *layout {
	l := &layout{}
	nic := func(domain, numa int, name string, model hcaModel, ll, rate string, role topology.Role, reason string) {
		dn := l.hostBridge(domain, 0, numa).rootPort(0, 1).sw(1)
		l.card(dn[0], cardSpec{names: []string{name}, model: model, linkLayer: ll, rate: rate, role: role, reason: reason})
	}
	gpu := func(domain, numa int) {
		g := l.gpu(l.hostBridge(domain, 0, numa).rootPort(0, 1), gpuGB200)
		g.c2c = true
	}
	ibReason := "InfiniBand, no PIX/PXB to any GPU (all SYS): link layer decides"
	bfReason := "BlueField-3 DPU (MT41692) with every GPU relation SYS"
	gpu(0x8, 0)
	gpu(0x9, 0)
	gpu(0x18, 1)
	gpu(0x19, 1)
	nic(0x0, 0, "ibp3s0", cx7, ib, rateNDR, topology.RoleCompute, ibReason)
	nic(0x2, 0, "ibP2p3s0", cx7, ib, rateNDR, topology.RoleCompute, ibReason)
	nic(0x10, 1, "ibP16p3s0", cx7, ib, rateNDR, topology.RoleCompute, ibReason)
	nic(0x12, 1, "ibP18p3s0", cx7, ib, rateNDR, topology.RoleCompute, ibReason)
	nic(0x6, 0, "roceP6p3s0", bf3, eth, rateEth200, topology.RoleManagement, bfReason)
	nic(0x16, 1, "roceP22p3s0", bf3, eth, rateEth200, topology.RoleManagement, bfReason)
	l.routeVia = l.plainNIC(l.hostBridge(0x5, 0, 0).rootPort(0, 1), "")
	l.finish(vfPrefixMLX)
	return l
}

func l40sOnprem() *layout {
	l := &layout{}
	for g := 0; g < 8; g++ {
		numa := g / 4
		l.gpu(l.freshRootPort(0, 0x10+0x10*(g%4)+0x80*numa, numa), gpuL40S)
	}
	mg := l.card(l.freshRootPort(0, 0x08, 0), cardSpec{names: []string{mlx(0)}, model: cx6, linkLayer: eth, rate: rateEth100,
		totalVFs: 8, role: topology.RoleManagement, reason: "carries the default route"})
	l.routeVia = mg[0]
	for i := 1; i <= 4; i++ {
		numa := (i - 1) / 2
		l.card(l.freshRootPort(0, 0x50+0x10*((i-1)%2)+0x80*numa, numa), cardSpec{names: []string{mlx(i)}, model: cx7, linkLayer: ib, rate: rateNDR,
			totalVFs: 8, role: topology.RoleCompute, reason: "InfiniBand, NODE to local GPUs, no PIX/PXB: link layer decides"})
	}
	l.finish(vfPrefixMLX)
	return l
}

func minimal() *layout {
	l := &layout{}
	dn := l.freshRootPort(0, 0x10, 0).sw(2)
	l.gpu(dn[0], gpuH100)
	l.card(dn[1], cardSpec{names: []string{mlx(0)}, model: cx7, linkLayer: ib, rate: rateNDR,
		role: topology.RoleCompute, reason: "PIX to GPU 0 (shares its PCIe switch)"})
	l.finish(vfPrefixMLX)
	return l
}

// pxbPair puts a GPU and a card behind two different switches under one
// upper switch: the OCI layout where nvidia-smi prints PXB.
func (l *layout) pxbPair(rp *pciNode, model gpuModel, c cardSpec, cardSlots int) {
	a := rp.sw(2)
	l.gpu(a[0].sw(1)[0], model)
	c0 := a[1].sw(cardSlots)
	if cardSlots == 1 {
		l.card(c0[0], c)
		return
	}
	for i, n := range c.names {
		one := c
		one.names = []string{n}
		l.card(c0[i], one)
	}
}

func a100OCI() *layout {
	l := &layout{}
	mgmt := func(name string, numa, bus int) {
		l.card(l.freshRootPort(0, bus, numa), cardSpec{names: []string{name}, model: cx6, linkLayer: eth, rate: rateEth100,
			totalVFs: 8, role: topology.RoleManagement, reason: fmt.Sprintf("NUMA %d has no GPU (NUMA gate)", numa)})
	}
	mgmt(mlx(0), 0, 0x01)
	names := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14, 15, 16, 17}
	for g := 0; g < 8; g++ {
		if g == 6 {
			mgmt(mlx(13), 6, 0xa0)
		}
		numa := 2 + 2*(g/4)
		rp := l.freshRootPort(0, 0x40+0x10*(g%4)+0x80*(g/4), numa)
		l.pxbPair(rp, gpuA100, cardSpec{names: []string{mlx(names[2*g]), mlx(names[2*g+1])}, model: cx6, linkLayer: eth, rate: rateEth100,
			totalVFs: 8, role: topology.RoleCompute, reason: fmt.Sprintf("PXB to GPU %d", g)}, 2)
		rp.switchesAt(pcieGen4)
	}
	l.routeVia = l.plainNIC(l.freshRootPort(0, 0x20, 0), "")
	l.finish(vfPrefixMLX)
	return l
}

func h100OCI() *layout {
	l := &layout{}
	storage := func(name string, numa, bus int) {
		l.card(l.freshRootPort(0, bus, numa), cardSpec{names: []string{name}, model: cx7, linkLayer: eth, rate: rateEth100,
			totalVFs: 8, role: topology.RoleStorage, reason: fmt.Sprintf("Ethernet, NODE to the GPUs of NUMA %d, no PIX/PXB", numa)})
	}
	cardNames := [][2]int{{0, 1}, {3, 4}, {5, 6}, {7, 8}, {9, 10}, {12, 13}, {14, 15}, {16, 17}}
	for g := 0; g < 8; g++ {
		if g == 1 {
			storage(mlx(2), 0, 0x70)
		}
		if g == 5 {
			storage(mlx(11), 1, 0xf0)
		}
		rp := l.freshRootPort(0, 0x10+0x18*(g%4)+0x80*(g/4), g/4)
		l.pxbPair(rp, gpuH100, cardSpec{names: []string{mlx(cardNames[g][0]), mlx(cardNames[g][1])}, model: cx7, linkLayer: eth, rate: rateEth200,
			totalVFs: 8, role: topology.RoleCompute, reason: fmt.Sprintf("PXB to GPU %d", g)}, 1)
	}
	l.routeVia = l.plainNIC(l.freshRootPort(0, 0x08, 0), "")
	l.finish(vfPrefixMLX)
	return l
}

func l40sOCI() *layout {
	l := &layout{}
	for g := 0; g < 4; g++ {
		numa := g / 2
		l.gpu(l.freshRootPort(0, 0x20+0x10*(g%2)+0x80*numa, numa), gpuL40S)
	}
	for i := 0; i < 6; i++ {
		numa := i / 3
		l.card(l.freshRootPort(0, 0x40+0x10*(i%3)+0x80*numa, numa), cardSpec{names: []string{mlx(i)}, model: cx7, linkLayer: eth, rate: rateEth200,
			totalVFs: 8, role: topology.RoleStorage, reason: fmt.Sprintf("Ethernet, NODE to the GPUs of NUMA %d and SYS to the rest, no PIX/PXB", numa)})
	}
	l.routeVia = l.plainNIC(l.freshRootPort(0, 0x08, 0), "")
	l.finish(vfPrefixMLX)
	return l
}

// scale builds gpus GPUs, each sharing a switch with perGPU dual-port IB
// PFs that have vfs VFs each: the xl/xxl benchmarks' node.
func scale(gpus, perGPU, vfs int) *layout {
	l := &layout{}
	n := 0
	for g := 0; g < gpus; g++ {
		dn := l.freshRootPort(0, 0x08+0x1c*g, g*2/gpus).sw(1 + perGPU)
		l.gpu(dn[0], gpuH100)
		for c := 0; c < perGPU; c++ {
			l.card(dn[1+c], cardSpec{names: []string{mlx(n)}, model: cx7, linkLayer: ib, ports: 2, rate: rateNDR,
				totalVFs: 16, numVFs: vfs, role: topology.RoleCompute, reason: fmt.Sprintf("PIX to GPU %d (shares its PCIe switch)", g)})
			n++
		}
	}
	l.finish(vfPrefixMLX)
	return l
}

// addForeignRDMA adds irdma0 on its own host bridge of NUMA 0.
func (l *layout) addForeignRDMA() {
	n := l.card(l.freshRootPort(0, 0xfe, 0), cardSpec{names: []string{"irdma0"}, model: e810, linkLayer: eth, rate: "100 Gb/sec (4X EDR)",
		role: topology.RoleUnknown, reason: "not an mlx5 device (vendor 0x8086, driver ice/irdma): never monitored"})
	n[0].hca.netdevs = hcaNetdevs(n[0])
}
