package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// /proc/locks as the kernel prints it: the daemon's flock on the lock
// file (device fe:00, inode 9978594) is what says it is alive; a waiter,
// a POSIX lock or a flock on another inode says nothing.
func TestLiveness_MatchLock(t *testing.T) {
	const ino = 9978594
	isDaemon := func(pid int) bool { return pid == 77 }
	cases := []struct {
		name  string
		locks string
		want  daemonLock
		pid   int
	}{
		{"held", "1: POSIX  ADVISORY  WRITE 12 fe:00:1 0 EOF\n2: FLOCK  ADVISORY  WRITE 4242 fe:00:9978594 0 EOF\n", lockHeld, 4242},
		{"nobody", "1: FLOCK  ADVISORY  WRITE 4242 fe:00:123 0 EOF\n", lockFree, 0},
		{"empty table", "", lockFree, 0},
		{"only a waiter", "1: -> FLOCK  ADVISORY  WRITE 4243 fe:00:9978594 0 EOF\n", lockFree, 0},
		{"a POSIX lock on it", "1: POSIX  ADVISORY  WRITE 4242 fe:00:9978594 0 EOF\n", lockFree, 0},
		{"another device, not the daemon", "1: FLOCK  ADVISORY  WRITE 4242 00:2f:9978594 0 EOF\n", lockFree, 0},
		// overlayfs records the lock against the upper layer's device.
		{"another device, the daemon", "1: FLOCK  ADVISORY  WRITE 77 00:2f:9978594 0 EOF\n", lockHeld, 77},
		{"garbage", "FLOCK\n1: FLOCK ADVISORY WRITE x fe:00:9978594 0 EOF\n1: FLOCK ADVISORY WRITE 1 zz:00:9978594 0 EOF\n", lockFree, 0},
	}
	for _, c := range cases {
		got, pid := matchLock(strings.NewReader(c.locks), 0xfe, 0, ino, isDaemon)
		if got != c.want || pid != c.pid {
			t.Errorf("%s: %v pid %d, want %v pid %d", c.name, got, pid, c.want, c.pid)
		}
	}
}

// The probe on this kernel: a lock file nobody holds, then held by this
// process, then a state directory without one.
func TestLiveness_ProbeOnThisKernel(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	if got, _ := probeDaemonLock(state, "/proc"); got != lockNeverTaken {
		t.Fatalf("no lock file: %v", got)
	}
	must(t, os.MkdirAll(filepath.Dir(outboxLockPath(state)), 0o700))
	f, err := os.Create(outboxLockPath(state))
	must(t, err)
	defer f.Close()
	if got, _ := probeDaemonLock(state, "/proc"); got != lockFree {
		t.Fatalf("a lock file nobody holds: %v", got)
	}
	must(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
	if got, pid := probeDaemonLock(state, "/proc"); got != lockHeld || pid != os.Getpid() {
		t.Fatalf("held by pid %d: %v pid %d", os.Getpid(), got, pid)
	}
}

// FuzzMatchLock: whatever /proc/locks holds, the probe never panics and
// calls a lock held only when a FLOCK line names the inode.
func FuzzMatchLock(f *testing.F) {
	f.Add("1: FLOCK  ADVISORY  WRITE 4242 fe:00:9978594 0 EOF\n", uint64(9978594))
	f.Add("1: -> FLOCK  ADVISORY  WRITE 4243 fe:00:9978594 0 EOF\n2: POSIX ADVISORY READ 1 fe:00:1 0 EOF\n", uint64(1))
	f.Add("1: OFDLCK ADVISORY WRITE -1 00:2f:77 0 EOF\n", uint64(77))
	f.Add("\x00\xff:::\n", uint64(0))
	f.Fuzz(func(t *testing.T, locks string, ino uint64) {
		got, pid := matchLock(strings.NewReader(locks), 0xfe, 0, ino, func(int) bool { return false })
		if got == lockHeld && !strings.Contains(locks, "FLOCK") {
			t.Fatalf("held without a FLOCK line: %q", locks)
		}
		if pid < 0 || (got != lockHeld && pid != 0) {
			t.Fatalf("%v pid %d", got, pid)
		}
	})
}
