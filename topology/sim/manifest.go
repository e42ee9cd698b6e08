package sim

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nichealth/nichealthd/topology"
)

// ManifestName is the file under H that records what Build made.
const ManifestName = ".nichealth-sim.json"

// DeviceInfo is one RDMA device (PF or VF) of a built host, with the role
// the seed's classification must give it (section 4.2).
type DeviceInfo struct {
	Name         string        `json:"name"`       // ib device name, e.g. mlx5_0, ibP16p3s0
	PCIAddress   string        `json:"pciAddress"` // 0000:19:00.0
	Card         string        `json:"card"`       // 0000:19:00
	NUMANode     int           `json:"numaNode"`
	LinkLayer    string        `json:"linkLayer"` // topology.LinkLayer*
	Ports        int           `json:"ports"`     // ports are numbered 1..Ports
	IsVF         bool          `json:"isVF"`
	PhysFn       string        `json:"physFn,omitempty"` // PF PCI address of a VF
	NetDev       string        `json:"netDev"`           // netdev of port 1
	NetDevs      []string      `json:"netDevs"`          // netdev of each port, in port order
	HCAType      string        `json:"hcaType"`          // MT4129 ...
	Vendor       string        `json:"vendor"`           // PCI vendor, 0x15b3 for mlx5
	Driver       string        `json:"driver"`           // PCI driver, mlx5_core for mlx5
	FWVer        string        `json:"fwVer"`
	BoardID      string        `json:"boardID,omitempty"`
	Serial       string        `json:"serial,omitempty"` // VPD SN of a PF
	LimitedPF    bool          `json:"limitedPF,omitempty"`
	NodeGUID     string        `json:"nodeGUID"`
	PCIPath      string        `json:"pciPath"` // PCI function dir relative to H/sys
	ExpectedRole topology.Role `json:"expectedRole"`
	RoleReason   string        `json:"roleReason"`
	Removed      bool          `json:"removed,omitempty"` // RemoveDevice took it off the bus
	// Detached says how DetachFunction took its RDMA device away while its
	// PCI function stayed on the bus: unbound, no-rdma, driver:NAME.
	Detached string `json:"detached,omitempty"`
}

// GPUInfo is one GPU of a built host, in gpus[] (metadata) order.
type GPUInfo struct {
	ID         int    `json:"id"`
	PCIAddress string `json:"pciAddress"`
	NUMANode   int    `json:"numaNode"`
	Name       string `json:"name"`
	UUID       string `json:"uuid"`
	PCIPath    string `json:"pciPath"`       // relative to H/sys
	C2C        bool   `json:"c2c,omitempty"` // attached by NVLink-C2C (Grace): SYS to every NIC
}

// NetDevInfo is one netdev of a built host.
type NetDevInfo struct {
	Name   string `json:"name"`
	Device string `json:"device,omitempty"` // ib device it belongs to, "" for non-RDMA
	Port   int    `json:"port,omitempty"`
	Path   string `json:"path"` // netdev dir relative to H/sys
}

// BuildOptions changes how Build makes a shape.
type BuildOptions struct {
	NoMetadata bool   // leave out var/lib/nvsentinel/gpu_metadata.json
	NodeName   string // node_name in the metadata; default "sim-<shape>"
	BootID     string // default: a fresh random UUID
	// Bond enslaves the default-route netdev to bond0 and moves the default
	// route onto bond0 (DESIGN.md section 2: follow lower_* links).
	Bond bool
	// PrivateFiles gives every file its own inode. By default files with
	// equal content are hard links to one inode, which makes Build several
	// times faster; Host methods are unaffected (they replace files by
	// rename), but a test that writes into a tree file in place must set
	// PrivateFiles or it changes every file sharing that content.
	PrivateFiles bool
	// ForeignRDMA adds irdma0, an Intel E810 RDMA device (vendor 0x8086,
	// driver ice) on NUMA 0, that discovery must list but never monitor.
	ForeignRDMA bool
	// NoAER leaves out the PCIe AER counter files (aer_dev_*): a kernel
	// without AER statistics or AER disabled by firmware.
	NoAER bool `json:",omitempty"`
}

type manifest struct {
	Shape         string            `json:"shape"`
	Options       BuildOptions      `json:"options"`
	Devices       []DeviceInfo      `json:"devices"`
	GPUs          []GPUInfo         `json:"gpus"`
	NetDevs       []NetDevInfo      `json:"netDevs"`
	DefaultRoute  string            `json:"defaultRoute"`
	DefaultRoute6 string            `json:"defaultRoute6,omitempty"` // IPv6 default route's netdev
	Fifos         map[string]string `json:"fifos,omitempty"`         // path rel to H -> content it replaced
}

func readManifest(root string) (*manifest, error) {
	p := filepath.Join(root, ManifestName)
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("open simulated host: read %s: %w (build it first with nichealth-sim build --root %s)", p, err, root)
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("open simulated host: parse %s: %w (rebuild the tree)", p, err)
	}
	return &m, nil
}

func (h *Host) saveManifest() error {
	b, err := json.MarshalIndent(h.m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	return writeAtomic(h.Root, filepath.Join(h.Root, ManifestName), b)
}
