package topology

import (
	"path/filepath"
)

// PCIHop is one PCI function on a NIC's path to its root port.
type PCIHop struct {
	Address string // domain:bus:device.function, e.g. 0000:17:00.0
	Dir     string // absolute, resolved path of its sysfs directory
	// RootPort: the hop is the bridge directly below the host bridge
	// (pciDDDD:BB). A function that sits on the root bus itself (an
	// integrated endpoint, common in VMs) is not a port and never is.
	RootPort bool
}

// PCIPath lists the PCI functions from the NIC function (first) up to its
// root port (last): the switch downstream and upstream ports and bridges in
// between, in order. Linux nests a device's sysfs directory inside its
// parent bridge's (devices/pci0000:16/0000:16:02.0/0000:17:00.0/…), so
// the path is the chain of PCI-address directories above the resolved
// device directory, and finding it costs no I/O when dev.PCIDir is known.
// When it is not, the function is looked up as
// <sysfsRoot>/bus/pci/devices/<address>. Nil when neither locates it.
func PCIPath(dev *Device, sysfsRoot string) []PCIHop {
	if dev == nil {
		return nil
	}
	dir := dev.PCIDir
	if dir == "" {
		if dev.PCIAddress == "" || sysfsRoot == "" {
			return nil
		}
		d, err := filepath.EvalSymlinks(filepath.Join(sysfsRoot, "bus", "pci", "devices", dev.PCIAddress))
		if err != nil {
			return nil
		}
		dir = d
	}
	var out []PCIHop
	for IsPCIAddress(filepath.Base(dir)) {
		parent := filepath.Dir(dir)
		out = append(out, PCIHop{Address: filepath.Base(dir), Dir: dir})
		if isHostBridge(filepath.Base(parent)) && len(out) > 1 {
			out[len(out)-1].RootPort = true
		}
		dir = parent
	}
	return out
}

// IsPCIAddress reports whether s is a PCI function name as the kernel
// writes it (lower-case hex): "0000:17:00.0" (domain
// and bus in hex, device and function), domains above ffff included.
func IsPCIAddress(s string) bool {
	// dddd:bb:dd.f with a domain of at least four hex digits.
	n := len(s)
	if n < 12 || s[n-2] != '.' || s[n-5] != ':' || s[n-8] != ':' {
		return false
	}
	return isHex(s[:n-8]) && isHex(s[n-7:n-5]) && isHex(s[n-4:n-2]) && s[n-1] >= '0' && s[n-1] <= '7'
}

// isHostBridge matches a host bridge directory: "pci0000:16".
func isHostBridge(s string) bool {
	if len(s) < 10 || s[:3] != "pci" || s[len(s)-3] != ':' {
		return false
	}
	return isHex(s[3:len(s)-3]) && isHex(s[len(s)-2:])
}

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
