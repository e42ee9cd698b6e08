package gpumeta

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/nichealth/nichealthd/topology"
)

// Values of the topologySource configuration key.
const (
	TopologyAuto     = "auto"
	TopologyMetadata = "metadata"
	TopologySysfs    = "sysfs"
)

// howToProvide is appended to every "no topology" error so the operator
// reading one line on stderr knows the three ways out (DESIGN.md
// difference 7).
const howToProvide = "provide it by installing NVSentinel's metadata collector, or by running " +
	"`nichealthctl topology collect` on this node (writes the file from nvidia-smi), " +
	"or set topologySource = \"sysfs\" so the daemon derives it from the PCIe tree"

// Select returns the matrix for topologySource source:
//
//   - "metadata": the metadata file, or an error naming it and saying how to
//     provide it. There is no fallback (seed 4: hard dependency).
//   - "sysfs": the matrix derived from the PCIe tree, or an error.
//   - "auto" (and ""): the metadata file when it exists, cross-checked
//     against sysfs; a missing or unusable file falls back to sysfs. Only
//     when neither yields GPUs is it an error, which says what each source
//     lacked and how to provide one.
//
// notes are what the daemon should log once at start (warning level):
// every disagreement between metadata and sysfs in auto mode, a metadata
// file that was present but unusable, which source a fallback used. They
// never change the outcome.
func Select(source, metadataPath string, paths topology.Paths, nics []*topology.Device) (m *Matrix, notes []string, err error) {
	return SelectWith(source, metadataPath, paths, nics, nil, nil)
}

// LoadFunc reads and decodes a metadata file as Load does.
type LoadFunc func(path string) (*Matrix, error)

// SelectWith is Select reading sysfs attributes with read (see
// FromSysfsWith) and the metadata file with load (nil: Load). A daemon
// passes a load with a deadline (LoadWithin): the file may sit on a
// filesystem that hangs, and classification runs on the poll loop.
func SelectWith(source, metadataPath string, paths topology.Paths, nics []*topology.Device, read topology.ReadFunc, load LoadFunc) (m *Matrix, notes []string, err error) {
	if load == nil {
		load = Load
	}
	if metadataPath == "" {
		metadataPath = DefaultMetadataPath
	}
	switch source {
	case TopologyMetadata:
		m, err := load(metadataPath)
		if err != nil {
			return nil, nil, fmt.Errorf("topologySource = %q: %w; %s", source, err, howToProvide)
		}
		return m, nil, nil
	case TopologySysfs:
		m, err := FromSysfsWith(paths, nics, read)
		if err != nil {
			return nil, nil, fmt.Errorf("topologySource = %q: %w; the GPUs must be visible in sysfs, or set topologySource = \"metadata\" with a gpu_metadata.json", source, err)
		}
		return m, nil, nil
	case TopologyAuto, "":
	default:
		return nil, nil, fmt.Errorf("topologySource = %q is not one of \"auto\", \"metadata\", \"sysfs\"", source)
	}

	meta, metaErr := load(metadataPath)
	derived, sysErr := FromSysfsWith(paths, nics, read)
	switch {
	case metaErr == nil && sysErr == nil:
		fillNames(meta, derived)
		return meta, Compare(withoutVFs(meta, nics), derived), nil
	case metaErr == nil:
		return meta, []string{fmt.Sprintf("using %s; cannot cross-check it against sysfs: %v", meta.Source, sysErr)}, nil
	case sysErr == nil:
		if errors.Is(metaErr, fs.ErrNotExist) {
			return derived, []string{fmt.Sprintf("GPU topology derived from sysfs (%s does not exist)", metadataPath)}, nil
		}
		return derived, []string{fmt.Sprintf("ignoring unusable %v; GPU topology derived from sysfs instead", metaErr)}, nil
	}
	return nil, nil, fmt.Errorf("no GPU topology (topologySource = \"auto\"): metadata: %v; sysfs: %v; %s", metaErr, sysErr, howToProvide)
}

// withoutVFs hides the metadata rows of SR-IOV VFs from the cross-check:
// some collectors list them, the sysfs derivation never does (they are
// never classified), and a note per VF would drown the real disagreements.
func withoutVFs(m *Matrix, nics []*topology.Device) *Matrix {
	vf := map[string]bool{}
	for _, d := range nics {
		if d != nil && d.IsVF {
			vf[d.Name] = true
		}
	}
	if len(vf) == 0 {
		return m
	}
	c := *m
	c.NICs = make(map[string][]string, len(m.NICs))
	for n, row := range m.NICs {
		if !vf[n] {
			c.NICs[n] = row
		}
	}
	return &c
}

// fillNames gives each GPU of m that has no product name the one sysfs
// knows for the same PCI address: an older collector writes no
// device_name, and the expected NIC complement is keyed on the model.
func fillNames(m, derived *Matrix) {
	for i := range m.GPUs {
		if m.GPUs[i].Name != "" || m.GPUs[i].PCIAddress == "" {
			continue
		}
		for _, d := range derived.GPUs {
			if NormalizePCIAddress(d.PCIAddress) == NormalizePCIAddress(m.GPUs[i].PCIAddress) {
				m.GPUs[i].Name = d.Name
			}
		}
	}
}
