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
	"slices"
	"sort"
	"strings"
	"time"

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
// skipped: a malformed line must not hide the others. The kernel writes
// the table in ascending destination order (a walk of the main table's
// trie), so every default route comes before the first route to another
// destination, where reading stops.
func ParseRouteTable(b []byte) []string {
	out, _ := scanRoutes(bytes.NewReader(b), ipv4Table, nil)
	return out
}

// ParseIPv6RouteTable returns the interfaces of every usable IPv6 default
// route in /proc/net/ipv6_route content (destination ::/0, flag RTF_UP, not
// RTF_REJECT, not on lo), in file order without duplicates. Lines that do
// not parse are skipped. The kernel walks each table's tree children
// first, so ::/0, the root, comes last: the whole table is read.
func ParseIPv6RouteTable(b []byte) []string {
	out, _ := scanRoutes(bytes.NewReader(b), ipv6Table, nil)
	return out
}

// lineKind is what one line of a route table is.
type lineKind int

const (
	notRoute    lineKind = iota // the header, or a line that does not parse
	otherDest                   // a route to another destination than the default's
	defaultDest                 // a route to the default's destination (usable or not)
)

// routeTable is one of the kernel's route files: its name under
// <procfs>/net, how to read a line, and whether its routes come in
// ascending destination order (then reading stops after the default's).
type routeTable struct {
	file   string
	line   func(f [][]byte) (iface string, k lineKind)
	sorted bool
	// other, when set, tells at a glance a line that is no default route,
	// so the bulk of a large table is not split into fields.
	other func(line []byte) bool
}

var (
	ipv4Table = routeTable{file: "route", line: ipv4Line, sorted: true}
	ipv6Table = routeTable{file: "ipv6_route", line: ipv6Line, other: func(line []byte) bool {
		return !bytes.HasPrefix(line, []byte(zero128))
	}}
)

// zero128 is ::, as ipv6_route prints an address.
const zero128 = "00000000000000000000000000000000"

// ipv4Line reads "Iface Destination Gateway Flags RefCnt Use Metric Mask
// ...": a usable default route has destination and mask 00000000 and
// RTF_UP.
func ipv4Line(f [][]byte) (string, lineKind) {
	if len(f) < 8 || string(f[0]) == "Iface" {
		return "", notRoute
	}
	flags, ok := parseHex32(f[3])
	if !ok {
		return "", notRoute
	}
	if string(f[1]) != "00000000" {
		return "", otherDest
	}
	if string(f[7]) != "00000000" || flags&rtfUp == 0 {
		return "", defaultDest
	}
	return string(f[0]), defaultDest
}

// ipv6Line reads "dest dest_plen src src_plen next_hop metric refcnt use
// flags iface": a usable default route is ::/0 with RTF_UP, without
// RTF_REJECT (the kernel's "unreachable" default), not on lo.
func ipv6Line(f [][]byte) (string, lineKind) {
	if len(f) < 10 {
		return "", notRoute
	}
	flags, ok := parseHex32(f[8])
	if !ok {
		return "", notRoute
	}
	if string(f[0]) != zero128 || string(f[1]) != "00" {
		return "", otherDest
	}
	if string(f[9]) == "lo" || flags&rtfUp == 0 || flags&rtfReject != 0 {
		return "", defaultDest
	}
	return string(f[9]), defaultDest
}

