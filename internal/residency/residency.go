package residency

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Range is one mapping of the executable, [Start, End).
type Range struct{ Start, End uintptr }

// maxMaps bounds what is read of /proc/self/maps: a Go daemon has a few
// dozen mappings (a few KiB); a process with more is not one to advise.
const maxMaps = 1 << 20

// ErrUnsupported says the kernel has no MADV_PAGEOUT (before Linux 5.4):
// nothing was reclaimed and nothing else changed.
var ErrUnsupported = errors.New("the kernel cannot reclaim a mapping's pages on request (MADV_PAGEOUT, Linux 5.4)")

// Release advises the kernel that the mappings of the running executable
// are read at random (MADV_RANDOM: no read-ahead when a page faults back
// in) and reclaims their resident pages now (MADV_PAGEOUT). Outcomes:
//   - (n, nil): n bytes of mappings were advised;
//   - (0, ErrUnsupported): the kernel lacks MADV_PAGEOUT; nothing changed;
//   - (0, err): /proc/self/exe or /proc/self/maps could not be read.
//
// Only file-backed pages are reclaimed: a page the process wrote (its
// data) is anonymous and stays. The cost is a page fault that reads a
// page from the page cache or the disk, once, for each page of code that
// runs again.
func Release() (int64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, fmt.Errorf("read /proc/self/exe: %w", err)
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, fmt.Errorf("open /proc/self/maps: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxMaps+1))
	if err != nil {
		return 0, fmt.Errorf("read /proc/self/maps: %w", err)
	}
	if len(b) > maxMaps {
		return 0, fmt.Errorf("read /proc/self/maps: more than %d bytes", maxMaps)
	}
	var n int64
	for _, r := range Executable(b, exe) {
		size := r.End - r.Start
		// MADV_RANDOM first: the pages reclaimed next then fault back one
		// at a time instead of with a read-ahead window around them.
		if err := madvise(r, unix.MADV_RANDOM); err != nil {
			return n, fmt.Errorf("madvise %#x-%#x MADV_RANDOM: %w", r.Start, r.End, err)
		}
		if err := madvise(r, unix.MADV_PAGEOUT); err != nil {
			if errors.Is(err, unix.EINVAL) {
				return n, ErrUnsupported
			}
			return n, fmt.Errorf("madvise %#x-%#x MADV_PAGEOUT: %w", r.Start, r.End, err)
		}
		n += int64(size)
	}
	return n, nil
}

func madvise(r Range, advice int) error {
	// unix.Madvise takes a []byte; the mappings are the executable's own,
	// addressed by number, so the raw call says what happens.
	_, _, errno := unix.Syscall(unix.SYS_MADVISE, r.Start, r.End-r.Start, uintptr(advice))
	if errno != 0 {
		return errno
	}
	return nil
}

// Executable returns the mappings of maps (the format of
// /proc/<pid>/maps: "start-end perms offset dev inode path") whose path
// is exe, in order. Lines it cannot read are skipped: a line it
// misreads would at worst advise a range of the process's own.
func Executable(maps []byte, exe string) []Range {
	var out []Range
	sc := bufio.NewScanner(bytes.NewReader(maps))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		// A path with spaces splits into several fields; the executable's
		// is compared whole.
		if len(f) < 6 || strings.Join(f[5:], " ") != exe {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		s, err1 := strconv.ParseUint(lo, 16, 64)
		e, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || e <= s || s%uint64(os.Getpagesize()) != 0 {
			continue
		}
		out = append(out, Range{Start: uintptr(s), End: uintptr(e)})
	}
	return out
}
