package topology

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/nichealth/nichealthd/topology/sysfs"
)

// WithDefaults fills empty paths with the real host's locations, deriving
// the class directories from SysfsRoot.
func (p Paths) WithDefaults() Paths {
	if p.SysfsRoot == "" {
		p.SysfsRoot = "/sys"
	}
	if p.ProcfsRoot == "" {
		p.ProcfsRoot = "/proc"
	}
	if p.DevRoot == "" {
		p.DevRoot = "/dev"
	}
	if p.ClassInfiniBand == "" {
		p.ClassInfiniBand = filepath.Join(p.SysfsRoot, "class", "infiniband")
	}
	if p.ClassNet == "" {
		p.ClassNet = filepath.Join(p.SysfsRoot, "class", "net")
	}
	return p
}

// Filter decides which device names are looked at at all. Exclusion runs
// before any file of a device is read (a hung or hostile device that is
// excluded costs nothing); a non-empty IncludeOverride replaces all
// automatic filtering (seed section 12.1).
type Filter struct {
	Exclude         []*regexp.Regexp
	IncludeOverride []*regexp.Regexp
}

// CompileList compiles NVSentinel's comma-separated regex list.
func CompileList(list string) ([]*regexp.Regexp, error) {
	var out []*regexp.Regexp
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("regex %q: %w", p, err)
		}
		out = append(out, re)
	}
	return out, nil
}

// Overridden reports whether the inclusion override is in force.
func (f Filter) Overridden() bool { return len(f.IncludeOverride) > 0 }

// Wanted reports whether a device name passes the filter.
func (f Filter) Wanted(name string) bool {
	if len(f.IncludeOverride) > 0 {
		for _, re := range f.IncludeOverride {
			if re.MatchString(name) {
				return true
			}
		}
		return false
	}
	for _, re := range f.Exclude {
		if re.MatchString(name) {
			return false
		}
	}
	return true
}

