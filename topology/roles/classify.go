package roles

import (
	"fmt"
	"strings"

	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/gpumeta"
)

// blueFieldHCATypes are the DPUs seed 4.2.4 excludes in the all-SYS
// branch: BlueField-2, its variant, BlueField-3. Unknown types fall through
// to Storage, the monitored (safe) direction for future hardware.
var blueFieldHCATypes = map[string]string{
	"MT41682": "BlueField-2",
	"MT41686": "BlueField-2",
	"MT41692": "BlueField-3",
}

// LimitedPFReason is the role reason of a limited PF: why it is excluded
// before its first counter read.
const LimitedPFReason = "not monitored: limited PF owned by NVIDIA Fabric Manager (VPD SMDL=SW_MNG); " +
	"its firmware refuses the port counters (mlx5 logs an ACCESS_REG error at every read), so none is read"

// Classify sets Role and RoleReason on every device, in the order of seed
// 4.2.2:
//
//  1. carries the default route → Management;
//  2. NUMA node not among the GPUs' NUMA nodes, or unknown → Management;
//  3. PIX or PXB to any GPU → Compute;
//  4. InfiniBand link layer → Compute;
//  5. NODE or PHB to any GPU → Storage;
//  6. every relation SYS: a BlueField DPU → Management, anything else →
//     Storage.
//
// A NIC missing from the matrix is treated as SYS to every GPU and its
// reason says so. Only Mellanox PFs are classified: VFs (seed 8) and
// non-mlx5 RDMA devices (irdma, efa, ...) get RoleUnknown and a reason
// saying why they are not monitored; they never affect the others, even
// when they carry the default route.
//
// It returns an error, and changes nothing, when there is a Mellanox PF to
// classify but no matrix, or no GPU has a known NUMA node: the NUMA gate
// would then be blind, and monitoring every NIC risks a false REPLACE_VM
// on a management NIC (seed 4.1.2).
func Classify(devs []*topology.Device, m *gpumeta.Matrix, defaultRoute []RouteDevice) error {
	var pfs []*topology.Device
	for _, d := range devs {
		if d == nil {
			continue
		}
		if d.Mellanox && !d.IsVF && !d.LimitedPF {
			pfs = append(pfs, d)
		}
	}
	if len(pfs) == 0 {
		markUnmonitored(devs)
		return nil
	}
	if m == nil || len(m.GPUs) == 0 {
		return fmt.Errorf("cannot classify NICs: no GPU topology matrix; provide gpu_metadata.json or let the daemon derive it from sysfs (topologySource)")
	}
	gpuNUMA := m.NUMASet()
	if len(gpuNUMA) == 0 {
		return fmt.Errorf("cannot classify NICs: none of the %d GPUs in %s has a known NUMA node (all numa_node -1), "+
			"so the NUMA gate (seed 4.1) cannot tell management NICs from compute NICs and monitoring all of them risks a false REPLACE_VM; "+
			"fix the GPUs' numa_node in the metadata (nvidia-smi topo -m \"NUMA Affinity\"), "+
			"or list the NICs to monitor in nicInclusionRegexOverride", len(m.GPUs), sourceName(m))
	}
	markUnmonitored(devs)
	via := map[string]string{}
	for _, r := range defaultRoute {
		if _, ok := via[r.Device]; !ok {
			via[r.Device] = r.Iface
		}
	}
	for _, d := range pfs {
		d.Role, d.RoleReason = classifyOne(d, m, gpuNUMA, via)
	}
	return nil
}

func markUnmonitored(devs []*topology.Device) {
	for _, d := range devs {
		switch {
		case d == nil:
		case !d.Mellanox:
			d.Role = topology.RoleUnknown
			d.RoleReason = "not monitored: not an mlx5 device"
			if d.Driver != "" {
				d.RoleReason += " (driver " + d.Driver + ")"
			}
		case d.IsVF:
			d.Role = topology.RoleUnknown
			d.RoleReason = "not monitored: SR-IOV virtual function (device/physfn), expected DOWN until assigned"
		case d.LimitedPF:
			d.Role = topology.RoleUnknown
			d.RoleReason = LimitedPFReason
		}
	}
}

func classifyOne(d *topology.Device, m *gpumeta.Matrix, gpuNUMA map[int]bool, via map[string]string) (topology.Role, string) {
	// Step 1 runs first so a management NIC that shares a NUMA node or
	// even a PCIe switch with a GPU is still excluded (on-prem L40S, GB200).
	if iface, ok := via[d.Name]; ok {
		return topology.RoleManagement, fmt.Sprintf("Management: carries the default route (via %s)", iface)
	}
	if d.NUMANode < 0 {
		// Seed 4.1.2: under-monitoring beats a false REPLACE_VM.
		return topology.RoleManagement, "Management: NUMA node unknown (numa_node -1)"
	}
	if !gpuNUMA[d.NUMANode] {
		return topology.RoleManagement, fmt.Sprintf("Management: NUMA %d has no GPU", d.NUMANode)
	}
	row, inMatrix := m.NICs[d.Name]
	level := func(i int) string {
		if i < len(row) {
			return row[i]
		}
		return gpumeta.LevelSYS
	}
	first := func(levels ...string) (string, int) {
		for _, want := range levels {
			for i := range m.GPUs {
				if level(i) == want {
					return want, i
				}
			}
		}
		return "", -1
	}
	missing := ""
	if !inMatrix {
		missing = fmt.Sprintf(" (not in the GPU topology matrix from %s: treated as SYS to every GPU)", sourceName(m))
	}
	if lvl, i := first(gpumeta.LevelPIX, gpumeta.LevelPXB); i >= 0 {
		return topology.RoleCompute, fmt.Sprintf("Compute: %s to GPU%d", lvl, m.GPUs[i].ID)
	}
	ll := linkLayer(d)
	if ll == topology.LinkLayerInfiniBand {
		return topology.RoleCompute, "Compute: InfiniBand link layer, no PCIe switch shared with a GPU" + missing
	}
	if lvl, i := first(gpumeta.LevelPHB, gpumeta.LevelNODE); i >= 0 {
		return topology.RoleStorage, fmt.Sprintf("Storage: %s to GPU%d", lvl, m.GPUs[i].ID)
	}
	if model, ok := blueFieldHCATypes[strings.ToUpper(strings.TrimSpace(d.HCAType))]; ok {
		return topology.RoleManagement, fmt.Sprintf("Management: %s DPU (%s), SYS to every GPU", model, d.HCAType) + missing
	}
	if ll == "" {
		ll = "unknown link layer"
	}
	return topology.RoleStorage, fmt.Sprintf("Storage: %s, SYS to every GPU", ll) + missing
}

// linkLayer is the link layer of port 1, or of the first port that has
// one (some devices number their only port differently).
func linkLayer(d *topology.Device) string {
	if p := d.Port(1); p != nil && p.LinkLayer != "" {
		return p.LinkLayer
	}
	return d.LinkLayer()
}

func sourceName(m *gpumeta.Matrix) string {
	if m.Source != "" {
		return m.Source
	}
	return "the metadata"
}
