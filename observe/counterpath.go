package observe

import (
	"path/filepath"
	"strings"

	"github.com/nichealth/nichealthd/topology"
)

// The counter table says what a row reads with one path grammar:
//   - relative to the port's directory (ports/<n>), e.g.
//     "counters/symbol_error": a port counter, on every port;
//   - NetClassPrefix + InterfacePlaceholder + "/...": a file of the RoCE
//     port's netdev under the configured sysClassNetPath;
//   - EthtoolPrefix + "<statistic>": one of the netdev's driver
//     statistics (ETHTOOL_GSTATS), not a file.
const (
	NetClassPrefix       = "/sys/class/net/"
	InterfacePlaceholder = "{interface}"
	EthtoolPrefix        = "ethtool:"
)

// CounterPath is one row's path in that grammar.
type CounterPath string

// Netdev reports whether the row reads a file of the port's netdev
// (class/net/<iface>/...) rather than one under ports/<n>.
func (p CounterPath) Netdev() bool {
	// Validated netdev paths are absolute; the cheap first test keeps the
	// per-reading cost of port counters (relative paths) near zero.
	return strings.HasPrefix(string(p), "/") && strings.Contains(string(p), InterfacePlaceholder)
}

// Ethtool reports whether the row is a driver statistic.
func (p CounterPath) Ethtool() bool { return strings.HasPrefix(string(p), EthtoolPrefix) }

// Stat is a driver statistic's name ("" for a file).
func (p CounterPath) Stat() string {
	if s, ok := strings.CutPrefix(string(p), EthtoolPrefix); ok {
		return s
	}
	return ""
}

// AppliesTo reports whether the row is read on a port of the given link
// layer. Netdev files and driver statistics apply to RoCE (Ethernet)
// ports only: an IPoIB interface is often taken administratively down and
// up while its IB port stays ACTIVE, and each such toggle counts a carrier
// change that says nothing about the link (DESIGN.md, field facts).
func (p CounterPath) AppliesTo(linkLayer string) bool {
	return (!p.Netdev() && !p.Ethtool()) || linkLayer == topology.LinkLayerEthernet
}

// File resolves the row to the absolute file to read:
//   - a port counter: portDir joined with the path;
//   - a netdev counter: the path with NetClassPrefix replaced by
//     netClassDir and InterfacePlaceholder by iface;
//   - a netdev counter on a port without a netdev (iface == ""): "" —
//     there is nothing to read;
//   - a driver statistic: "" — it is not a file.
func (p CounterPath) File(portDir, netClassDir, iface string) string {
	if p.Ethtool() {
		return ""
	}
	if !p.Netdev() {
		return filepath.Join(portDir, string(p))
	}
	if iface == "" {
		return ""
	}
	rel := strings.TrimPrefix(string(p), NetClassPrefix)
	rel = strings.ReplaceAll(rel, InterfacePlaceholder, iface)
	return filepath.Join(netClassDir, rel)
}
