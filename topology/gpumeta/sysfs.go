package gpumeta

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

// nvidiaVendor is NVIDIA's PCI vendor id.
const nvidiaVendor = "0x10de"

// hostBridgeDir matches the directory sysfs creates for a PCI root bus
// (one host bridge): devices/pci0000:00, devices/pci0016:00,
// devices/pci10000:00 (Intel VMD domains have five hex digits).
var hostBridgeDir = regexp.MustCompile(`^pci[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}$`)

// pciAddr matches a PCI function address as sysfs names it.
var pciAddr = regexp.MustCompile(`^([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$`)

// pcieChain is where a PCI function sits in the PCIe tree: the host bridge
// directory it hangs off and the chain of directories from that host bridge
// down to the function itself (every element but the last is a bridge).
type pcieChain struct {
	host  string
	chain []string
	numa  int
	ok    bool
}

// FromSysfs derives the matrix nvidia-smi topo -m would print, from the
// PCIe tree in sysfs alone (DESIGN.md difference 7: PIX/PXB/PHB/NODE/SYS
// are properties of that tree, so no collector is needed).
//
// GPUs are the PCI functions under <sysfs>/bus/pci/devices with vendor
// 0x10de and a display (0x0300xx) or 3D (0x0302xx) class; NVSwitches
// (bridge class) and audio functions are not GPUs. They are numbered in PCI
// address order, as nvidia-smi numbers them. Their NUMA node is the
// function's numa_node (-1 when absent or unreadable).
//
// The NICs are the given devices that are not VFs and have a resolvable
// PCI function (virtual RDMA devices such as rxe have none and are left
// out). Each row is keyed
// by the device name. A GPU whose place in the tree cannot be resolved is
// still listed; every relation to it is SYS.
//
// Outcomes: (matrix, nil); or (nil, err) when bus/pci/devices cannot be
// listed or holds no NVIDIA GPU, saying so.
func FromSysfs(paths topology.Paths, nics []*topology.Device) (*Matrix, error) {
	return FromSysfsWith(paths, nics, nil)
}

// FromSysfsWith is FromSysfs reading attribute files (numa_node, vendor,
// class) with read, os.ReadFile when nil; the daemon passes its
// deadline-bounded reader so a hung attribute cannot hold start-up.
func FromSysfsWith(paths topology.Paths, nics []*topology.Device, read topology.ReadFunc) (*Matrix, error) {
	if read == nil {
		read = os.ReadFile
	}
	paths = paths.WithDefaults()
	devicesRoot := filepath.Join(paths.SysfsRoot, "devices")
	if r, err := filepath.EvalSymlinks(devicesRoot); err == nil {
		devicesRoot = r
	}
	busDir := filepath.Join(paths.SysfsRoot, "bus", "pci", "devices")
	ents, err := os.ReadDir(busDir)
	if err != nil {
		return nil, fmt.Errorf("derive GPU topology from sysfs: list %s: %w", busDir, err)
	}
	type gpu struct {
		addr  string
		key   [4]uint64
		place pcieChain
		name  string
	}
	var gpus []gpu
	for _, e := range ents {
		name := e.Name()
		key, ok := addrKey(name)
		if !ok {
			continue
		}
		link := filepath.Join(busDir, name)
		if !isGPU(link, read) {
			continue
		}
		g := gpu{addr: strings.ToLower(name), key: key, place: locate(devicesRoot, link, read)}
		if b, err := read(filepath.Join(link, "device")); err == nil {
			g.name = ModelOf(string(sysfs.TrimValue(b)))
		}
		gpus = append(gpus, g)
	}
	if len(gpus) == 0 {
		return nil, fmt.Errorf("derive GPU topology from sysfs: no NVIDIA GPU (PCI vendor %s, class 0x0300xx or 0x0302xx) under %s", nvidiaVendor, busDir)
	}
	sort.Slice(gpus, func(i, j int) bool {
		a, b := gpus[i].key, gpus[j].key
		for k := range a {
			if a[k] != b[k] {
				return a[k] < b[k]
			}
		}
		return false
	})
	m := &Matrix{NICs: map[string][]string{}, Source: SourceSysfs}
	for i, g := range gpus {
		m.GPUs = append(m.GPUs, GPU{ID: i, PCIAddress: g.addr, NUMANode: g.place.numa, Name: g.name})
	}
	for _, d := range nics {
		// VFs are never classified (seed 8), and the collector leaves
		// them out too.
		if d == nil || d.Name == "" || d.IsVF {
			continue
		}
		var place pcieChain
		if d.PCIDir != "" {
			place = locate(devicesRoot, d.PCIDir, read)
		} else if d.Dir != "" {
			place = locate(devicesRoot, filepath.Join(d.Dir, "device"), read)
		}
		if !place.ok {
			continue
		}
		if d.PCIDir != "" {
			// Discovery already read numa_node; it wins over a re-read so
			// the matrix agrees with what the NUMA gate sees.
			place.numa = d.NUMANode
		}
		row := make([]string, len(gpus))
		for i, g := range gpus {
			row[i] = relation(place, g.place)
		}
		m.NICs[d.Name] = row
	}
	return m, nil
}

