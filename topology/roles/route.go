package roles

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/nichealth/nichealthd/topology"
)

// rtfUp is RTF_UP from <linux/route.h>: the route is usable. rtfReject is
// RTF_REJECT: an unreachable route, which is how the kernel writes IPv6's
// "no default route" entry on lo.
const (
	rtfUp     = 0x1
	rtfReject = 0x200
)

// maxStack bounds how deep bond/VLAN/macvlan stacking is followed; real
// stacks are two or three levels (VLAN on bond on ports), and a loop in a
// broken tree must not recurse forever.
const maxStack = 8

// RouteDevice is an RDMA device that carries a default route, and the
// interface the route names (a bond or VLAN above the device's own netdev,
// or that netdev itself).
type RouteDevice struct {
	Device string // class/infiniband name, e.g. mlx5_bond_0
	Iface  string // the route's interface, e.g. bond0
}

// ParseRouteTable returns the interfaces of every usable IPv4 default
// route in /proc/net/route content (destination and mask 00000000, flag
// RTF_UP), in file order without duplicates. Lines that do not parse are
// skipped: a malformed line must not hide the others.
func ParseRouteTable(b []byte) []string {
	return routeIfaces(b, func(f []string) string {
		// Iface Destination Gateway Flags RefCnt Use Metric Mask ...
		if len(f) < 8 || f[0] == "Iface" || f[1] != "00000000" || f[7] != "00000000" {
			return ""
		}
		if flags, err := strconv.ParseUint(f[3], 16, 32); err != nil || flags&rtfUp == 0 {
			return ""
		}
		return f[0]
	})
}

// ParseIPv6RouteTable returns the interfaces of every usable IPv6 default
// route in /proc/net/ipv6_route content (destination ::/0, flag RTF_UP, not
// RTF_REJECT, not on lo), in file order without duplicates. Lines that do
// not parse are skipped.
func ParseIPv6RouteTable(b []byte) []string {
	const zero128 = "00000000000000000000000000000000"
	return routeIfaces(b, func(f []string) string {
		// dest dest_plen src src_plen next_hop metric refcnt use flags iface
		if len(f) < 10 || f[0] != zero128 || f[1] != "00" || f[9] == "lo" {
			return ""
		}
		if flags, err := strconv.ParseUint(f[8], 16, 32); err != nil || flags&rtfUp == 0 || flags&rtfReject != 0 {
			return ""
		}
		return f[9]
	})
}

// routeIfaces applies defaultIface to the fields of each line of a route
// table and returns the interfaces it names ("" = not a usable default
// route), in file order without duplicates.
func routeIfaces(b []byte, defaultIface func(fields []string) string) []string {
	var out []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if iface := defaultIface(strings.Fields(sc.Text())); iface != "" && !seen[iface] {
			seen[iface] = true
			out = append(out, iface)
		}
	}
	return out
}

