package topology

// LinkLayer values as sysfs prints them in ports/<n>/link_layer.
const (
	LinkLayerInfiniBand = "InfiniBand"
	LinkLayerEthernet   = "Ethernet"
)

// Role is what a NIC is for on a GPU node (seed section 4.2.3).
type Role string

const (
	RoleUnknown    Role = ""
	RoleCompute    Role = "Compute"
	RoleStorage    Role = "Storage"
	RoleManagement Role = "Management"
)

// Port is one port of an RDMA device as discovered. The live state fields
// are the raw sysfs strings ("4: ACTIVE", "5: LinkUp") from the last read.
type Port struct {
	Num       int
	Dir       string // absolute path of class/infiniband/<dev>/ports/<n>
	LinkLayer string
	State     string
	PhysState string
	Rate      string
	LID       string
	SMLID     string
	// GUID is the port GUID (the interface ID of gids/0) as ibnetdiscover
	// prints it, "0x0002c90300293e1f"; "" when gids/0 is unreadable.
	GUID string
}

// Device is one RDMA device (class/infiniband/<name>) with what discovery
// learned about it. Fields that could not be read are left empty (or -1 for
// NUMANode) and never stop discovery of the rest.
type Device struct {
	Name       string
	Dir        string // absolute path of class/infiniband/<name> (not resolved)
	Mellanox   bool   // mlx5 by name, driver or PCI vendor 0x15b3
	Driver     string // basename of device/driver, e.g. mlx5_core
	Vendor     string // PCI vendor id, e.g. 0x15b3
	HCAType    string
	FWVer      string
	BoardID    string
	NodeGUID   string // as sysfs prints it: "b83f:d203:00a0:b010"
	PCIAddress string // domain:bus:device.function, e.g. 0000:3b:00.0
	Card       string // domain:bus:device, e.g. 0000:3b:00 (a physical card)
	PCIDir     string // absolute, resolved path of the PCI device directory
	NUMANode   int    // -1 when unknown
	IsVF       bool   // device/physfn exists (seed 8.7 method 1)
	// Serial is the board serial number from the PCI function's VPD ("" when
	// the VPD has none or cannot be read: it is readable by root only
	// unless packaging's udev rule opens it to the daemon's group).
	Serial string
	// LimitedPF: the VPD marks the function as a limited PF that NVIDIA
	// Fabric Manager owns (sysfs.VPD.LimitedPF); its counters are refused
	// by firmware, so it is never read after discovery.
	LimitedPF bool
	// VPDErr says why the VPD could not be read ("" when read or absent).
	VPDErr     string
	NetDevs    []string
	Ports      []Port
	Role       Role
	RoleReason string
}

// NetDev returns the first netdev of the device, or "".
func (d *Device) NetDev() string {
	if len(d.NetDevs) == 0 {
		return ""
	}
	return d.NetDevs[0]
}

// Port returns the port with number n, or nil.
func (d *Device) Port(n int) *Port {
	for i := range d.Ports {
		if d.Ports[i].Num == n {
			return &d.Ports[i]
		}
	}
	return nil
}

// Paths locates the host's pseudo-filesystems. A test or the demo points
// them at a simulated host directory (DESIGN.md section 8).
type Paths struct {
	SysfsRoot       string // default /sys
	ProcfsRoot      string // default /proc
	DevRoot         string // default /dev
	ClassInfiniBand string // default <SysfsRoot>/class/infiniband
	ClassNet        string // default <SysfsRoot>/class/net
}