func parseHex32(b []byte) (uint32, bool) {
	if len(b) == 0 || len(b) > 8 {
		return 0, false
	}
	var v uint32
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | uint32(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | uint32(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | uint32(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// maxFields is the most fields a route line has (ipv6_route's 10,
// route's 11); more are not looked at.
const maxFields = 11

// splitFields splits line at spaces and tabs into dst without allocating.
func splitFields(line []byte, dst [][]byte) [][]byte {
	dst = dst[:0]
	for i := 0; i < len(line) && len(dst) < maxFields; {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		j := i
		for j < len(line) && !isSpace(line[j]) {
			j++
		}
		if j > i {
			dst = append(dst, line[i:j])
		}
		i = j
	}
	return dst
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// routeLineMax is the longest route line read, and the read buffer: the
// kernel's lines are 128 (IPv4) and 149 (IPv6) bytes. A longer line is no
// route and is skipped whole.
const routeLineMax = 64 << 10

// deadlineEvery is how many lines are read between two looks at the
// clock.
const deadlineEvery = 4096

// errDeadline is a table not read to its end within its budget.
var errDeadline = errors.New("not read within the budget")

// scanRoutes streams one route table line by line, in constant memory
// whatever its size, and returns the interfaces of its usable default
// routes in file order without duplicates. A sorted table is read until
// the first route past the default's destination. expired (nil: never) is
// asked every deadlineEvery lines; when it says the budget is spent the
// interfaces found so far come back with errDeadline.
func scanRoutes(r io.Reader, t routeTable, expired func() bool) ([]string, error) {
	var out []string
	br := bufio.NewReaderSize(r, routeLineMax)
	fields := make([][]byte, 0, maxFields)
	skipping := false
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			skipping = true // a line longer than any route: skip it to its end
		case skipping:
			skipping = false
		case len(line) > 0 && (t.other == nil || !t.other(line)):
			iface, k := t.line(splitFields(line, fields))
			if t.sorted && k == otherDest {
				// Ascending order: no default route can follow.
				return out, nil
			}
			if iface != "" && !slices.Contains(out, iface) {
				out = append(out, iface)
			}
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		if expired != nil && n%deadlineEvery == 0 && expired() {
			return out, fmt.Errorf("%w after %d lines", errDeadline, n)
		}
	}
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
// Each table is streamed line by line (RouteReader): its size costs time,
// never memory, and the budget bounds the time.
//
//   - (nil, nil): neither route file exists (the seed's "silently
//     skipped"), no default route, or a default route on an interface with
//     no RDMA device below it;
//   - (devices, err): a route file exists but could not be read to its
//     default routes (unreadable, or over the budget); devices are those
//     of the default routes found all the same (the other table's, and
//     those read before the budget ran out), sorted (nil: none);
//   - (devices, nil): otherwise, sorted by device name.
func DefaultRouteDevices(paths topology.Paths) ([]RouteDevice, error) {
	return RouteReader{}.DefaultRouteDevices(paths)
}

// DefaultRouteDevices is the package's DefaultRouteDevices with rr's
// budget and clock.
func (rr RouteReader) DefaultRouteDevices(paths topology.Paths) ([]RouteDevice, error) {
	paths = paths.WithDefaults()
	ifaces, err := rr.defaultRouteIfaces(paths)
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
	return out, err
}

// DefaultRouteNetdevs returns the interfaces of every default route
// (IPv4 and IPv6) and every interface stacked below them (bond and VLAN
// lowers), sorted: a function whose netdev is among them carries the host's
// networking even when it has no RDMA device (mlx5_ib not loaded on it),
// which DefaultRouteDevices, keyed by RDMA device, cannot say. Its
// outcomes are DefaultRouteDevices'.
func DefaultRouteNetdevs(paths topology.Paths) ([]string, error) {
	return RouteReader{}.DefaultRouteNetdevs(paths)
}

// DefaultRouteNetdevs is the package's DefaultRouteNetdevs with rr's
// budget and clock.
func (rr RouteReader) DefaultRouteNetdevs(paths topology.Paths) ([]string, error) {
	paths = paths.WithDefaults()
	ifaces, err := rr.defaultRouteIfaces(paths)
	var out []string
	seen := map[string]bool{}
	for _, iface := range ifaces {
		out = lowersOf(paths.ClassNet, iface, seen, out, 0)
	}
	sort.Strings(out)
	return out, err
}

// RouteBudget is how long reading one route table may take. IPv4's stops
// after its default routes, which come first; IPv6's is read whole (its
// default is the root of a tree the kernel walks children first), a few
// kilobytes on a GPU node and about 150 MB for a full Internet table,
// which is streamed line by line in constant memory: time, not size, is
// what bounds it.
const RouteBudget = 2 * time.Second

// RouteReader reads the default routes. The zero value reads with
// RouteBudget on the wall clock.
type RouteReader struct {
	// Budget is how long one table may take (0: RouteBudget; negative:
	// no limit).
	Budget time.Duration
	// Now is the clock the budget is measured on (nil: time.Now).
	Now func() time.Time
}

// defaultRouteIfaces returns the interfaces of the usable IPv4 and IPv6
// default routes, IPv4 first, each table in file order. A table file that
// does not exist is skipped silently (seed behaviour). A table that
// cannot be read to what the decision needs is an error naming it; the
// other table's routes still come back.
func (rr RouteReader) defaultRouteIfaces(paths topology.Paths) ([]string, error) {
	var ifaces []string
	var errs []error
	for _, t := range []routeTable{ipv4Table, ipv6Table} {
		found, err := rr.readTable(filepath.Join(paths.ProcfsRoot, "net", t.file), t)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		ifaces = append(ifaces, found...)
		errs = append(errs, err)
	}
	return ifaces, errors.Join(errs...)
}

// readTable streams one table within the budget.
func (rr RouteReader) readTable(path string, t routeTable) ([]string, error) {
	now, budget := rr.Now, rr.Budget
	if now == nil {
		now = time.Now
	}
	if budget == 0 {
		budget = RouteBudget
	}
	var expired func() bool
	if budget > 0 {
		deadline := now().Add(budget)
		expired = func() bool { return now().After(deadline) }
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	found, err := scanRoutes(f, t, expired)
	if errors.Is(err, errDeadline) {
		return found, fmt.Errorf("read %s: %w (%v): the default route is not known; a routing table this large is read every minute, so move it out of the host's network namespace or pin the NICs with nicInclusionRegexOverride", path, err, budget)
	}
	if err != nil {
		return found, fmt.Errorf("read %s: %w", path, err)
	}
	return found, nil
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