// ListNames returns the entries of class/infiniband that pass the filter,
// sorted. An error means the enumeration is incomplete and must not be
// taken as evidence that devices disappeared.
func ListNames(classDir string, f Filter) ([]string, error) {
	ents, err := os.ReadDir(classDir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", classDir, err)
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		if f.Wanted(e.Name()) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// Problem is a file that could not be read or parsed during discovery.
// Discovery carries on; the caller decides how loudly to report it.
type Problem struct {
	Device string
	File   string
	Err    error
}

func (p Problem) Error() string { return fmt.Sprintf("%s: %s: %v", p.Device, p.File, p.Err) }

// ReadFunc reads one small attribute file. The daemon passes a deadline-
// and size-bounded read (reader.Reader.ReadFile), so that an attribute
// whose read hangs in the kernel costs one deadline and leaves only its
// field unknown instead of holding discovery (and READY=1) until it answers.
type ReadFunc func(path string) ([]byte, error)

// Discover describes every wanted device, reading attributes with
// os.ReadFile (offline tools). See DiscoverWith.
func Discover(p Paths, f Filter) ([]*Device, []Problem, error) {
	return DiscoverWith(p, f, nil)
}

// DiscoverWith describes every wanted device, reading every attribute file
// with read (os.ReadFile when nil). It fails only when class/infiniband
// itself cannot be listed; per-file problems are returned beside the
// devices and leave only the affected fields empty.
func DiscoverWith(p Paths, f Filter, read ReadFunc) ([]*Device, []Problem, error) {
	p = p.WithDefaults()
	names, err := ListNames(p.ClassInfiniBand, f)
	if err != nil {
		return nil, nil, err
	}
	devs := make([]*Device, 0, len(names))
	var probs []Problem
	for _, n := range names {
		d, pr := DiscoverDevice(p, n, read)
		probs = append(probs, pr...)
		if d != nil {
			devs = append(devs, d)
		}
	}
	return devs, probs, nil
}

// DiscoverDevice describes one device, reading attributes with read
// (os.ReadFile when nil). It returns nil only when the device directory
// itself is gone (it vanished between listing and reading).
func DiscoverDevice(p Paths, name string, read ReadFunc) (*Device, []Problem) {
	p = p.WithDefaults()
	if read == nil {
		read = os.ReadFile
	}
	dir := filepath.Join(p.ClassInfiniBand, name)
	var probs []Problem
	problem := func(file string, err error) {
		probs = append(probs, Problem{Device: name, File: file, Err: err})
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, []Problem{{Device: name, File: dir, Err: err}}
	}
	d := &Device{Name: name, Dir: dir, NUMANode: -1}
	readStr := func(rel string, dst *string) {
		b, err := read(filepath.Join(dir, rel))
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				problem(filepath.Join(dir, rel), err)
			}
			return
		}
		*dst = string(sysfs.TrimValue(b))
	}
	readStr("hca_type", &d.HCAType)
	readStr("fw_ver", &d.FWVer)
	readStr("board_id", &d.BoardID)
	readStr("node_guid", &d.NodeGUID)

	devLink := filepath.Join(dir, "device")
	if pciDir, err := filepath.EvalSymlinks(devLink); err == nil {
		d.PCIDir = pciDir
		d.PCIAddress = pciSlot(pciDir, read)
		d.Card = CardOf(d.PCIAddress)
		if b, err := read(filepath.Join(pciDir, "numa_node")); err == nil {
			if v, err := sysfs.ParseInt(b); err == nil {
				d.NUMANode = v
			} else {
				problem(filepath.Join(pciDir, "numa_node"), err)
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			problem(filepath.Join(pciDir, "numa_node"), err)
		}
		if b, err := read(filepath.Join(pciDir, "vendor")); err == nil {
			d.Vendor = string(sysfs.TrimValue(b))
		} else if !errors.Is(err, fs.ErrNotExist) {
			problem(filepath.Join(pciDir, "vendor"), err)
		}
		if t, err := os.Readlink(filepath.Join(pciDir, "driver")); err == nil {
			d.Driver = filepath.Base(t)
		}
		// Seed 8.7 method 1: only physfn says "VF". A VF passed into a VM has
		// neither physfn nor sriov_totalvfs, so the absence of
		// sriov_totalvfs proves nothing (DESIGN.md field facts).
		if _, err := os.Lstat(filepath.Join(pciDir, "physfn")); err == nil {
			d.IsVF = true
		}
		if !d.IsVF {
			d.readVPD(pciDir, read, problem)
		}
		if ents, err := os.ReadDir(filepath.Join(pciDir, "net")); err == nil {
			for _, e := range ents {
				d.NetDevs = append(d.NetDevs, e.Name())
			}
		}
	} else {
		problem(devLink, err)
	}
	d.Mellanox = strings.HasPrefix(name, "mlx5_") || d.Driver == "mlx5_core" || d.Vendor == "0x15b3"

	portsDir := filepath.Join(dir, "ports")
	ents, err := os.ReadDir(portsDir)
	if err != nil {
		problem(portsDir, err)
	}
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil || n <= 0 {
			continue
		}
		pd := filepath.Join(portsDir, e.Name())
		port := Port{Num: n, Dir: pd}
		for _, f := range []struct {
			rel string
			dst *string
		}{
			{"link_layer", &port.LinkLayer}, {"state", &port.State}, {"phys_state", &port.PhysState},
			{"rate", &port.Rate}, {"lid", &port.LID}, {"sm_lid", &port.SMLID},
		} {
			b, err := read(filepath.Join(pd, f.rel))
			if err != nil {
				if !errors.Is(err, fs.ErrNotExist) {
					problem(filepath.Join(pd, f.rel), err)
				}
				continue
			}
			*f.dst = string(sysfs.TrimValue(b))
		}
		// The port GUID joins this port to the same port in a fabric
		// dump (ibnetdiscover); a missing or odd gids/0 only leaves it out.
		if b, err := read(filepath.Join(pd, "gids", "0")); err == nil {
			if g, err := sysfs.ParseGIDInterfaceID(b); err == nil {
				port.GUID = sysfs.FormatGUID(g)
			}
		}
		d.Ports = append(d.Ports, port)
	}
	sort.Slice(d.Ports, func(i, j int) bool { return d.Ports[i].Num < d.Ports[j].Num })
	if len(d.NetDevs) > 1 {
		d.NetDevs = orderNetDevs(p, d.NetDevs, read)
	}
	return d, probs
}

// pciSlot takes the address from uevent's PCI_SLOT_NAME, falling back to
// the directory name (they agree on real hosts).
func pciSlot(pciDir string, read ReadFunc) string {
	if b, err := read(filepath.Join(pciDir, "uevent")); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "PCI_SLOT_NAME="); ok {
				return strings.TrimSpace(v)
			}
		}
	}
	return filepath.Base(pciDir)
}

