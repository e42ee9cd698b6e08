package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/internal/component"
)

// realNetns is a network namespace the test creates (root, iproute2),
// removed when the test ends.
type realNetns struct {
	t    *testing.T
	name string
}

func newRealNetns(t *testing.T) *realNetns {
	t.Helper()
	if os.Geteuid() != 0 {
		component.Missing(t, "creating a network namespace needs root (run the tests as root)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		component.Missing(t, "ip not installed (apt-get install iproute2)")
	}
	ns := &realNetns{t: t, name: fmt.Sprintf("realhost-bb%d", os.Getpid())}
	exec.Command("ip", "netns", "del", ns.name).Run() // a leftover of a killed run
	ns.ip("netns", "add", ns.name)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns.name).Run() })
	ns.ip("-n", ns.name, "link", "set", "lo", "up")
	return ns
}

func (ns *realNetns) ip(args ...string) string {
	ns.t.Helper()
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		ns.t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// in runs ip with -n <namespace>.
func (ns *realNetns) in(args ...string) string {
	ns.t.Helper()
	return ns.ip(append([]string{"-n", ns.name}, args...)...)
}

func (ns *realNetns) veth(name, peer string) {
	ns.t.Helper()
	ns.in("link", "add", name, "type", "veth", "peer", "name", peer)
	ns.in("link", "set", peer, "up")
	ns.in("link", "set", name, "up")
}

// waitUp waits until the kernel says name's operstate is UP.
func (ns *realNetns) waitUp(name string) {
	ns.t.Helper()
	deadline := time.Now().Add(waitDeadline)
	for !strings.Contains(ns.in("-o", "link", "show", name), "state UP") {
		if time.Now().After(deadline) {
			ns.t.Fatalf("%s never came up: %s", name, ns.in("-o", "link", "show", name))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// httpClient reaches the namespace's loopback: each connection's socket is
// made on a thread moved into the namespace (a socket keeps the namespace
// it was made in). The thread is left locked, so Go ends it with the
// goroutine instead of reusing it in the wrong namespace.
func (ns *realNetns) httpClient() *http.Client {
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		type result struct {
			c   net.Conn
			err error
		}
		ch := make(chan result, 1)
		go func() {
			runtime.LockOSThread()
			fd, err := unix.Open("/run/netns/"+ns.name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				ch <- result{nil, err}
				return
			}
			defer unix.Close(fd)
			if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
				ch <- result{nil, err}
				return
			}
			var d net.Dialer
			c, err := d.DialContext(ctx, network, addr)
			ch <- result{c, err}
		}()
		r := <-ch
		return r.c, r.err
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: dial, DisableKeepAlives: true}}
}

// heldOn counts pid's descriptors whose target contains sub.
func heldOn(t *testing.T, pid int, sub string) int {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && strings.Contains(target, sub) {
			n++
		}
	}
	return n
}

// pointAtKernel replaces the simulated class/net entry of netdev by a link
// to the kernel's own /sys/class/net/<netdev>, which the daemon, run in
// the namespace, resolves to that namespace's real netdev; gone removes
// the entry (a netdev that is absent altogether).
func (n *node) pointAtKernel(netdev string, gone bool) {
	n.t.Helper()
	p := filepath.Join(n.h.SysRoot(), "class", "net", netdev)
	if err := os.Remove(p); err != nil {
		n.t.Fatal(err)
	}
	if gone {
		return
	}
	if err := os.Symlink(filepath.Join("/sys/class/net", netdev), p); err != nil {
		n.t.Fatal(err)
	}
}

// followRename does in the simulated tree what the kernel does in sysfs
// when it renames a netdev: the PCI function's net/ entry takes the new
// name, and class/net names it (pointing at the real netdev).
func (n *node) followRename(dev, old, renamed string) {
	n.t.Helper()
	netDir := filepath.Join(n.h.SysRoot(), "class", "infiniband", dev, "device", "net")
	if err := os.Rename(filepath.Join(netDir, old), filepath.Join(netDir, renamed)); err != nil {
		n.t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(n.h.SysRoot(), "class", "net", old)); err != nil {
		n.t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("/sys/class/net", renamed), filepath.Join(n.h.SysRoot(), "class", "net", renamed)); err != nil {
		n.t.Fatal(err)
	}
}

