package roles

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/nichealth/nichealthd/topology"
)

// rtfUp is RTF_UP from <linux/route.h>: the route is usable.
const rtfUp = 0x1

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
	var out []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		// Iface Destination Gateway Flags RefCnt Use Metric Mask ...
		if len(f) < 8 || f[0] == "Iface" {
			continue
		}
		if f[1] != "00000000" || f[7] != "00000000" {
			continue
		}
		flags, err := strconv.ParseUint(f[3], 16, 32)
		if err != nil || flags&rtfUp == 0 {
			continue
		}
		if !seen[f[0]] {
			seen[f[0]] = true
			out = append(out, f[0])
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
//   - (nil, nil): no route file (the seed's "silently skipped"), no default
//     route, or a default route on an interface with no RDMA device below it;
//   - (nil, err): the route file exists but cannot be read;
//   - (devices, nil): otherwise, sorted by device name.
func DefaultRouteDevices(paths topology.Paths) ([]RouteDevice, error) {
	paths = paths.WithDefaults()
	routeFile := filepath.Join(paths.ProcfsRoot, "net", "route")
	b, err := os.ReadFile(routeFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", routeFile, err)
	}
	var out []RouteDevice
	seen := map[string]bool{}
	for _, iface := range ParseRouteTable(b) {
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

// rdmaBelow returns the RDMA devices of iface and of every interface
// stacked below it.
func rdmaBelow(classNet, iface string, visited map[string]bool, depth int) []string {
	if depth > maxStack || visited[iface] || iface == "" || strings.ContainsAny(iface, "/\x00") || iface == "." || iface == ".." {
		return nil
	}
	visited[iface] = true
	dir := filepath.Join(classNet, iface)
	var out []string
	if ents, err := os.ReadDir(filepath.Join(dir, "device", "infiniband")); err == nil {
		for _, e := range ents {
			out = append(out, e.Name())
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return out
	}
	for _, e := range ents {
		if lower, ok := strings.CutPrefix(e.Name(), "lower_"); ok {
			out = append(out, rdmaBelow(classNet, lower, visited, depth+1)...)
		}
	}
	return out
}
