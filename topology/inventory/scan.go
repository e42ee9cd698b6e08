package inventory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/gpumeta"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

// Vendor is the PCI vendor ID of Mellanox (NVIDIA networking).
const Vendor = "0x15b3"

// CoreDriver is the driver a ConnectX or BlueField function is bound to
// when the RDMA stack can use it.
const CoreDriver = "mlx5_core"

// State says what the RDMA stack made of a function.
type State string

const (
	// Healthy: bound to mlx5_core with an RDMA device (infiniband/).
	Healthy State = "ok"
	// Unbound: no driver; the probe failed at boot, or someone unbound it.
	Unbound State = "unbound"
	// OtherDriver: bound to something else (vfio-pci, a vendor driver).
	OtherDriver State = "other-driver"
	// NoRDMA: bound to mlx5_core but without an RDMA device: mlx5_ib is
	// not loaded or failed on this function.
	NoRDMA State = "no-rdma"
)

// Function is one NVIDIA/Mellanox network PCI function.
type Function struct {
	Address  string // 0000:3b:00.0
	Card     string // 0000:3b:00
	Dir      string // resolved sysfs directory
	Class    uint32 // PCI class code, e.g. 0x020700
	DeviceID string // PCI device ID, e.g. 0x1021
	Driver   string // basename of driver/, "" when unbound
	IsVF     bool   // physfn exists
	RDMA     []string
	NetDevs  []string
	NUMANode int
	Serial   string
	// LimitedPF and VPDErr: see topology.VPDInfo.
	LimitedPF bool
	VPDErr    string

	// Set by Attach from discovery: the function's monitored RDMA device,
	// if any, and what that device says of itself.
	Device    string
	Monitored bool
	NodeGUID  string
	FWVer     string
	BoardID   string
	HCAType   string
	// Set by Attach for a function the daemon leaves alone (a VF, a
	// limited PF, a management NIC, one excluded by the NIC filter), with
	// the reason.
	LeftAlone string
	// Role, RoleReason and GPUs: the device's, or for a function without
	// an RDMA device the role it would have had (Classify).
	Role       topology.Role
	RoleReason string
	GPUs       []gpumeta.GPU
}

// State is what the RDMA stack made of the function.
func (f *Function) State() State {
	switch {
	case f.Driver == "":
		return Unbound
	case f.Driver != CoreDriver:
		return OtherDriver
	case len(f.RDMA) == 0:
		return NoRDMA
	}
	return Healthy
}

// LinkLayer is what the PCI class says the function speaks: network
// controller subclass 07 and the serial-bus InfiniBand class are
// InfiniBand, any other network controller Ethernet. A ConnectX's class
// follows its port type (mlxconfig LINK_TYPE), so this is what its ports
// would report.
func (f *Function) LinkLayer() string {
	if f.Class>>8 == 0x0207 || f.Class>>8 == 0x0c06 {
		return topology.LinkLayerInfiniBand
	}
	return topology.LinkLayerEthernet
}

// IsNetworkClass reports whether a PCI class code is a network controller
// (0x02xxxx) or an InfiniBand serial-bus controller (0x0c06xx).
func IsNetworkClass(class uint32) bool {
	return class>>16 == 0x02 || class>>8 == 0x0c06
}

// ParseClass reads a PCI class file ("0x020700").
func ParseClass(b []byte) (uint32, error) {
	s := strings.TrimPrefix(strings.ToLower(string(sysfs.TrimValue(b))), "0x")
	v, err := strconv.ParseUint(s, 16, 32)
	if err != nil || v > 0xffffff {
		return 0, fmt.Errorf("PCI class %q is not a 24-bit hex number", sysfs.TrimValue(b))
	}
	return uint32(v), nil
}

// Scan lists the NVIDIA/Mellanox network functions under
// <sysfsRoot>/bus/pci/devices, reading every attribute with read
// (os.ReadFile when nil; the daemon passes its deadline- and size-bounded
// reader). Every other function costs one read (vendor); a VF, once
// known as one, costs nothing more.
//
// Outcomes: (functions sorted by address, problems, nil); or an error when
// bus/pci/devices cannot be listed, which must not be taken as evidence
// that a function is gone. A function whose vendor or class cannot be
// read is a problem and is left out.
func Scan(sysfsRoot string, read topology.ReadFunc) ([]Function, []topology.Problem, error) {
	if read == nil {
		read = os.ReadFile
	}
	dir := filepath.Join(sysfsRoot, "bus", "pci", "devices")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("list %s: %w", dir, err)
	}
	out := []Function{} // never nil: Classify indexes it by positions it collected
	var probs []topology.Problem
	problem := func(addr, file string, err error) {
		probs = append(probs, topology.Problem{Device: addr, File: file, Err: err})
	}
	for _, e := range ents {
		addr := e.Name()
		if !topology.IsPCIAddress(addr) {
			continue
		}
		link := filepath.Join(dir, addr)
		v, err := read(filepath.Join(link, "vendor"))
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				problem(addr, filepath.Join(link, "vendor"), err)
			}
			continue
		}
		if !strings.EqualFold(string(sysfs.TrimValue(v)), Vendor) {
			continue
		}
		f, ok := function(addr, link, read, problem)
		if ok {
			out = append(out, f)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out, probs, nil
}

// function describes one Mellanox function; ok is false when it is not a
// network function or vanished while being read.
func function(addr, link string, read topology.ReadFunc, problem func(string, string, error)) (Function, bool) {
	f := Function{Address: addr, Card: topology.CardOf(addr), NUMANode: -1}
	b, err := read(filepath.Join(link, "class"))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			problem(addr, filepath.Join(link, "class"), err)
		}
		return f, false
	}
	if f.Class, err = ParseClass(b); err != nil {
		problem(addr, filepath.Join(link, "class"), err)
		return f, false
	}
	if !IsNetworkClass(f.Class) {
		return f, false
	}
	if f.Dir, err = filepath.EvalSymlinks(link); err != nil {
		return f, false
	}
	if _, err := os.Lstat(filepath.Join(f.Dir, "physfn")); err == nil {
		f.IsVF = true // seed 8: never judged, so nothing more is read
		return f, true
	}
	if b, err := read(filepath.Join(f.Dir, "device")); err == nil {
		f.DeviceID = strings.ToLower(string(sysfs.TrimValue(b)))
	}
	if t, err := os.Readlink(filepath.Join(f.Dir, "driver")); err == nil {
		f.Driver = filepath.Base(t)
	}
	f.RDMA = names(filepath.Join(f.Dir, "infiniband"))
	f.NetDevs = names(filepath.Join(f.Dir, "net"))
	if b, err := read(filepath.Join(f.Dir, "numa_node")); err == nil {
		if n, err := sysfs.ParseInt(b); err == nil {
			f.NUMANode = n
		}
	}
	vpd := topology.ReadVPD(f.Dir, read)
	f.Serial, f.LimitedPF, f.VPDErr = vpd.Serial, vpd.LimitedPF, vpd.Err
	if vpd.Problem != nil {
		problem(addr, filepath.Join(f.Dir, "vpd"), vpd.Problem)
	}
	return f, true
}

// names lists a directory's entries ("" when it does not exist).
func names(dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(ents))
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}
