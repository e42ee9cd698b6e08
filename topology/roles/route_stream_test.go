package roles

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/sim"
)

const (
	routeHeader = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT"
)

// fullRouteTable is /proc/net/route as the kernel writes it for a host with
// a full Internet table in its namespace: the header, the default routes
// (when via is set; the trie is walked in ascending destination order, so
// they come first), then at least size bytes of /24 routes.
func fullRouteTable(via string, size int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "%-127s\n", routeHeader)
	if via != "" {
		fmt.Fprintf(&b, "%-127s\n", via+"\t00000000\t0100000A\t0003\t0\t0\t100\t00000000\t0\t0\t0")
	}
	for i := uint32(1); b.Len() < size; i++ {
		// Destinations as the kernel prints them: the address in network
		// byte order read as a little-endian word.
		dst := i << 8
		fmt.Fprintf(&b, "%-127s\n", fmt.Sprintf("bgp0\t%02X%02X%02X%02X\t0101A8C0\t0003\t0\t0\t20\t00FFFFFF\t0\t0\t0", dst&0xff, dst>>8&0xff, dst>>16&0xff, dst>>24))
	}
	return []byte(b.String())
}

// fullIPv6RouteTable is /proc/net/ipv6_route for a full IPv6 table: at
// least size bytes of /48 routes, then (when via is set) the default
// route, the root of the tree the kernel walks children first, then the
// local table's routes and its "unreachable" default on lo.
func fullIPv6RouteTable(via string, size int) []byte {
	var b strings.Builder
	for i := 1; b.Len() < size; i++ {
		fmt.Fprintf(&b, "2001%08x00000000000000000000 30 %s 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003     bgp0\n", i, zero128)
	}
	if via != "" {
		fmt.Fprintf(&b, "%s 00 %s 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003 %8s\n", zero128, zero128, via)
	}
	fmt.Fprintf(&b, "fe800000000000000000000000000000 40 %s 00 %s 00000100 00000001 00000000 00000001     eth0\n", zero128, zero128)
	fmt.Fprintf(&b, "%s 00 %s 00 %s ffffffff 00000001 00000000 00200200       lo\n", zero128, zero128, zero128)
	return []byte(b.String())
}

