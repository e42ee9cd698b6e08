package reader

import (
	"bufio"
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/nichealth/nichealthd/internal/regularfile"
)

// SimManifestName is the file a simulated host records itself in, beside
// its sys directory (topology/sim writes it).
const SimManifestName = ".nichealth-sim.json"

// InjectTableName is the simulator's errno injection table, beside its sys
// directory. Each line is "ERRNO path", the path relative to the sys
// directory (class/infiniband/mlx5_0/ports/1/counters/symbol_error): a
// regular file on a temporary directory cannot make the kernel return EIO
// or EINVAL, so the simulator says which files must.
const InjectTableName = ".nichealth-sim-errno"

// injector is the simulator seam: it exists only when the sysfs root is
// not on sysfs and the manifest beside it says the tree is simulated, so
// it is never active on a real host. The table is re-read only when its
// inode, size or modification time changes.
type injector struct {
	sys   string // the sysfs root the table's paths are relative to
	table []byte // NUL-terminated path of the table
	stx   unix.Statx_t
	ino   uint64
	size  uint64
	mtime unix.StatxTimestamp
	have  bool
	errs  map[string]unix.Errno // by the full path the plans read
}

// maxManifest bounds the simulator's manifest (a few hundred bytes) and
// maxInjectTable its errno table (a line per failing file).
const (
	maxManifest    = 64 << 10
	maxInjectTable = 1 << 20
)

// SimulatedHost reports whether sysfsRoot belongs to a host the simulator
// built, and that host's root directory. Both must hold: sysfsRoot is not
// on sysfs, and the manifest beside it says "simulated": true. Every seam
// through which the simulator stands in for the kernel (injected errnos,
// driver statistics) asks this, so none is ever active on a real host.
func SimulatedHost(sysfsRoot string) (root string, ok bool) {
	if sysfsRoot == "" || IsSysfs(sysfsRoot) {
		return "", false
	}
	root = filepath.Dir(filepath.Clean(sysfsRoot))
	b, err := regularfile.Read(filepath.Join(root, SimManifestName), maxManifest)
	if err != nil {
		return "", false
	}
	var m struct {
		Simulated bool `json:"simulated"`
	}
	if json.Unmarshal(b, &m) != nil || !m.Simulated {
		return "", false
	}
	return root, true
}

// newInjector returns the seam for sysfsRoot, or nil on a real host.
func newInjector(sysfsRoot string) *injector {
	host, ok := SimulatedHost(sysfsRoot)
	if !ok {
		return nil
	}
	return &injector{
		sys:   filepath.Clean(sysfsRoot),
		table: append([]byte(filepath.Join(host, InjectTableName)), 0),
	}
}

// refresh re-reads the table when it changed since the last call. It does
// not allocate when the table did not change.
func (in *injector) refresh() {
	dirfd := unix.AT_FDCWD
	_, _, e := unix.Syscall6(unix.SYS_STATX, uintptr(dirfd), uintptr(unsafe.Pointer(&in.table[0])),
		0, uintptr(unix.STATX_INO|unix.STATX_SIZE|unix.STATX_MTIME), uintptr(unsafe.Pointer(&in.stx)), 0)
	if e != 0 {
		if in.have {
			in.have, in.errs = false, nil
		}
		return
	}
	if in.have && in.stx.Ino == in.ino && in.stx.Size == in.size && in.stx.Mtime == in.mtime {
		return
	}
	in.have, in.ino, in.size, in.mtime = true, in.stx.Ino, in.stx.Size, in.stx.Mtime
	b, err := regularfile.Read(string(in.table[:len(in.table)-1]), maxInjectTable)
	if err != nil {
		in.errs = nil
		return
	}
	in.errs = parseInjectTable(in.sys, b)
}

// lookup returns the errno injected for path.
func (in *injector) lookup(path string) (unix.Errno, bool) {
	if len(in.errs) == 0 {
		return 0, false
	}
	e, ok := in.errs[path]
	return e, ok
}

func parseInjectTable(sys string, b []byte) map[string]unix.Errno {
	out := map[string]unix.Errno{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, rel, ok := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		if e, ok := ErrnoByName(name); ok {
			out[filepath.Join(sys, strings.TrimSpace(rel))] = e
		}
	}
	return out
}

// ErrnoByName maps the errno names the simulator can inject to their
// values.
func ErrnoByName(name string) (unix.Errno, bool) {
	switch strings.ToUpper(name) {
	case "EIO":
		return unix.EIO, true
	case "EINVAL":
		return unix.EINVAL, true
	case "EOPNOTSUPP", "ENOTSUP":
		return unix.EOPNOTSUPP, true
	case "EACCES":
		return unix.EACCES, true
	case "EPERM":
		return unix.EPERM, true
	case "ENOENT":
		return unix.ENOENT, true
	case "ENODEV":
		return unix.ENODEV, true
	case "EBUSY":
		return unix.EBUSY, true
	}
	return 0, false
}
