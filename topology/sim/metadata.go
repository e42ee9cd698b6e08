package sim

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// MetadataRel is where NVSentinel's metadata collector writes, under H.
const MetadataRel = "var/lib/nvsentinel/gpu_metadata.json"

// Metadata is gpu_metadata.json in the NVSentinel collector's schema
// (link-state seed section 12.2).
type Metadata struct {
	Version           string              `json:"version"`
	Timestamp         string              `json:"timestamp"`
	NodeName          string              `json:"node_name"`
	DriverVersion     string              `json:"driver_version"`
	CUDADriverVersion string              `json:"cuda_driver_version"`
	GPUs              []MetadataGPU       `json:"gpus"`
	NICTopology       map[string][]string `json:"nic_topology"`
}

// MetadataGPU is one gpus[] entry.
type MetadataGPU struct {
	GPUID        int    `json:"gpu_id"`
	UUID         string `json:"uuid"`
	PCIAddress   string `json:"pci_address"`
	SerialNumber string `json:"serial_number"`
	DeviceName   string `json:"device_name"`
	NUMANode     int    `json:"numa_node"`
}

// Metadata returns what the collector would publish for this host now:
// the GPUs and the nic_topology matrix of the PF ib devices under their
// current names.
func (h *Host) Metadata() Metadata {
	h.mu.Lock()
	defer h.mu.Unlock()
	md := Metadata{Version: "1.0", Timestamp: time.Now().UTC().Format(time.RFC3339), NodeName: h.m.Options.NodeName,
		DriverVersion: "550.90.07", CUDADriverVersion: "12.4",
		NICTopology: TopoMatrix(h.m.Devices, h.m.GPUs)}
	for _, g := range h.m.GPUs {
		md.GPUs = append(md.GPUs, MetadataGPU{GPUID: g.ID, UUID: g.UUID, PCIAddress: g.PCIAddress,
			SerialNumber: fmt.Sprintf("16520230%05d", g.ID+1), DeviceName: g.Name, NUMANode: g.NUMANode})
	}
	return md
}

// WriteMetadata (re)writes H/var/lib/nvsentinel/gpu_metadata.json from the
// current device names, as a collector rerun after a rename would.
func (h *Host) WriteMetadata() error {
	b, err := json.MarshalIndent(h.Metadata(), "", "  ")
	if err != nil {
		return fmt.Errorf("encode metadata: %w", err)
	}
	p := h.MetadataPath()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return writeAtomic(h.Root, p, append(b, '\n'))
}

// RemoveMetadata deletes the metadata file (a node without the collector).
func (h *Host) RemoveMetadata() error {
	if err := os.Remove(h.MetadataPath()); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("remove %s: %w", h.MetadataPath(), err)
	}
	return nil
}