// The production binary on a tree the simulator did not mark, whose RoCE
// netdevs are real kernel interfaces in a network namespace: a veth, a
// bridge (no driver statistics), one absent altogether (ENODEV), one
// deleted and one renamed while the daemon runs. It starts, keeps its
// cadence, keeps the real netdevs' files open and releases them when the
// netdev goes, says once what it cannot read, judges ports from what it
// reads (never from a failed read), follows a rename to the netdev's new
// name, detects port faults, and exits 0 on SIGTERM without a panic.
func TestRealHost_RoCENetdevsAbsentVethBridgeDeletedRenamed(t *testing.T) {
	ns := newRealNetns(t)
	n := newNode(t, "dgx-h100", `[[counterDetection.counters]]
name = "netdev_rx_dropped"
path = "/sys/class/net/{interface}/statistics/rx_dropped"
thresholdType = "delta"
threshold = 1000000
description = "packets the netdev dropped on receive"

# A statistic a veth's driver has: the ethtool call goes by name, so a
# rename fails it with ENODEV while the kept sysfs descriptors still read.
[[counterDetection.counters]]
name = "veth_peer_ifindex"
path = "ethtool:peer_ifindex"
thresholdType = "delta"
threshold = 1000000
description = "the veth peer's ifindex, a driver statistic every veth has"
`)
	n.withMetrics()
	const (
		vethDev, veth       = "mlx5_8", "enp65s0f0np0"
		bridgeDev, bridge   = "mlx5_9", "enp65s0f1np0"
		absentDev, absent   = "mlx5_10", "enp193s0f0np0"
		deletedDev, deleted = "mlx5_11", "enp193s0f1np0"
		renamed             = "rhrenamed0"
	)
	ns.veth(veth, "rh-peer8")
	ns.in("link", "add", "name", bridge, "type", "bridge", "forward_delay", "0")
	ns.veth("rh-brport", "rh-brpeer")
	ns.in("link", "set", "rh-brport", "master", bridge)
	ns.in("link", "set", bridge, "up")
	ns.veth(deleted, "rh-peer11")
	for _, nd := range []string{veth, bridge, deleted} {
		ns.waitUp(nd)
		n.pointAtKernel(nd, false)
	}
	n.pointAtKernel(absent, true)
	n.netns, n.http = ns.name, ns.httpClient()

	n.start()
	n.waitReadyLog()
	n.waitPolls(3)
	pid := n.cmd.Process.Pid
	for _, nd := range []string{veth, bridge, deleted} {
		// operstate, carrier_changes and statistics/rx_dropped, on sysfs:
		// kept open although the rest of the tree is a directory.
		if k := heldOn(t, pid, "/net/"+nd+"/"); k != 3 {
			t.Errorf("%s: %d descriptors kept open, want 3 (operstate, carrier_changes, statistics/rx_dropped)", nd, k)
		}
	}
	logs := n.stderr.String()
	// An absent netdev is a gap said once at info; a driver without
	// statistics a lasting one, a warning.
	for _, tc := range []struct{ netdev, why string }{
		{absent, "level=INFO msg=\"driver statistics unavailable: no such netdev in this network namespace"},
		{absent, "no such device"},
		{bridge, "level=WARN"},
		{bridge, "driver has no ethtool statistics"},
	} {
		line := ""
		for _, l := range strings.Split(logs, "\n") {
			if strings.Contains(l, "driver statistics unavailable") && strings.Contains(l, "netdev="+tc.netdev+" ") {
				line = l
			}
		}
		if !strings.Contains(line, tc.why) {
			t.Errorf("%s: want its driver statistics said unavailable (%s), got %q", tc.netdev, tc.why, line)
		}
	}

	// A port fault on the RoCE port whose netdev is absent.
	if err := n.h.SetPortState(absentDev, 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	n.waitEvent("port fatal on "+absentDev, portEvent(absentDev, event.KindPortFatal))

	// Deleted under its kept descriptors: the reads fail, the descriptors
	// go, the port keeps its last operstate (no event from the failure).
	skip := len(n.read())
	ns.in("link", "del", deleted)
	// The counter files are read on the 1 s counter tick.
	deadline := time.Now().Add(waitDeadline)
	for heldOn(t, pid, "/net/"+deleted+"/") != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d descriptors still held on the deleted %s", heldOn(t, pid, "/net/"+deleted+"/"), deleted)
		}
		time.Sleep(50 * time.Millisecond)
	}
	n.waitPolls(3)
	for _, e := range n.read()[skip:] {
		if e.Device() == deletedDev {
			t.Errorf("%s judged from a failed read: %s %s", deletedDev, e.Kind, e.Message)
		}
	}
	n.waitLog("the deleted netdev said once", func(l string) bool {
		return countLines(l, "cannot read the RoCE netdev's operstate", "netdev="+deleted+" ") == 1
	})

	// The real operstate of a real netdev is judged: down is a port fault,
	// seen through the kept descriptors also once the netdev is renamed,
	// and up again is its recovery.
	ns.in("link", "set", veth, "down")
	n.waitEventAfter(skip, "operstate down on "+vethDev, func(e event.Event) bool {
		return e.Device() == vethDev && !e.IsHealthy && strings.Contains(e.Message, "operstate down")
	})
	ns.in("link", "set", veth, "name", renamed)
	n.followRename(vethDev, veth, renamed)
	ns.in("link", "set", renamed, "up")
	n.waitEventAfter(skip, "recovery of "+vethDev+" after the rename", portEvent(vethDev, event.KindPortRecovered))
	// The driver statistics call by the old name fails with ENODEV, the
	// only sign of the rename (the kept descriptors still read): the port
	// is planned again under its new name, its files reopened there.
	deadline = time.Now().Add(waitDeadline)
	for heldOn(t, pid, "/net/"+renamed+"/") != 3 || heldOn(t, pid, "/net/"+veth+"/") != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the rename was not followed: %d descriptors on %s, %d still on %s\n%s",
				heldOn(t, pid, "/net/"+renamed+"/"), renamed, heldOn(t, pid, "/net/"+veth+"/"), veth, n.stderr.Tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
	n.waitPolls(3)

	if err := n.h.SetPortState(bridgeDev, 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	n.waitEvent("port fatal on "+bridgeDev, portEvent(bridgeDev, event.KindPortFatal))
	n.cmd.Process.Signal(syscall.SIGTERM)
	if err := n.cmd.Wait(); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, n.stderr.Tail())
	}
	logs = n.stderr.String()
	if strings.Contains(logs, "panic") || strings.Contains(logs, "check failed") {
		t.Fatalf("a panic on the real-host paths:\n%s", logs)
	}
	for _, nd := range []string{absent, bridge} {
		if k := countLines(logs, "driver statistics unavailable", "netdev="+nd+" "); k != 1 {
			t.Errorf("%s: driver statistics said unavailable %d times, want once", nd, k)
		}
	}
	if k := countLines(logs, "driver statistics call fails with ENODEV", "netdev="+veth+" "); k != 1 {
		t.Errorf("%s: its stale name said %d times, want once", veth, k)
	}
	if k := countLines(logs, "netdev="+renamed+" ", "unavailable"); k != 0 {
		t.Errorf("%s: driver statistics said unavailable under the new name %d times, want never", renamed, k)
	}
	for _, nd := range []string{absent, deleted} {
		if k := countLines(logs, "netdev="+nd+" ", "operstate"); k != 1 {
			t.Errorf("%s: its operstate said unreadable %d times, want once", nd, k)
		}
	}
}

// countLines counts the lines of logs containing every one of subs.
func countLines(logs string, subs ...string) int {
	n := 0
	for _, l := range strings.Split(logs, "\n") {
		all := true
		for _, s := range subs {
			all = all && strings.Contains(l, s)
		}
		if all {
			n++
		}
	}
	return n
}
