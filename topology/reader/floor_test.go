package reader

// Floors on real sysfs: what open+read+close, pread on a kept descriptor and
// os.ReadFile cost per attribute file on this kernel, beside the Reader in
// both of its modes over the same files. mlx5 attributes are not available
// on every machine, so the files are the loopback netdev's statistics,
// which exist on every Linux host and are generated on each read like the
// HCA's counters are. Measured on real mlx5 sysfs: about 9 µs per
// file for open+read+close, 2 µs for pread and 23 µs for os.ReadFile: the
// reason the reader keeps descriptors open on sysfs.
//
//	go test -run '^$' -bench 'Floor' -benchmem ./topology/reader/

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nichealth/nichealthd/internal/component"
)

// floorSysfsFiles lists readable attribute files on the real /sys, or skips
// when /sys is not a sysfs mount (a container without it).
func floorSysfsFiles(tb testing.TB) []string {
	tb.Helper()
	if !IsSysfs("/sys") {
		component.Missing(tb, "/sys is not a sysfs mount here")
	}
	var out []string
	for _, pattern := range []string{
		"/sys/class/net/lo/statistics/*",
		"/sys/class/net/lo/operstate",
		"/sys/class/net/lo/carrier_changes",
		"/sys/class/net/lo/mtu",
	} {
		m, _ := filepath.Glob(pattern)
		for _, p := range m {
			if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
				continue
			}
			if _, err := os.ReadFile(p); err != nil {
				continue // write-only or permission-denied attribute
			}
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		component.Missing(tb, "no readable attribute files under /sys/class/net/lo")
	}
	sort.Strings(out)
	return out
}

func floorReport(b *testing.B, files int) {
	b.Helper()
	if b.N == 0 {
		return
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(files), "ns/file")
	b.ReportMetric(float64(files), "files/op")
}

// BenchmarkFloor_RealSysfs_OpenReadClose is floor (a): a fresh descriptor
// per file per op. The path is converted once so the syscalls are what is
// timed.
func BenchmarkFloor_RealSysfs_OpenReadClose(b *testing.B) {
	paths := floorSysfsFiles(b)
	cpaths := make([][]byte, len(paths))
	for i, p := range paths {
		cpaths[i] = append([]byte(p), 0)
	}
	var buf [MaxValue]byte
	b.ReportAllocs()
	for b.Loop() {
		for i, cp := range cpaths {
			fd, err := openNoAlloc(cp)
			if err != nil {
				b.Fatalf("open %s: %v", paths[i], err)
			}
			if _, err := unix.Read(fd, buf[:]); err != nil {
				b.Fatalf("read %s: %v", paths[i], err)
			}
			unix.Close(fd)
		}
	}
	floorReport(b, len(paths))
}

// BenchmarkFloor_RealSysfs_Pread is floor (b): descriptors opened once,
// pread at offset 0 each op (sysfs regenerates the value on such a read).
func BenchmarkFloor_RealSysfs_Pread(b *testing.B) {
	paths := floorSysfsFiles(b)
	fds := make([]int, 0, len(paths))
	b.Cleanup(func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	})
	for _, p := range paths {
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			b.Fatalf("open %s: %v", p, err)
		}
		fds = append(fds, fd)
	}
	var buf [MaxValue]byte
	b.ReportAllocs()
	for b.Loop() {
		for i, fd := range fds {
			if _, err := unix.Pread(fd, buf[:], 0); err != nil {
				b.Fatalf("pread %s: %v", paths[i], err)
			}
		}
	}
	floorReport(b, len(paths))
}

// BenchmarkFloor_RealSysfs_ReadFile is the naive way: os.ReadFile, which
// also stats the file and allocates its buffer.
func BenchmarkFloor_RealSysfs_ReadFile(b *testing.B) {
	paths := floorSysfsFiles(b)
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range paths {
			if _, err := os.ReadFile(p); err != nil {
				b.Fatalf("read %s: %v", p, err)
			}
		}
	}
	floorReport(b, len(paths))
}

// benchRealSysfsReader runs the Reader over the same files: its overhead
// over the floors is the deadline machinery (one hand-off to the worker
// goroutine per cycle, not per file).
func benchRealSysfsReader(b *testing.B, keepOpen bool) {
	paths := floorSysfsFiles(b)
	files := make([]*File, len(paths))
	for i, p := range paths {
		files[i] = NewFile(p)
	}
	b.Cleanup(func() {
		for _, f := range files {
			f.Close()
		}
	})
	r := New(Options{KeepOpen: keepOpen})
	var stuck []*File
	stuck = r.Read(files, stuck[:0])
	for _, f := range files {
		if f.Err != nil {
			b.Fatalf("%s: %v", f.Path, f.Err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		stuck = r.Read(files, stuck[:0])
	}
	floorReport(b, len(paths))
}

func BenchmarkFloor_RealSysfs_ReaderKeepOpen(b *testing.B) { benchRealSysfsReader(b, true) }
func BenchmarkFloor_RealSysfs_ReaderReopen(b *testing.B)   { benchRealSysfsReader(b, false) }

// TestFloor_RealSysfsKeptDescriptorSeesNewValue: the premise of KeepOpen.
// A kept descriptor re-read at offset 0 on sysfs returns the current value,
// not the one from when it was opened. Loopback's rx counters move when
// this test sends itself a datagram.
func TestFloor_RealSysfsKeptDescriptorSeesNewValue(t *testing.T) {
	if !IsSysfs("/sys") {
		component.Missing(t, "/sys is not a sysfs mount here")
	}
	const path = "/sys/class/net/lo/statistics/tx_packets"
	f := NewFile(path)
	defer f.Close()
	r := New(Options{KeepOpen: true})
	r.Read([]*File{f}, nil)
	if f.Err != nil {
		component.Missing(t, "%s: %v", path, f.Err)
	}
	before := string(f.Value())
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		component.Missing(t, "no socket: %v", err)
	}
	defer unix.Close(s)
	to := &unix.SockaddrInet4{Port: 9, Addr: [4]byte{127, 0, 0, 1}}
	for i := 0; i < 4; i++ {
		if err := unix.Sendto(s, []byte("x"), 0, to); err != nil {
			component.Missing(t, "loopback send: %v", err)
		}
	}
	r.Read([]*File{f}, nil)
	if f.Err != nil {
		t.Fatalf("re-read %s: %v", path, f.Err)
	}
	if f.fd < 0 {
		t.Fatalf("%s: descriptor was not kept open on sysfs", path)
	}
	if got := string(f.Value()); got == before {
		t.Errorf("%s read through a kept descriptor stayed %q after 4 packets: pread at offset 0 did not regenerate the value", path, got)
	}
}
