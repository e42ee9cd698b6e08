package sim

import (
	"strings"
)

// GPU↔NIC relation levels as nvidia-smi topo -m prints them (seed 4.2.2).
const (
	RelPIX  = "PIX"
	RelPXB  = "PXB"
	RelPHB  = "PHB"
	RelNODE = "NODE"
	RelSYS  = "SYS"
)

// Relation returns the topology level between two PCI endpoints given their
// device paths under sysfs (as in DeviceInfo.PCIPath: "devices/pci0000:15/
// 0000:15:01.0/.../0000:18:00.0") and their NUMA nodes:
//   - SYS: different NUMA nodes;
//   - NODE: same NUMA node, different host bridges;
//   - PHB: same host bridge, no bridge in common below it;
//   - PIX: the only PCIe switch between them is one switch (or one bridge);
//   - PXB: several switches between them, all below the host bridge.
//
// A switch is its upstream port plus its downstream ports; in the path, a
// root port sits right below the host bridge, switch upstream ports at even
// depths and their downstream ports at the odd depth below (the PCIe
// hierarchy alternates so).
func Relation(pathA string, numaA int, pathB string, numaB int) string {
	a := splitPCIPath(pathA)
	b := splitPCIPath(pathB)
	if numaA != numaB || len(a) < 2 || len(b) < 2 {
		return RelSYS
	}
	if a[0] != b[0] {
		return RelNODE
	}
	k := 0
	for k < len(a)-1 && k < len(b)-1 && a[k] == b[k] {
		k++
	}
	if k == 1 {
		return RelPHB
	}
	switches := map[string]struct{}{}
	add := func(p []string, i int) { switches[switchKey(p, i)] = struct{}{} }
	add(a, k-1)
	for i := k; i < len(a)-1; i++ {
		add(a, i)
	}
	for i := k; i < len(b)-1; i++ {
		add(b, i)
	}
	if len(switches) <= 1 {
		return RelPIX
	}
	return RelPXB
}

// switchKey names the switch (or root port) that bridge p[i] belongs to.
func switchKey(p []string, i int) string {
	switch {
	case i == 1:
		return strings.Join(p[:2], "/")
	case i%2 == 0:
		return strings.Join(p[:i+1], "/")
	default:
		return strings.Join(p[:i], "/")
	}
}

// splitPCIPath turns "devices/pci0000:00/a/b" into [pci0000:00 a b].
func splitPCIPath(p string) []string {
	p = strings.Trim(p, "/")
	p = strings.TrimPrefix(p, "devices/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// TopoMatrix computes nic_topology as the metadata collector would publish
// it: one row per PF ib device (VFs are left out, management NICs are in),
// one entry per GPU in gpus order. Removed devices are included: the
// collector ran when the node booted.
func TopoMatrix(devs []DeviceInfo, gpus []GPUInfo) map[string][]string {
	out := make(map[string][]string)
	for _, d := range devs {
		if d.IsVF {
			continue
		}
		row := make([]string, len(gpus))
		for i, g := range gpus {
			if g.C2C {
				// NVLink-C2C GPUs share no PCIe ancestor with any NIC (seed 4.2.4 GB200).
				row[i] = RelSYS
				continue
			}
			row[i] = Relation(d.PCIPath, d.NUMANode, g.PCIPath, g.NUMANode)
		}
		out[d.Name] = row
	}
	return out
}