// relation is the nvidia-smi topology level between two PCI functions.
//
// nvidia-smi's legend defines the levels by what a transfer traverses:
// PIX "at most a single PCIe bridge", PXB "multiple PCIe bridges (without
// traversing the PCIe Host Bridge)", PHB "a PCIe Host Bridge", NODE "the
// interconnect between PCIe Host Bridges within a NUMA node", SYS "the SMP
// interconnect between NUMA nodes". A PCIe switch appears in sysfs as an
// upstream port directory with one downstream port directory per slot, yet
// nvidia-smi counts the whole switch as one bridge: a GPU and a NIC on two
// downstream ports of the same switch are PIX.
//
// So we count like this. C is the deepest directory both paths share. If C
// is the host bridge directory itself (pciDDDD:BB), the path goes through
// the root complex: PHB. Otherwise C is a bridge (a switch upstream port,
// or a root port), and for each function we count the bridge directories
// strictly between C and it. When neither side has more than one (each
// function sits directly below C, or below one downstream port of C's
// switch) the path crosses a single switch: PIX. Anything deeper crosses a
// further switch level: PXB. Functions under different host bridges are
// NODE when both NUMA nodes are known and equal, SYS otherwise (an unknown
// NUMA node cannot prove locality, and under-claiming locality is the safe
// direction for the NUMA gate of seed 4.1).
//
// Functions in different PCI domains (segments) are SYS even on one NUMA
// node. Each segment is a root complex of its own, and that is how Grace
// attaches GPUs over NVLink-C2C: on GB200 every GPU↔NIC cell nvidia-smi
// prints is SYS although the NICs share the GPUs' NUMA nodes (seed 4.2.4,
// GB200 field validation). Calling them NODE would turn the BlueField DPUs
// of that platform from Management into Storage.
func relation(a, b pcieChain) string {
	if !a.ok || !b.ok {
		return LevelSYS
	}
	if a.host != b.host {
		if domainOf(a.host) != domainOf(b.host) {
			return LevelSYS
		}
		if a.numa >= 0 && a.numa == b.numa {
			return LevelNODE
		}
		return LevelSYS
	}
	k := 0
	for k < len(a.chain) && k < len(b.chain) && a.chain[k] == b.chain[k] {
		k++
	}
	if k == 0 {
		return LevelPHB
	}
	if k == len(a.chain) && k == len(b.chain) {
		return LevelSelf
	}
	between := func(c []string) int { return max(0, len(c)-k-1) }
	if between(a.chain) <= 1 && between(b.chain) <= 1 {
		return LevelPIX
	}
	return LevelPXB
}

// locate resolves a PCI function's sysfs path (a bus/pci/devices link, a
// class/infiniband/<dev>/device link, or an already resolved directory)
// and splits it into host bridge and chain. ok is false when the path does
// not resolve to a directory below <sysfs>/devices/pciDDDD:BB/.
func locate(devicesRoot, p string, read topology.ReadFunc) pcieChain {
	c := pcieChain{numa: -1}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return c
	}
	if b, err := read(filepath.Join(real, "numa_node")); err == nil {
		if v, err := sysfs.ParseInt(b); err == nil && v >= 0 {
			c.numa = v
		}
	}
	rel, err := filepath.Rel(devicesRoot, real)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return c
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	if len(parts) < 2 || !hostBridgeDir.MatchString(parts[0]) {
		return c
	}
	c.host = strings.ToLower(parts[0])
	for _, p := range parts[1:] {
		c.chain = append(c.chain, strings.ToLower(p))
	}
	c.ok = true
	return c
}

// isGPU reports whether the PCI function at dir is an NVIDIA display or 3D
// controller. Unreadable attributes mean "not a GPU".
func isGPU(dir string, read topology.ReadFunc) bool {
	v, err := read(filepath.Join(dir, "vendor"))
	if err != nil || !strings.EqualFold(string(sysfs.TrimValue(v)), nvidiaVendor) {
		return false
	}
	c, err := read(filepath.Join(dir, "class"))
	if err != nil {
		return false
	}
	class, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(string(sysfs.TrimValue(c))), "0x"), 16, 32)
	if err != nil {
		return false
	}
	sub := class >> 8 // base class and subclass, programming interface dropped
	return sub == 0x0300 || sub == 0x0302
}

// domainOf returns the PCI domain of a host bridge directory name
// ("pci0016:00" -> "0016").
func domainOf(host string) string {
	d, _, _ := strings.Cut(strings.TrimPrefix(host, "pci"), ":")
	return d
}

// addrKey splits a PCI address into numbers for PCI-order sorting (a
// string sort would put domain 10000 before 0001).
func addrKey(s string) ([4]uint64, bool) {
	m := pciAddr.FindStringSubmatch(s)
	if m == nil {
		return [4]uint64{}, false
	}
	var k [4]uint64
	for i := 0; i < 4; i++ {
		v, err := strconv.ParseUint(m[i+1], 16, 32)
		if err != nil {
			return [4]uint64{}, false
		}
		k[i] = v
	}
	return k, true
}
