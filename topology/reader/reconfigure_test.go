package reader

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// release opens a FIFO for writing, which lets a reader blocked in open()
// return, and closes it again.
func release(t *testing.T, fifo string) {
	t.Helper()
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("1\n"))
	w.Close()
}

func waitUnstuck(t *testing.T, r *Reader) {
	t.Helper()
	for i := 0; i < 1000 && r.StuckCount() != 0; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	if r.StuckCount() != 0 {
		t.Fatalf("stuck count %d after release", r.StuckCount())
	}
}

// A plan rebuilt by a reload makes new Files for the same paths. While the
// first read of a path is blocked, the new File must be skipped rather than
// strand a second goroutine on it; and changing the deadline in place must
// keep the count of blocked reads.
func TestStuckPathSurvivesPlanRebuildAndSetOptions(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "state")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "rate")
	write(t, good, "400 Gb/sec (4X NDR)\n")
	r := New(Options{Timeout: 30 * time.Millisecond, MaxStuck: 2})
	defer r.Close()
	if s := r.Read([]*File{NewFile(fifo), NewFile(good)}, nil); len(s) != 1 {
		t.Fatalf("first plan: %d newly stuck", len(s))
	}
	for i := 0; i < 50; i++ {
		r.SetOptions(Options{Timeout: time.Duration(20+i) * time.Millisecond, MaxStuck: 2})
		plan := []*File{NewFile(fifo), NewFile(good)}
		if s := r.Read(plan, nil); len(s) != 0 {
			t.Fatalf("rebuild %d: the hung path was read again (%d newly stuck)", i, len(s))
		}
		if !errors.Is(plan[0].Err, ErrStuck) || plan[1].Err != nil {
			t.Fatalf("rebuild %d: fifo err %v, good err %v", i, plan[0].Err, plan[1].Err)
		}
		if r.StuckCount() != 1 {
			t.Fatalf("rebuild %d: stuck count %d, want 1", i, r.StuckCount())
		}
	}
	release(t, fifo)
	waitUnstuck(t, r)
	if r.PathStuck(fifo) {
		t.Fatal("path still marked stuck after its read returned")
	}
}

// ReadFile shares the deadline and the stuck bookkeeping: a hung discovery
// read costs one deadline, later reads of that path (one-shot or planned)
// fail at once, and reads longer than a plan's buffer are kept whole up to
// the bound.
func TestReadFileBoundedAndShared(t *testing.T) {
	dir := t.TempDir()
	uevent := filepath.Join(dir, "uevent")
	long := "DRIVER=mlx5_core\nPCI_CLASS=20000\nPCI_ID=15B3:101B\nPCI_SUBSYS_ID=15B3:0007\n" +
		"PCI_SLOT_NAME=0000:1a:00.0\nMODALIAS=pci:v000015B3d0000101Bsv000015B3sd00000007bc02sc00i00\n"
	write(t, uevent, long)
	r := New(Options{Timeout: 40 * time.Millisecond})
	defer r.Close()
	b, err := r.ReadFile(uevent, 0)
	if err != nil || string(b) != long {
		t.Fatalf("uevent: %q %v", b, err)
	}
	if b, err := r.ReadFile(uevent, 16); err != nil || len(b) != 16 {
		t.Fatalf("bounded read: %d bytes, %v", len(b), err)
	}

	fifo := filepath.Join(dir, "hca_type")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadFile(fifo, 0); !errors.Is(err, ErrStuck) || !strings.Contains(err.Error(), fifo) {
		t.Fatalf("hung read: %v", err)
	}
	// The second attempt does not wait out another deadline: it does not
	// even reach the worker.
	if _, err := r.ReadFile(fifo, 0); !errors.Is(err, ErrStuck) {
		t.Fatalf("second read: %v", err)
	}
	plan := []*File{NewFile(fifo)}
	if s := r.Read(plan, nil); len(s) != 0 || !errors.Is(plan[0].Err, ErrStuck) {
		t.Fatalf("planned read of a path stuck in discovery: newly stuck %d, err %v", len(s), plan[0].Err)
	}
	if r.StuckCount() != 1 {
		t.Fatalf("stuck count %d", r.StuckCount())
	}
	release(t, fifo)
	waitUnstuck(t, r)
}

// openDescriptors counts this process's open descriptors.
func openDescriptors(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("count descriptors: %v", err)
	}
	return len(ents)
}

// TestReadFile_NeverKeepsADescriptor: under the keep-open policy (real
// sysfs) a one-shot read still closes its descriptor. Nobody reads or
// closes a one-shot File again, so a kept descriptor would leak with every
// sanity pass and rediscovery until the daemon hit its descriptor limit and
// every read failed with EMFILE. Plan files stay open as before.
func TestReadFile_NeverKeepsADescriptor(t *testing.T) {
	p := filepath.Join(t.TempDir(), "current_link_speed")
	if err := os.WriteFile(p, []byte("32.0 GT/s PCIe\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := New(Options{Timeout: time.Second, KeepOpen: true})
	defer r.Close()
	if _, err := r.ReadFile(p, 0); err != nil { // the worker's own start-up
		t.Fatal(err)
	}
	before := openDescriptors(t)
	for i := 0; i < 50; i++ {
		if b, err := r.ReadFile(p, 0); err != nil || string(b) != "32.0 GT/s PCIe\n" {
			t.Fatalf("read %d: %q %v", i, b, err)
		}
	}
	if after := openDescriptors(t); after > before {
		t.Fatalf("50 one-shot reads left %d descriptors open", after-before)
	}
	plan := []*File{NewFile(p)}
	r.Read(plan, nil)
	defer plan[0].Close()
	if after := openDescriptors(t); after != before+1 {
		t.Fatalf("a plan file under keep-open holds %d descriptors, want 1", after-before)
	}
}
