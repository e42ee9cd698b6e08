package inventory

import (
	"fmt"
	"slices"

	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/gpumeta"
	"github.com/nichealth/nichealthd/topology/roles"
)

// Attach joins the scan with discovery: a function with a discovered
// RDMA device takes that device's name, role and identity; one the daemon
// leaves alone says why (LeftAlone). A function without an RDMA device is
// left alone when the NIC filter rejects its PCI address or the device
// name it had (lastName; "" when unknown): nicExclusionRegex may name
// either, and under nicInclusionRegexOverride only what it names is
// judged.
func Attach(fns []Function, devs []*topology.Device, filter topology.Filter, lastName func(addr string) string) {
	byAddr := make(map[string]*topology.Device, len(devs))
	for _, d := range devs {
		if d.PCIAddress != "" && !d.IsVF {
			if _, dup := byAddr[d.PCIAddress]; !dup {
				byAddr[d.PCIAddress] = d
			}
		}
	}
	for i := range fns {
		f := &fns[i]
		switch d := byAddr[f.Address]; {
		case f.IsVF:
			f.LeftAlone = "SR-IOV virtual function (physfn): expected DOWN until assigned, not monitored"
		case f.LimitedPF || d != nil && d.LimitedPF:
			f.LeftAlone = roles.LimitedPFReason
		case d != nil:
			f.Device, f.Monitored, f.NodeGUID = d.Name, d.Monitored(), d.NodeGUID
			f.FWVer, f.BoardID, f.HCAType = d.FWVer, d.BoardID, d.HCAType
			f.Role, f.RoleReason = d.Role, d.RoleReason
			if f.Serial == "" {
				f.Serial = d.Serial
			}
			if !f.Monitored {
				f.LeftAlone = d.RoleReason
			}
		case len(f.RDMA) > 0:
			// An RDMA device discovery did not list: the filter rejected
			// it, or it appeared after discovery (the next rediscovery
			// sees it).
			for _, n := range f.RDMA {
				if !filter.Wanted(n) {
					f.LeftAlone = fmt.Sprintf("RDMA device %s excluded by the NIC filter (nicExclusionRegex, nicInclusionRegexOverride)", n)
				}
			}
		case !filter.Wanted(f.Address) && (lastName == nil || lastName(f.Address) == "" || !filter.Wanted(lastName(f.Address))):
			f.LeftAlone = "excluded by the NIC filter (nicExclusionRegex, nicInclusionRegexOverride), matched on its PCI address or last device name"
		}
	}
}

// blueField maps the PCI device IDs of BlueField DPUs to the hca_type
// their RDMA device would show, so that a DPU without one is classified as
// roles.Classify classifies a DPU that has one.
var blueField = map[string]string{"0xa2d2": "MT416842", "0xa2d6": "MT41686", "0xa2dc": "MT41692"}

// Classify gives every function without an RDMA device that the daemon
// does not leave alone the role it would have had, and the GPUs behind it:
// the classification of roles.Classify (seed 4.2.2), over a matrix row
// derived from the PCIe tree for its PCI address, aligned by GPU PCI
// address with mx (the daemon's matrix, whose GPU numbering and UUIDs the
// events use). routeNetdevs are the default route's interfaces and their
// lowers (roles.DefaultRouteNetdevs): a function whose netdev carries the
// host's route is management. With the inclusion override in force the
// role follows the link layer, as the daemon pins devices then.
//
// Functions with an RDMA device keep its role; a compute one gets the GPUs
// behind it from mx.
//
// A function whose role cannot be decided (no matrix, no GPU in sysfs)
// gets RoleUnknown and a reason, and is not judged: under-reporting beats
// a false REPLACE_VM on what may be a management NIC (seed 4.1.2).
func Classify(fns []Function, mx *gpumeta.Matrix, overridden bool, paths topology.Paths, routeNetdevs []string, read topology.ReadFunc) {
	var pseudos []*topology.Device
	var idx []int
	for i := range fns {
		f := &fns[i]
		if f.Device != "" && f.Role == topology.RoleCompute {
			// What the expected inventory remembers of it, for the day
			// it has no RDMA device to look it up by.
			f.GPUs = mx.Near(f.Device)
		}
		if f.Device != "" || f.LeftAlone != "" || f.IsVF {
			continue
		}
		if overridden {
			f.Role = topology.RoleCompute
			if f.LinkLayer() == topology.LinkLayerEthernet {
				f.Role = topology.RoleStorage
			}
			f.RoleReason = string(f.Role) + ": pinned by nicInclusionRegexOverride"
			continue
		}
		pseudos = append(pseudos, f.pseudo())
		idx = append(idx, i)
	}
	if len(pseudos) == 0 {
		return
	}
	if mx == nil || len(mx.GPUs) == 0 {
		for _, i := range idx {
			fns[i].Role, fns[i].RoleReason = topology.RoleUnknown, "role unknown: no GPU topology to classify it by"
		}
		return
	}
	derived, err := gpumeta.FromSysfsWith(paths, pseudos, read)
	merged := &gpumeta.Matrix{GPUs: mx.GPUs, NICs: map[string][]string{}, Source: mx.Source}
	if err == nil {
		for _, p := range pseudos {
			merged.NICs[p.Name] = alignRow(derived, p.Name, mx.GPUs)
		}
	}
	var routes []roles.RouteDevice
	for _, i := range idx {
		if slices.ContainsFunc(fns[i].NetDevs, func(n string) bool { return slices.Contains(routeNetdevs, n) }) {
			routes = append(routes, roles.RouteDevice{Device: fns[i].Address, Iface: firstShared(fns[i].NetDevs, routeNetdevs)})
		}
	}
	if err := roles.Classify(pseudos, merged, routes); err != nil {
		for _, i := range idx {
			fns[i].Role, fns[i].RoleReason = topology.RoleUnknown, "role unknown: "+err.Error()
		}
		return
	}
	for k, i := range idx {
		fns[i].Role, fns[i].RoleReason = pseudos[k].Role, pseudos[k].RoleReason
		if pseudos[k].Role == topology.RoleCompute {
			fns[i].GPUs = merged.Near(pseudos[k].Name)
		}
	}
}

// pseudo is the device the function would be: what classification reads
// of a device (NUMA node, place in the PCIe tree, link layer, hca_type).
func (f *Function) pseudo() *topology.Device {
	return &topology.Device{Name: f.Address, PCIAddress: f.Address, Card: f.Card, PCIDir: f.Dir, NUMANode: f.NUMANode,
		Mellanox: true, HCAType: blueField[f.DeviceID], Ports: []topology.Port{{Num: 1, LinkLayer: f.LinkLayer()}}}
}

// alignRow is row name of derived, re-indexed onto gpus by PCI address (a
// GPU derived did not find is SYS).
func alignRow(derived *gpumeta.Matrix, name string, gpus []gpumeta.GPU) []string {
	src := derived.NICs[name]
	out := make([]string, len(gpus))
	for i, g := range gpus {
		out[i] = gpumeta.LevelSYS
		for j, dg := range derived.GPUs {
			if j < len(src) && g.PCIAddress != "" && gpumeta.NormalizePCIAddress(dg.PCIAddress) == gpumeta.NormalizePCIAddress(g.PCIAddress) {
				out[i] = src[j]
			}
		}
	}
	return out
}

func firstShared(a, b []string) string {
	for _, x := range a {
		if slices.Contains(b, x) {
			return x
		}
	}
	return ""
}