// DefaultRouteDevices finds the RDMA devices that carry the host's default
// route (seed 4.2.2 step 1). It reads <procfs>/net/route, and maps each
// default-route interface to RDMA devices through
// <class/net>/<if>/device/infiniband/*; for a bond, VLAN or other stacked
// interface it follows <class/net>/<if>/lower_* down to the ports
// (DESIGN.md field facts: the default route may sit on a VLAN on a bond).
// Every RDMA device found is returned, mlx5 or not; classification ignores
// the ones it does not monitor.
//
// <procfs>/net/ipv6_route is read too, beyond the seed, which names only
// the IPv4 table: on an IPv6-only or dual-stack host whose management
// network has no IPv4 default, the management NIC would otherwise be
// classified as Storage and a control-plane outage would page as a fatal
// fabric fault.
//
//   - (nil, nil): neither route file exists (the seed's "silently
//     skipped"), no default route, or a default route on an interface with
//     no RDMA device below it;
//   - (nil, err): a route file exists but cannot be read;
//   - (devices, nil): otherwise, sorted by device name.
func DefaultRouteDevices(paths topology.Paths) ([]RouteDevice, error) {
	paths = paths.WithDefaults()
	ifaces, err := defaultRouteIfaces(paths)
	if err != nil {
		return nil, err
	}
	var out []RouteDevice
	seen := map[string]bool{}
	for _, iface := range ifaces {
		for _, dev := range rdmaBelow(paths.ClassNet, iface, map[string]bool{}, 0) {
			if !seen[dev] {
				seen[dev] = true
				out = append(out, RouteDevice{Device: dev, Iface: iface})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Device < out[j].Device })
	return out, nil
}

// DefaultRouteNetdevs returns the interfaces of every default route
// (IPv4 and IPv6) and every interface stacked below them (bond and VLAN
// lowers), sorted: a function whose netdev is among them carries the host's
// networking even when it has no RDMA device (mlx5_ib not loaded on it),
// which DefaultRouteDevices, keyed by RDMA device, cannot say.
func DefaultRouteNetdevs(paths topology.Paths) ([]string, error) {
	paths = paths.WithDefaults()
	ifaces, err := defaultRouteIfaces(paths)
	if err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	for _, iface := range ifaces {
		out = lowersOf(paths.ClassNet, iface, seen, out, 0)
	}
	sort.Strings(out)
	return out, nil
}

// maxRouteTable bounds how much of a routing table is read. A GPU node's
// tables are a few kilobytes; 16 MiB is about 130,000 IPv4 routes (a full
// Internet table is 1M routes, over 100 MiB, re-read every minute by the
// inventory scan). Over it the default route is said unknown rather than
// the daemon reading and holding the whole table.
const maxRouteTable = 16 << 20

// defaultRouteIfaces returns the interfaces of the usable IPv4 and IPv6
// default routes, IPv4 first, each table in file order. A table file that
// does not exist is skipped silently (seed behaviour).
func defaultRouteIfaces(paths topology.Paths) ([]string, error) {
	var ifaces []string
	for _, table := range []struct {
		file  string
		parse func([]byte) []string
	}{{"route", ParseRouteTable}, {"ipv6_route", ParseIPv6RouteTable}} {
		routeFile := filepath.Join(paths.ProcfsRoot, "net", table.file)
		b, err := readRouteTable(routeFile)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		ifaces = append(ifaces, table.parse(b)...)
	}
	return ifaces, nil
}

// readRouteTable reads a routing table file, at most maxRouteTable bytes.
func readRouteTable(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRouteTable+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > maxRouteTable {
		return nil, fmt.Errorf("read %s: larger than %d MiB; the default route is not known (a host with a full routing table in this namespace)", path, maxRouteTable>>20)
	}
	return b, nil
}

func lowersOf(classNet, iface string, seen map[string]bool, out []string, depth int) []string {
	if depth > maxStack || seen[iface] || iface == "" || strings.ContainsAny(iface, "/\x00") || iface == "." || iface == ".." {
		return out
	}
	seen[iface] = true
	out = append(out, iface)
	ents, err := os.ReadDir(filepath.Join(classNet, iface))
	if err != nil {
		return out
	}
	for _, e := range ents {
		if lower, ok := strings.CutPrefix(e.Name(), "lower_"); ok {
			out = lowersOf(classNet, lower, seen, out, depth+1)
		}
	}
	return out
}

// rdmaBelow returns the RDMA devices of iface and of every interface
// stacked below it (lowersOf's walk).
func rdmaBelow(classNet, iface string, visited map[string]bool, depth int) []string {
	var out []string
	for _, nd := range lowersOf(classNet, iface, visited, nil, depth) {
		if ents, err := os.ReadDir(filepath.Join(classNet, nd, "device", "infiniband")); err == nil {
			for _, e := range ents {
				out = append(out, e.Name())
			}
		}
	}
	return out
}