// CardOf maps a PCI function address (0000:3b:00.1) to its physical card
// (0000:3b:00). The domain is kept: on multi-domain hosts (0016:03:00.0)
// two cards can share bus and device numbers.
func CardOf(addr string) string {
	if i := strings.LastIndexByte(addr, '.'); i > 0 {
		return addr[:i]
	}
	return addr
}

// orderNetDevs puts the netdev of port 1 first using dev_port, which is what
// the kernel uses to map a multi-port device's netdevs to its ports.
func orderNetDevs(p Paths, names []string, read ReadFunc) []string {
	type nd struct {
		name string
		port int
	}
	var out []nd
	for _, n := range names {
		dp := 1 << 30
		if b, err := read(filepath.Join(p.ClassNet, n, "dev_port")); err == nil {
			if v, err := sysfs.ParseInt(b); err == nil {
				dp = v
			}
		}
		out = append(out, nd{n, dp})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].port < out[j].port })
	res := make([]string, len(out))
	for i, o := range out {
		res[i] = o.name
	}
	return res
}

// NetDevFor returns the netdev that carries port n of d ("" if none): the
// (n-1)-th netdev by dev_port order, or the only one.
func (d *Device) NetDevFor(n int) string {
	if len(d.NetDevs) == 0 {
		return ""
	}
	if len(d.NetDevs) == 1 {
		return d.NetDevs[0]
	}
	if n-1 < len(d.NetDevs) && n >= 1 {
		return d.NetDevs[n-1]
	}
	return d.NetDevs[0]
}

// Monitored reports whether checks look at d at all: a Mellanox PF whose
// role is not Management. VFs are skipped unconditionally (seed 8), and so
// are limited PFs, whose counters the firmware refuses.
func (d *Device) Monitored() bool {
	return d.Mellanox && !d.IsVF && !d.LimitedPF && d.Role != RoleManagement
}

// readVPD reads the function's serial number and limited-PF marker.
func (d *Device) readVPD(pciDir string, read ReadFunc, problem func(string, error)) {
	v := ReadVPD(pciDir, read)
	d.Serial, d.LimitedPF, d.VPDErr = v.Serial, v.LimitedPF, v.Err
	if v.Problem != nil {
		problem(filepath.Join(pciDir, "vpd"), v.Problem)
	}
}

// VPDInfo is what ReadVPD learned of a function's VPD.
type VPDInfo struct {
	Serial    string
	LimitedPF bool
	// Err says why the VPD is unreadable or damaged ("" when read or
	// absent); Problem is set when that is worth a warning.
	Err     string
	Problem error
}

// ReadVPD reads and parses <pciDir>/vpd with read. The file is root-only
// on a stock kernel (0600): a permission error is recorded in Err but is
// no Problem, since the hardened unit cannot read it unless packaging's
// udev rule grants its group read access (the daemon says so once). A
// function without VPD is not an error at all.
func ReadVPD(pciDir string, read ReadFunc) VPDInfo {
	if read == nil {
		read = os.ReadFile
	}
	path := filepath.Join(pciDir, "vpd")
	// Asked first, so that a file this process may not read is not read
	// at all: the reader would park it after three EACCES and keep
	// re-probing it, for nothing but a permission it will never have.
	if err := unix.Access(path, unix.R_OK); errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
		return VPDInfo{Err: "permission denied"}
	}
	b, err := read(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return VPDInfo{}
	case errors.Is(err, fs.ErrPermission):
		return VPDInfo{Err: "permission denied"}
	case err != nil:
		return VPDInfo{Err: err.Error(), Problem: err}
	}
	v, perr := sysfs.ParseVPD(b)
	out := VPDInfo{Serial: v.Serial(), LimitedPF: v.LimitedPF()}
	if perr != nil {
		// What came before the damage is still the card's.
		out.Err = perr.Error()
	}
	return out
}

// LinkLayer returns the link layer of the device's first port.
func (d *Device) LinkLayer() string {
	for _, p := range d.Ports {
		if p.LinkLayer != "" {
			return p.LinkLayer
		}
	}
	return ""
}

// LogProblems writes each problem once at warn level.
func LogProblems(log *slog.Logger, probs []Problem) {
	for _, pr := range probs {
		log.Warn("cannot read device attribute; fields that depend on it stay unknown",
			"device", pr.Device, "file", pr.File, "err", pr.Err)
	}
}
