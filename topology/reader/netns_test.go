package reader

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nichealth/nichealthd/internal/component"
)

// netnsChildEnv marks the copy of the test binary that runs inside the
// test's network namespace (under `ip netns exec`, which mounts that
// namespace's own sysfs on /sys).
const netnsChildEnv = "NICHEALTH_READER_NETNS_CHILD"

// The keep-open mode on real sysfs files of a real netdev: a veth's
// statistics/rx_bytes, carrier_changes and operstate are read through
// descriptors kept open; when the veth is deleted the kept pread fails,
// the file reports the failure (never a stale value) and the descriptor
// is released; a renamed netdev is still the same device, and its kept
// descriptors read its real state (down, as renaming needs).
func TestReader_KeepOpenRealSysfsNetdevDeletedAndRenamed(t *testing.T) {
	if os.Getenv(netnsChildEnv) != "" {
		keepOpenInNetns(t)
		return
	}
	if os.Geteuid() != 0 {
		component.Missing(t, "creating a network namespace needs root (run the tests as root)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		component.Missing(t, "ip not installed (apt-get install iproute2)")
	}
	ns := fmt.Sprintf("realhost-rd%d", os.Getpid())
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	exec.Command("ip", "netns", "del", ns).Run() // a leftover of a killed run
	ip("netns", "add", ns)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	for _, pair := range [][2]string{{"rhdel0", "rhdel1"}, {"rhren0", "rhren1"}} {
		ip("-n", ns, "link", "add", pair[0], "type", "veth", "peer", "name", pair[1])
		ip("-n", ns, "link", "set", pair[0], "up")
		ip("-n", ns, "link", "set", pair[1], "up")
	}
	cmd := exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), netnsChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("in namespace %s: %v\n%s", ns, err, out)
	}
	t.Logf("in namespace %s:\n%s", ns, out)
}

// keepOpenInNetns is the test's body inside the namespace.
func keepOpenInNetns(t *testing.T) {
	r := New(Options{Timeout: 5 * time.Second, KeepOpen: true})
	defer r.Close()
	plan := func(netdev string) []*File {
		var fs []*File
		for _, rel := range []string{"statistics/rx_bytes", "carrier_changes", "operstate"} {
			fs = append(fs, NewFile(filepath.Join("/sys/class/net", netdev, rel)))
		}
		return fs
	}
	del, ren := plan("rhdel0"), plan("rhren0")
	all := append(append([]*File{}, del...), ren...)
	for i := 0; i < 3; i++ {
		r.Read(all, nil)
		for _, f := range all {
			if f.Err != nil || len(f.Value()) == 0 {
				t.Fatalf("read %d of %s: %v %q", i, f.Path, f.Err, f.Value())
			}
		}
	}
	if n := heldUnder(t, "/net/rhdel0/"); n != 3 {
		t.Fatalf("%d descriptors held on rhdel0's files, want 3 (kept open)", n)
	}
	if n := heldUnder(t, "/net/rhren0/"); n != 3 {
		t.Fatalf("%d descriptors held on rhren0's files, want 3", n)
	}

	runIP(t, "link", "del", "rhdel0")
	for i := 0; i < 3; i++ {
		r.Read(del, nil)
		for _, f := range del {
			if f.Err == nil || !(errors.Is(f.Err, fs.ErrNotExist) || errors.Is(f.Err, unix.ENODEV)) {
				t.Fatalf("read %d after the delete of %s: err %v value %q; want the failure, not a stale value", i, f.Path, f.Err, f.Value())
			}
		}
	}
	if n := heldUnder(t, "/net/rhdel0/"); n != 0 {
		t.Fatalf("%d descriptors still held on the deleted veth's files", n)
	}

	runIP(t, "link", "set", "rhren0", "down")
	runIP(t, "link", "set", "rhren0", "name", "rhren9")
	r.Read(ren, nil)
	for _, f := range ren {
		if f.Err != nil {
			t.Fatalf("kept %s after the rename: %v", f.Path, f.Err)
		}
	}
	if got := strings.TrimSpace(string(ren[2].Value())); got != "down" {
		t.Fatalf("operstate through the kept descriptor %q, want the renamed device's own: down", got)
	}
	// The same three descriptors (the kernel may still show them under
	// the old name), none reopened or leaked.
	if n := heldUnder(t, "/net/rhren"); n != 3 {
		t.Fatalf("%d descriptors on the renamed device, want the same 3", n)
	}
}

func runIP(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// heldUnder counts this process's descriptors whose target contains sub.
func heldUnder(t *testing.T, sub string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && strings.Contains(target, sub) {
			n++
		}
	}
	return n
}