func writeProcNet(t testing.TB, h *sim.Host, file string, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(h.ProcRoot(), "net", file), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Issue 31 row 9: a routing table over 16 MiB was taken as unreadable, so
// the management NIC became Storage and was monitored. Both tables are
// streamed now, whatever their size: on a DGX H100 whose namespace holds
// a full IPv4 table (17 MiB, the default route first, as the kernel
// writes it) the management NIC carries the default route; with the
// default route IPv6 only, behind 17 MiB of IPv6 routes, too.
func TestRoles_Issue31_9_RouteTablesOver16MiB(t *testing.T) {
	n := build(t, "dgx-h100", sim.BuildOptions{})
	mgmt := n.h.DefaultRoute()
	writeProcNet(t, n.h, "route", fullRouteTable(mgmt, 17<<20))
	got := n.classify(t, true)
	expectRoles(t, n, got, map[topology.Role]int{compute: 8, storage: 4, management: 1}, nil)
	var dev string
	for name, rr := range got {
		if rr[0] == string(management) {
			dev = name
		}
	}
	if want := "Management: carries the default route (via " + mgmt + ")"; got[dev][1] != want {
		t.Fatalf("%s: %q, want %q", dev, got[dev][1], want)
	}
	if netdevs, err := DefaultRouteNetdevs(n.h.Paths()); err != nil || !reflect.DeepEqual(netdevs, []string{mgmt}) {
		t.Fatalf("DefaultRouteNetdevs: %v, %v; want [%s]", netdevs, err, mgmt)
	}

	// IPv6 only: the whole table is read (no budget here, so no machine
	// is too slow for it; the budget has its own test).
	writeProcNet(t, n.h, "route", fullRouteTable("", 17<<20))
	writeProcNet(t, n.h, "ipv6_route", fullIPv6RouteTable(mgmt, 17<<20))
	routes, err := RouteReader{Budget: -1}.DefaultRouteDevices(n.h.Paths())
	if err != nil || len(routes) != 1 || routes[0].Device != dev || routes[0].Iface != mgmt {
		t.Fatalf("IPv6 default behind 17 MiB: %+v, %v; want %s via %s", routes, err, dev, mgmt)
	}
}

// The tables are streamed in constant memory: reading 17 MiB allocates
// what reading 1 KiB does (a line buffer, the default routes found), not
// a byte per byte read.
func TestRoles_Issue31_9_RouteTablesReadInConstantMemory(t *testing.T) {
	h, err := sim.Build(filepath.Join(t.TempDir(), "h"), "minimal")
	if err != nil {
		t.Fatal(err)
	}
	writeProcNet(t, h, "route", fullRouteTable("", 17<<20))
	writeProcNet(t, h, "ipv6_route", fullIPv6RouteTable("eth0", 17<<20))
	rr := RouteReader{Budget: -1}
	allocs := testing.AllocsPerRun(2, func() {
		if ifaces, err := rr.defaultRouteIfaces(h.Paths().WithDefaults()); err != nil || len(ifaces) != 1 {
			t.Fatalf("%v, %v", ifaces, err)
		}
	})
	if allocs > 40 {
		t.Fatalf("%v allocations to read two 17 MiB tables", allocs)
	}
}

// A table that takes longer than the budget to read is not waited for:
// the error names the file, says the default route is not known and how
// to fix it, and the other table's default routes still come back. The
// clock is the test's (one second per look): no machine speed matters.
func TestRoles_Issue31_9_RouteBudget(t *testing.T) {
	h, err := sim.Build(filepath.Join(t.TempDir(), "h"), "minimal")
	if err != nil {
		t.Fatal(err)
	}
	writeProcNet(t, h, "route", fullRouteTable("eth0", 17<<20))
	writeProcNet(t, h, "ipv6_route", fullIPv6RouteTable("eth1", 17<<20))
	clock := time.Unix(1_700_000_000, 0)
	rr := RouteReader{Budget: 2 * time.Second, Now: func() time.Time { clock = clock.Add(time.Second); return clock }}
	ifaces, err := rr.defaultRouteIfaces(h.Paths().WithDefaults())
	if !errors.Is(err, errDeadline) || !strings.Contains(err.Error(), filepath.Join(h.ProcRoot(), "net", "ipv6_route")) ||
		!strings.Contains(err.Error(), "default route is not known") || !strings.Contains(err.Error(), "nicInclusionRegexOverride") {
		t.Fatalf("over the budget: %v", err)
	}
	if !reflect.DeepEqual(ifaces, []string{"eth0"}) {
		t.Fatalf("IPv4 default routes %v, want [eth0] (its table stops after them)", ifaces)
	}
}

// Lines a route table cannot hold (longer than any route, a file without a
// trailing newline) are skipped, and the lines around them still read.
func TestRoles_Issue31_9_RouteLines(t *testing.T) {
	long := strings.Repeat("x", 3*routeLineMax)
	v6 := long + "\n" + zero128 + " 00 " + zero128 + " 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003 eth1"
	if got := ParseIPv6RouteTable([]byte(v6)); !reflect.DeepEqual(got, []string{"eth1"}) {
		t.Fatalf("after a %d-byte line, without a final newline: %v", len(long), got)
	}
	// IPv4 in the kernel's order: a route past the default's destination
	// ends the read, so a default printed after it (no kernel does) is
	// not seen.
	v4 := routeHeader + "\n" + long + "\neth0\t0000000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\neth1\t00000000\t0100000A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
	if got := ParseRouteTable([]byte(v4)); got != nil {
		t.Fatalf("a default route after a route past it: %v", got)
	}
}

// BenchmarkRoutes_FullTables is the cost of finding the default route on a
// host with a full Internet table in each family (17 MiB each): IPv4 stops
// after its default routes, IPv6 reads to its end.
func BenchmarkRoutes_FullTables(b *testing.B) {
	h, err := sim.Build(filepath.Join(b.TempDir(), "h"), "minimal")
	if err != nil {
		b.Fatal(err)
	}
	v4, v6 := fullRouteTable("eth0", 17<<20), fullIPv6RouteTable("eth0", 17<<20)
	writeProcNet(b, h, "route", v4)
	writeProcNet(b, h, "ipv6_route", v6)
	paths := h.Paths().WithDefaults()
	b.SetBytes(int64(len(v6)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (RouteReader{Budget: -1}).defaultRouteIfaces(paths); err != nil {
			b.Fatal(err)
		}
	}
}
