package topology

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// Lister re-lists class/infiniband every poll without allocating: it keeps
// the directory open, rewinds it, and compares the raw directory entries
// with the names of the last discovery. Both sysfs (kernfs) and tmpfs
// regenerate a directory's entries after a rewind.
type Lister struct {
	dir   string
	fd    int
	buf   []byte
	known map[string]bool
	// unusable are entries the last discovery listed but could not use (a
	// dangling or looping symlink), by name, with what the entry was when
	// first listed after that (its inode and link target; nil before):
	// they are not new devices at every listing, only when the entry
	// itself changes.
	unusable map[string]*entrySig
	linkBuf  []byte
}

// entrySig is what a directory entry was: its inode and, for a link, its
// target (a link removed and made again may get the same inode back).
type entrySig struct {
	ino    uint64
	target string
}

// NewLister prepares a lister for dir; it opens the directory lazily.
func NewLister(dir string) *Lister {
	return &Lister{dir: dir, fd: -1, buf: make([]byte, 32<<10), known: map[string]bool{}, unusable: map[string]*entrySig{},
		linkBuf: make([]byte, 4096)}
}

// SetKnown records the names the last discovery found (wanted ones only).
func (l *Lister) SetKnown(names []string) {
	clear(l.known)
	for _, n := range names {
		l.known[n] = true
	}
}

// SetUnusable records the entries the last discovery listed but could not
// describe. Changed reports them only when the entry is replaced (another
// inode), so one broken entry does not cost a rediscovery and a warning at
// every poll; a caller that wants to notice a dangling link's target
// appearing rediscovers now and then (Unusable says whether to).
func (l *Lister) SetUnusable(names []string) {
	old := l.unusable
	l.unusable = make(map[string]*entrySig, len(names))
	for _, n := range names {
		l.unusable[n] = old[n]
	}
}

// Unusable is the number of entries recorded by SetUnusable.
func (l *Lister) Unusable() int { return len(l.unusable) }

// Close releases the directory.
func (l *Lister) Close() {
	if l.fd >= 0 {
		unix.Close(l.fd)
		l.fd = -1
	}
}

// Changed reports whether the wanted entries of the directory differ from
// the known names. An error means the listing is incomplete: callers must
// not take it as evidence that a device disappeared.
func (l *Lister) Changed(f Filter) (bool, error) {
	if l.fd < 0 {
		fd, err := unix.Open(l.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return false, fmt.Errorf("list %s: %w", l.dir, err)
		}
		l.fd = fd
	}
	if _, err := unix.Seek(l.fd, 0, 0); err != nil {
		l.Close()
		return false, fmt.Errorf("list %s: %w", l.dir, err)
	}
	seen := 0
	changed := false
	for {
		n, err := unix.Getdents(l.fd, l.buf)
		if err != nil {
			// The directory itself went away (a container's sysfs was
			// unmounted); reopen next time.
			l.Close()
			return false, fmt.Errorf("list %s: %w", l.dir, err)
		}
		if n <= 0 {
			break
		}
		b := l.buf[:n]
		for len(b) >= 19 {
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return false, fmt.Errorf("list %s: malformed directory entry", l.dir)
			}
			entIno := binary.NativeEndian.Uint64(b[0:8])
			name := b[19:reclen]
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			b = b[reclen:]
			if len(name) == 0 || (name[0] == '.' && (len(name) == 1 || (len(name) == 2 && name[1] == '.'))) {
				continue
			}
			if l.known[string(name)] {
				seen++
			} else if sig, ok := l.unusable[string(name)]; ok {
				target := l.linkBuf[:0]
				if n, err := unix.Readlinkat(l.fd, string(name), l.linkBuf); err == nil {
					target = l.linkBuf[:n]
				}
				switch {
				case sig == nil:
					l.unusable[string(name)] = &entrySig{ino: entIno, target: string(target)}
				case sig.ino != entIno || sig.target != string(target):
					changed = true
				}
			} else if f.wantedBytes(name) {
				changed = true
			}
		}
	}
	return changed || seen != len(l.known), nil
}

func (f Filter) wantedBytes(name []byte) bool {
	if len(f.IncludeOverride) > 0 {
		for _, re := range f.IncludeOverride {
			if re.Match(name) {
				return true
			}
		}
		return false
	}
	for _, re := range f.Exclude {
		if re.Match(name) {
			return false
		}
	}
	return true
}
