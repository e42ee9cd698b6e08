package observe

import (
	"fmt"

	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/gpumeta"
	"github.com/nichealth/nichealthd/topology/roles"
)

// ClassifyOptions say where classification looks.
type ClassifyOptions struct {
	Paths          topology.Paths
	Filter         topology.Filter
	TopologySource string
	MetadataPath   string
	// Unclassified: when the roles cannot be classified (no GPU
	// topology), every Mellanox PF gets an unknown role (and is
	// monitored) instead of failing; Classification.Unclassified says
	// why.
	Unclassified bool
	// LoadMetadata reads the metadata file (nil: gpumeta.Load, no
	// deadline: for one-shot tools). The daemon's observer passes one
	// with the read deadline.
	LoadMetadata gpumeta.LoadFunc
}

// Classification is how Classify decided.
type Classification struct {
	// Matrix is the GPU↔NIC matrix the roles came from; nil when
	// nicInclusionRegexOverride pinned them or there is no Mellanox PF.
	Matrix *gpumeta.Matrix
	// Pinned: nicInclusionRegexOverride pinned the roles.
	Pinned bool
	// Notes are disagreements between topology sources.
	Notes []string
	// RouteErr is why the default route could not be read (management
	// NICs are then recognised by NUMA and DPU type only).
	RouteErr error
	// Unclassified says why every PF has an unknown role ("" when
	// classified).
	Unclassified string
}

// Classify gives every Mellanox PF of devs its role and the reason: the
// one classification of the product, which the daemon, the offline check
// and `nichealthctl topology show` all call. Outcomes:
//   - nicInclusionRegexOverride set: the operator hand-pinned the list;
//     the NUMA gate and the topology classification are skipped (seed
//     12.1), RoCE NICs are Storage and IB NICs Compute;
//   - no Mellanox PF (limited PFs aside): only why the others are not
//     monitored;
//   - otherwise the GPU↔NIC matrix (gpu_metadata.json or the PCIe tree in
//     sysfs), the default route, the NUMA gate, PIX/PXB, the link layer
//     and the BlueField rules decide (topology/roles); when that is
//     impossible the error says what is missing (DESIGN.md difference
//     7), unless opts.Unclassified.
//
// read is how sysfs attributes are read (nil: os.ReadFile).
func Classify(devs []*topology.Device, opts ClassifyOptions, read topology.ReadFunc) (Classification, error) {
	var c Classification
	if opts.Filter.Overridden() {
		c.Pinned = true
		for _, d := range devs {
			switch {
			case d.Mellanox && d.LimitedPF:
				d.Role, d.RoleReason = topology.RoleUnknown, roles.LimitedPFReason
			case d.Mellanox && !d.IsVF:
				d.Role = roleByLinkLayer(d)
				d.RoleReason = string(d.Role) + ": pinned by nicInclusionRegexOverride"
			}
		}
		return c, nil
	}
	var nics []*topology.Device
	for _, d := range devs {
		if d.Mellanox && !d.IsVF && !d.LimitedPF {
			nics = append(nics, d)
		}
	}
	if len(nics) == 0 {
		return c, roles.Classify(devs, nil, nil) // only says why the others are not monitored
	}
	mx, notes, err := gpumeta.SelectWith(opts.TopologySource, opts.MetadataPath, opts.Paths, nics, read, opts.LoadMetadata)
	c.Notes = notes
	if err == nil {
		c.Matrix = mx
		dr, derr := roles.DefaultRouteDevices(opts.Paths)
		c.RouteErr = derr
		err = roles.Classify(devs, mx, dr)
	}
	if err != nil && opts.Unclassified {
		c.Unclassified = classifyUnknown(devs, err)
		return c, nil
	}
	return c, err
}

func roleByLinkLayer(d *topology.Device) topology.Role {
	if d.LinkLayer() == topology.LinkLayerEthernet {
		return topology.RoleStorage
	}
	return topology.RoleCompute
}

// classifyUnknown gives every Mellanox PF an unknown role (monitored),
// limited PFs aside.
func classifyUnknown(devs []*topology.Device, why error) string {
	for _, d := range devs {
		if d.Mellanox && !d.IsVF && !d.LimitedPF {
			d.Role, d.RoleReason = topology.RoleUnknown, "not classified: no GPU topology"
		}
	}
	return fmt.Sprintf("cannot classify NIC roles, so every Mellanox PF is checked (management NICs included) "+
		"and rates are not compared between ports: %v", why)
}
