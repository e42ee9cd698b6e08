package sim

import (
	"path/filepath"

	"github.com/nichealth/nichealthd/topology"
)

// SysRoot is H/sys.
func (h *Host) SysRoot() string { return filepath.Join(h.Root, "sys") }

// ProcRoot is H/proc.
func (h *Host) ProcRoot() string { return filepath.Join(h.Root, "proc") }

// DevRoot is H/dev.
func (h *Host) DevRoot() string { return filepath.Join(h.Root, "dev") }

// MetadataPath is H/var/lib/nvsentinel/gpu_metadata.json (it may not exist).
func (h *Host) MetadataPath() string { return filepath.Join(h.Root, MetadataRel) }

// Paths points the daemon's topology discovery at this host.
func (h *Host) Paths() topology.Paths {
	return topology.Paths{
		SysfsRoot:       h.SysRoot(),
		ProcfsRoot:      h.ProcRoot(),
		DevRoot:         h.DevRoot(),
		ClassInfiniBand: filepath.Join(h.SysRoot(), "class", "infiniband"),
		ClassNet:        filepath.Join(h.SysRoot(), "class", "net"),
	}
}

// Shape is the shape name the host was built from.
func (h *Host) Shape() string { return h.m.Shape }

// Devices returns every RDMA device (PFs in name order, then VFs), including
// removed ones (Removed is set).
func (h *Host) Devices() []DeviceInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]DeviceInfo, len(h.m.Devices))
	for i, d := range h.m.Devices {
		d.NetDevs = append([]string(nil), d.NetDevs...)
		out[i] = d
	}
	return out
}

// Device returns one device by its current name.
func (h *Host) Device(name string) (DeviceInfo, bool) {
	for _, d := range h.Devices() {
		if d.Name == name {
			return d, true
		}
	}
	return DeviceInfo{}, false
}

// GPUs returns the GPUs in metadata gpus[] order.
func (h *Host) GPUs() []GPUInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]GPUInfo(nil), h.m.GPUs...)
}

// NetDevs returns every netdev the host was built with, lo included.
func (h *Host) NetDevs() []NetDevInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]NetDevInfo(nil), h.m.NetDevs...)
}

// DefaultRoute is the netdev carrying the default route, "" for none.
func (h *Host) DefaultRoute() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.m.DefaultRoute
}

// DefaultRoute6 is the netdev carrying the IPv6 default route, "" for none.
func (h *Host) DefaultRoute6() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.m.DefaultRoute6
}

// ExpectedRoles counts the expected roles of the PFs (VFs are not
// classified): what the seed's tables in section 4.2.4 list per platform.
func (h *Host) ExpectedRoles() map[topology.Role]int {
	out := map[topology.Role]int{}
	for _, d := range h.Devices() {
		if !d.IsVF {
			out[d.ExpectedRole]++
		}
	}
	return out
}
