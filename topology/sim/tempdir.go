package sim

import (
	"fmt"
	"os"
	"syscall"
)

// TempDirEnv names a directory in which MkdirTemp creates host trees,
// overriding its choice.
const TempDirEnv = "NICHEALTH_SIM_TMPDIR"

const (
	tmpfsMagic   = 0x01021994
	minShmFreeMB = 1024 // xxl takes ~100 MB on tmpfs; keep well clear of small /dev/shm mounts
)

// MkdirTemp creates a fresh directory for a host tree and returns its path.
// Building is bound by inode creation, which costs about ten times more on
// a disk filesystem than in RAM (dgx-h100: ~45 ms on tmpfs, several hundred
// ms on a busy ext4), so it prefers, in order:
//   - $NICHEALTH_SIM_TMPDIR when set;
//   - /dev/shm when it is a tmpfs with at least 1 GiB free;
//   - os.TempDir().
//
// The caller removes the directory (os.RemoveAll) when done.
func MkdirTemp(pattern string) (string, error) {
	base := os.Getenv(TempDirEnv)
	if base == "" {
		base = os.TempDir()
		var st syscall.Statfs_t
		if err := syscall.Statfs("/dev/shm", &st); err == nil && st.Type == tmpfsMagic &&
			st.Bavail*uint64(st.Bsize) >= minShmFreeMB<<20 && syscall.Access("/dev/shm", 2 /* W_OK */) == nil {
			base = "/dev/shm"
		}
	}
	dir, err := os.MkdirTemp(base, pattern)
	if err != nil {
		return "", fmt.Errorf("create a directory for a simulated host under %s: %w (set %s to a writable directory)", base, err, TempDirEnv)
	}
	return dir, nil
}
