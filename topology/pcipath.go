package topology

import (
	"path/filepath"
	"strings"
)

// PCIHop is one PCI function on the path from a NIC function up to its
// root port.
type PCIHop struct {
	Address  string // domain:bus:device.function, e.g. 0000:3a:00.0
	Dir      string // absolute, resolved sysfs directory of the function
	RootPort bool   // the hop directly below the host bridge (pciDDDD:BB)
}

// PCIPath lists the PCI functions from dev's own function (first) up to and
// including its root port (last): every bridge and switch port above it.
// sysfs nests a function's directory inside its upstream bridge's, so the
// path is the chain of parent directories named like a PCI address; it
// ends at the host bridge directory (pciDDDD:BB) or at sysfsRoot. Nothing
// is read: the resolved PCIDir says it all. A device without PCIDir has no
// path.
func PCIPath(dev *Device, sysfsRoot string) []PCIHop {
	if dev == nil || dev.PCIDir == "" {
		return nil
	}
	root := filepath.Clean(sysfsRoot)
	var out []PCIHop
	for dir := filepath.Clean(dev.PCIDir); ; dir = filepath.Dir(dir) {
		if dir == root || !strings.HasPrefix(dir, root+"/") {
			break
		}
		base := filepath.Base(dir)
		if !IsPCIAddress(base) {
			break
		}
		out = append(out, PCIHop{Address: base, Dir: dir})
	}
	if n := len(out); n > 0 && isHostBridge(filepath.Base(filepath.Dir(out[n-1].Dir))) {
		out[n-1].RootPort = true
	}
	return out
}

// IsPCIAddress reports whether s is a full PCI function address
// (DDDD:BB:DD.F, lower-case hex as sysfs writes it).
func IsPCIAddress(s string) bool {
	if len(s) != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if i == 4 || i == 7 || i == 10 {
			continue
		}
		if !isHex(s[i]) {
			return false
		}
	}
	return s[11] <= '7'
}

// isHostBridge matches the host bridge directory pciDDDD:BB.
func isHostBridge(s string) bool {
	if len(s) != 10 || !strings.HasPrefix(s, "pci") || s[7] != ':' {
		return false
	}
	for _, c := range []byte(s[3:7] + s[8:]) {
		if !isHex(c) {
			return false
		}
	}
	return true
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }
