package ethtool

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nichealth/nichealthd/internal/component"
)

// vethNetns creates a network namespace with an up veth pair va/vb for the
// test and returns its name and vb's ifindex in it. It is removed when the
// test ends.
func vethNetns(tb testing.TB) (ns string, peerIndex uint64) {
	tb.Helper()
	if os.Geteuid() != 0 {
		component.Missing(tb, "creating a network namespace needs root (run the tests as root)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		component.Missing(tb, "ip not installed (apt-get install iproute2)")
	}
	ns = fmt.Sprintf("nhphy-%d-%d", os.Getpid(), len(tb.Name()))
	run := func(args ...string) string {
		tb.Helper()
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			tb.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	exec.Command("ip", "netns", "del", ns).Run() // a leftover of a killed run
	run("netns", "add", ns)
	tb.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	run("-n", ns, "link", "add", "va", "type", "veth", "peer", "name", "vb")
	run("-n", ns, "link", "set", "va", "up")
	run("-n", ns, "link", "set", "vb", "up")
	// "3: vb@va: <...>": the index before the first colon.
	line := run("-n", ns, "-o", "link", "show", "vb")
	idx, err := strconv.ParseUint(strings.TrimSpace(line[:strings.IndexByte(line, ':')]), 10, 64)
	if err != nil {
		tb.Fatalf("parse ifindex of vb from %q: %v", line, err)
	}
	return ns, idx
}

// inNetns runs fn on an OS thread moved into the named namespace. The
// thread is moved back afterwards; if that fails it is left locked, and Go
// ends it with the goroutine rather than reuse it.
func inNetns(tb testing.TB, ns string, fn func()) {
	tb.Helper()
	done := make(chan error)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			done <- fmt.Errorf("open own netns: %w", err)
			return
		}
		defer unix.Close(orig)
		target, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			done <- fmt.Errorf("open netns %s: %w", ns, err)
			return
		}
		defer unix.Close(target)
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			done <- fmt.Errorf("setns %s: %w", ns, err)
			return
		}
		fn()
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			done <- fmt.Errorf("setns back: %w", err)
			return
		}
		runtime.UnlockOSThread()
		done <- nil
	}()
	if err := <-done; err != nil {
		tb.Fatal(err)
	}
}

func openVeth(tb testing.TB, want []string) (*Stats, uint64) {
	tb.Helper()
	ns, peer := vethNetns(tb)
	var s *Stats
	var err error
	inNetns(tb, ns, func() { s, err = Open("va", want) })
	if err != nil {
		tb.Fatalf("open va in %s: %v", ns, err)
	}
	tb.Cleanup(s.Close)
	return s, peer
}

// The real ioctl path: veth publishes peer_ifindex, whose value is the
// peer's interface index, and per-queue XDP counters; a name the driver
// does not have is reported absent, not 0.
func TestPHY_EthtoolIoctlOnVeth(t *testing.T) {
	s, peer := openVeth(t, []string{"peer_ifindex", "rx_corrected_bits_phy", "rx_queue_0_xdp_packets"})
	names, err := s.Names()
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 || names[0] != "peer_ifindex" {
		t.Fatalf("veth statistics %v: want peer_ifindex first", names)
	}
	for i := 0; i < 3; i++ {
		if err := s.Read(); err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
		v, ok := s.Value(0)
		if !ok || v != peer {
			t.Fatalf("read %d: peer_ifindex = %d, %v; want %d (vb's ifindex)", i, v, ok, peer)
		}
		if _, ok := s.Value(1); ok {
			t.Fatal("rx_corrected_bits_phy reported on veth, which has no PHY")
		}
		if v, ok := s.Value(2); !ok || v != 0 {
			t.Fatalf("rx_queue_0_xdp_packets = %d, %v; want 0 without XDP", v, ok)
		}
	}
	// Read from this thread, in the test's own namespace: the socket kept
	// the namespace it was opened in. A steady read allocates nothing.
	if allocs := testing.AllocsPerRun(100, func() {
		if err := s.Read(); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Fatalf("Read allocates %v times; want 0", allocs)
	}
}

func TestPHY_EthtoolUnknownInterface(t *testing.T) {
	if _, err := Open("nhphy-absent0", nil); err == nil || !strings.Contains(err.Error(), "nhphy-absent0") {
		t.Fatalf("open of a missing interface: %v; want an error naming it", err)
	}
	if _, err := Open("a-name-longer-than-ifnamsiz", nil); err == nil {
		t.Fatal("an over-long name was accepted")
	}
}

// An interface the ioctl cannot ask gives a plain nil Source: a nil
// *Stats inside a non-nil interface passed every "src != nil" test and
// panicked in Close, at start, on every RoCE host with such a netdev.
func TestPHY_OpenSourceFailureIsNilInterface(t *testing.T) {
	for _, name := range []string{"nhphy-absent0", "", "a-name-longer-than-ifnamsiz"} {
		src, err := OpenSource(name, []string{"rx_corrected_bits_phy"})
		if err == nil || src != nil {
			t.Fatalf("OpenSource(%q) = (%#v, %v); want (nil, error)", name, src, err)
		}
	}
}

// Every way a real RoCE netdev can fail the ioctl, on real interfaces: a
// bridge has no driver statistics (ErrNoStats, or EOPNOTSUPP from older
// kernels), an absent name is ENODEV; a veth deleted or renamed after its
// names were resolved fails its next Read with ENODEV (the request goes by
// name), and every failed open is a plain nil Source.
func TestPHY_EthtoolBridgeAbsentDeletedRenamed(t *testing.T) {
	ns, _ := vethNetns(t)
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	ip("link", "add", "br0", "type", "bridge")
	ip("link", "set", "br0", "up")
	ip("link", "add", "vc", "type", "veth", "peer", "name", "vd")
	want := []string{"peer_ifindex"}
	var bridge, absent error
	var bridgeSrc, absentSrc Source
	var va, vc *Stats
	var errVA, errVC error
	inNetns(t, ns, func() {
		bridgeSrc, bridge = OpenSource("br0", want)
		absentSrc, absent = OpenSource("nhphy-absent0", want)
		va, errVA = Open("va", want)
		vc, errVC = Open("vc", want)
	})
	if bridgeSrc != nil || !(errors.Is(bridge, ErrNoStats) || errors.Is(bridge, unix.EOPNOTSUPP)) || !strings.Contains(bridge.Error(), "br0") {
		t.Fatalf("bridge: (%#v, %v); want a nil Source and no statistics", bridgeSrc, bridge)
	}
	if absentSrc != nil || !errors.Is(absent, unix.ENODEV) {
		t.Fatalf("absent: (%#v, %v); want a nil Source and ENODEV", absentSrc, absent)
	}
	if errVA != nil || errVC != nil {
		t.Fatalf("open veths: %v, %v", errVA, errVC)
	}
	defer va.Close()
	defer vc.Close()
	for _, s := range []*Stats{va, vc} {
		if err := s.Read(); err != nil {
			t.Fatalf("read %s before: %v", s.ifname, err)
		}
	}
	ip("link", "del", "va") // takes vb with it
	ip("link", "set", "vc", "name", "vc-renamed")
	for i := 0; i < 3; i++ {
		for _, s := range []*Stats{va, vc} {
			if err := s.Read(); !errors.Is(err, unix.ENODEV) || !strings.Contains(err.Error(), s.ifname) {
				t.Fatalf("read %d of %s after it went: %v; want ENODEV naming it", i, s.ifname, err)
			}
		}
	}
}

// BenchmarkGSTATS_Veth is the per-netdev cost of one read: GSSET_INFO and
// GSTATS.
func BenchmarkGSTATS_Veth(b *testing.B) {
	s, _ := openVeth(b, []string{"peer_ifindex"})
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Read(); err != nil {
			b.Fatal(err)
		}
	}
}
