package ethtool

import (
	"errors"
	"fmt"
	"github.com/nichealth/nichealthd/topology/sysfs"
	"os"
	"path/filepath"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/nichealth/nichealthd/topology/reader"
)

// SimDir is the directory under a simulated host's root that holds one
// statistics file per netdev. It is beside sys/, never under
// class/net/<if>/, so no real sysfs tree can contain it.
const SimDir = "ethtool-stats"

// SimFile is the statistics file of netdev on the simulated host at root.
// Its content is what `ethtool -S` prints: a "NIC statistics:" line, then
// one "     name: value" line per statistic, in the driver's order.
func SimFile(root, netdev string) string { return filepath.Join(root, SimDir, netdev) }

// SimulatedRoot says whether the statistics of the interfaces under
// classNet come from the simulator's files, and the simulated host's root:
// classNet is not on sysfs and reader.SimulatedHost recognises the host.
// On a real host classNet is sysfs, so the ioctl is always used there.
func SimulatedRoot(sysfsRoot, classNet string, onSysfs func(string) bool) (string, bool) {
	if onSysfs(classNet) {
		return "", false
	}
	return reader.SimulatedHost(sysfsRoot)
}

// OpenSource opens netdev's statistics: from the simulator's file when
// simRoot is not empty (see SimulatedRoot), by the ioctl otherwise.
func OpenSource(netdev string, want []string, simRoot string) (Source, error) {
	if simRoot == "" {
		return Open(netdev, want)
	}
	return OpenFile(SimFile(simRoot, netdev), want)
}

// FileStats reads statistics from a file in `ethtool -S` format. The file
// is reopened on every read (the simulator replaces it by rename), into a
// buffer kept between reads.
type FileStats struct {
	path  string
	cpath []byte
	buf   []byte
	want  []string
	names []string // the statistics' order when the slots were resolved
	slot  []int
	vals  []uint64
}

// OpenFile resolves the wanted names against the file's statistics.
func OpenFile(path string, want []string) (*FileStats, error) {
	f := &FileStats{path: path, cpath: append([]byte(path), 0), buf: make([]byte, 16<<10),
		want: append([]string(nil), want...)}
	n, err := f.load()
	if err != nil {
		return nil, err
	}
	f.relayout(n)
	return f, nil
}

// Close does nothing: no descriptor is kept.
func (f *FileStats) Close() {}

// load reads the whole file into buf, growing it when the file is larger.
func (f *FileStats) load() (int, error) {
	for {
		dirfd := unix.AT_FDCWD
		fd, _, e := unix.Syscall6(unix.SYS_OPENAT, uintptr(dirfd),
			uintptr(unsafe.Pointer(&f.cpath[0])), uintptr(unix.O_RDONLY|unix.O_CLOEXEC), 0, 0, 0)
		if e != 0 {
			return 0, &os.PathError{Op: "open", Path: f.path, Err: e}
		}
		n, err := unix.Pread(int(fd), f.buf, 0)
		unix.Close(int(fd))
		if err != nil {
			return 0, &os.PathError{Op: "read", Path: f.path, Err: err}
		}
		if n < len(f.buf) {
			return n, nil
		}
		f.buf = make([]byte, 2*len(f.buf))
	}
}

// relayout parses buf[:n] allocating, and resolves the wanted names.
func (f *FileStats) relayout(n int) {
	f.names = f.names[:0]
	f.vals = f.vals[:0]
	eachStat(f.buf[:n], func(name, val []byte) bool {
		v, _ := strconv.ParseUint(string(val), 10, 64)
		f.names = append(f.names, string(name))
		f.vals = append(f.vals, v)
		return true
	})
	f.slot = make([]int, len(f.want))
	for i, w := range f.want {
		f.slot[i] = -1
		for j, name := range f.names {
			if name == w {
				f.slot[i] = j
				break
			}
		}
	}
}

var errLayout = errors.New("layout changed")

// Read reloads the file and parses every value in place. A file whose
// names or order changed is re-mapped (allocating, as a driver's changed
// count is for the ioctl).
func (f *FileStats) Read() error {
	n, err := f.load()
	if err != nil {
		return err
	}
	i := 0
	var bad error
	eachStat(f.buf[:n], func(name, val []byte) bool {
		if i >= len(f.names) || string(name) != f.names[i] {
			bad = errLayout
			return false
		}
		v, err := sysfs.ParseCounter(val)
		if err != nil {
			bad = fmt.Errorf("%s: %s: %q is not a counter value", f.path, name, val)
			return false
		}
		f.vals[i] = v
		i++
		return true
	})
	switch {
	case bad == errLayout || (bad == nil && i != len(f.names)):
		f.relayout(n)
	case bad != nil:
		return bad
	}
	return nil
}

// Has reports whether the file has the wanted statistic at slot.
func (f *FileStats) Has(slot int) bool { return slot >= 0 && slot < len(f.slot) && f.slot[slot] >= 0 }

// Value returns the wanted statistic at slot from the last Read.
func (f *FileStats) Value(slot int) (uint64, bool) {
	if slot < 0 || slot >= len(f.slot) || f.slot[slot] < 0 {
		return 0, false
	}
	return f.vals[f.slot[slot]], true
}

// eachStat calls fn with every "name: value" line of an `ethtool -S`
// listing, stopping when fn returns false. Lines without a colon (the
// "NIC statistics:" header has nothing after it) are skipped.
func eachStat(b []byte, fn func(name, val []byte) bool) {
	for len(b) > 0 {
		line := b
		if j := indexByte(b, '\n'); j >= 0 {
			line, b = b[:j], b[j+1:]
		} else {
			b = nil
		}
		c := indexByte(line, ':')
		if c < 0 {
			continue
		}
		name, val := trim(line[:c]), trim(line[c+1:])
		if len(name) == 0 || len(val) == 0 {
			continue
		}
		if !fn(name, val) {
			return
		}
	}
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

func trim(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// Format renders statistics in `ethtool -S` format, as SimFile holds them.
func Format(names []string, vals []uint64) []byte {
	b := []byte("NIC statistics:\n")
	for i, n := range names {
		b = append(b, "     "...)
		b = append(b, n...)
		b = append(b, ": "...)
		b = strconv.AppendUint(b, vals[i], 10)
		b = append(b, '\n')
	}
	return b
}
