package sim

import (
	"bufio"
	"bytes"
	"path/filepath"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/nichealth/nichealthd/internal/regularfile"
	"github.com/nichealth/nichealthd/topology/reader"
)

// ErrnoTableName is the simulator's errno injection table, under H. Each
// line is "ERRNO path", the path relative to H/sys
// (class/infiniband/mlx5_0/ports/1/counters/symbol_error): a regular file
// on a temporary directory cannot make the kernel return EIO or EINVAL, so
// the simulator says which files must.
const ErrnoTableName = ".nichealth-sim-errno"

// maxErrnoTable bounds the table (a line per failing file).
const maxErrnoTable = 1 << 20

// ErrnoTable is the reader.Faults of the host at root (H): the errnos
// `nichealth-sim fail` wrote, keyed by the full path the read plans use.
// It is given to a reader explicitly (a test, or nichealthd built with the
// simulate tag and started with --simulate-root H); the production daemon
// never has one. The table is re-read only when its inode, size or
// modification time changes, so a steady Refresh costs one statx and
// allocates nothing.
type ErrnoTable struct {
	sys   string // the sysfs root the table's paths are relative to
	table []byte // NUL-terminated path of the table
	stx   unix.Statx_t
	ino   uint64
	size  uint64
	mtime unix.StatxTimestamp
	have  bool
	errs  map[string]unix.Errno
}

var _ reader.Faults = (*ErrnoTable)(nil)

// NewErrnoTable returns the errno table of the simulated host at root.
func NewErrnoTable(root string) *ErrnoTable {
	root = filepath.Clean(root)
	return &ErrnoTable{sys: filepath.Join(root, "sys"), table: append([]byte(filepath.Join(root, ErrnoTableName)), 0)}
}

// Refresh re-reads the table when it changed since the last call.
func (in *ErrnoTable) Refresh() {
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
	b, err := regularfile.Read(string(in.table[:len(in.table)-1]), maxErrnoTable)
	if err != nil {
		in.errs = nil
		return
	}
	in.errs = parseErrnoTable(in.sys, b)
}

// Lookup returns the errno injected for path.
func (in *ErrnoTable) Lookup(path string) (unix.Errno, bool) {
	if len(in.errs) == 0 {
		return 0, false
	}
	e, ok := in.errs[path]
	return e, ok
}

func parseErrnoTable(sys string, b []byte) map[string]unix.Errno {
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
