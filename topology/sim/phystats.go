package sim

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/nichealth/nichealthd/topology/ethtool"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

// PHYStatsDir is the directory under a simulated host's root that holds
// one driver-statistics file per netdev. It is beside sys/, never under
// class/net/<if>/, so no real sysfs tree can contain it.
const PHYStatsDir = "ethtool-stats"

// PHYStatsPath is the statistics file of netdev on the simulated host at
// root. Its content is what `ethtool -S` prints: a "NIC statistics:" line,
// then one "     name: value" line per statistic, in the driver's order.
func PHYStatsPath(root, netdev string) string { return filepath.Join(root, PHYStatsDir, netdev) }

// PHYStatsOpener opens a netdev's driver statistics from the simulated
// host at root instead of asking the driver (SIOCETHTOOL): the simulator
// has no mlx5 netdevs for the ioctl to ask. It is passed to the daemon
// explicitly, by a test or by nichealthd built with the simulate tag; the
// production daemon always uses the ioctl. Like ethtool.OpenSource, it
// returns a nil Source with every error.
func PHYStatsOpener(root string) func(netdev string, want []string) (ethtool.Source, error) {
	return func(netdev string, want []string) (ethtool.Source, error) {
		f, err := OpenPHYStats(PHYStatsPath(root, netdev), want)
		if err != nil {
			return nil, err
		}
		return f, nil
	}
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

// OpenPHYStats resolves the wanted names against the file's statistics.
func OpenPHYStats(path string, want []string) (*FileStats, error) {
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

var _ ethtool.Source = (*FileStats)(nil)

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

// FormatPHYStats renders statistics in `ethtool -S` format, as the
// statistics files hold them.
func FormatPHYStats(names []string, vals []uint64) []byte {
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
