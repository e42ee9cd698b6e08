package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// daemonLock says whether a nichealthd process holds the lock of the
// outbox beside a state file: the daemon takes it (flock, exclusive) when
// it opens the outbox at start-up and holds it until it exits
// (persist/outbox: "<state dir>/outbox/lock"). It is how the check tells
// a daemon that is alive but unreachable over D-Bus (its bus is down, or
// it runs with [dbus] enabled = false) from one that is not running.
type daemonLock int

const (
	// lockUnknown: the lock file cannot be examined (an unprivileged
	// caller cannot enter the daemon's 0750 state directory, or /proc/locks
	// is unreadable): nothing can be said.
	lockUnknown daemonLock = iota
	// lockFree: the lock file exists and nobody holds it.
	lockFree
	// lockHeld: a process holds it; pid says which (0 when /proc/locks
	// shows none, as for a holder in another PID namespace).
	lockHeld
	// lockNeverTaken: there is no lock file: no daemon has ever run with
	// this state directory.
	lockNeverTaken
)

// outboxLockPath is the lock file of the outbox beside stateFile.
func outboxLockPath(stateFile string) string {
	return filepath.Join(filepath.Dir(stateFile), "outbox", "lock")
}

// probeDaemonLock looks, without taking it, whether someone holds the
// daemon's outbox lock. Taking the lock even for an instant would make a
// daemon starting at that moment fail ("in use by another process"), so
// the kernel's table of locks (/proc/locks, readable by everyone) is read
// instead and matched against the lock file's device and inode.
func probeDaemonLock(stateFile, procRoot string) (daemonLock, int) {
	var st syscall.Stat_t
	switch err := syscall.Stat(outboxLockPath(stateFile), &st); {
	case err == syscall.ENOENT:
		return lockNeverTaken, 0
	case err != nil:
		return lockUnknown, 0
	}
	f, err := os.Open(filepath.Join(procRoot, "locks"))
	if err != nil {
		return lockUnknown, 0
	}
	defer f.Close()
	// A busy host holds a few thousand locks; 4 MiB is far beyond that.
	return matchLock(io.LimitReader(f, 4<<20), uint64(unix.Major(uint64(st.Dev))), uint64(unix.Minor(uint64(st.Dev))), st.Ino,
		func(pid int) bool { return isNichealthd(procRoot, pid) })
}

// matchLock finds a FLOCK on the inode in /proc/locks's text:
//
//	1: FLOCK  ADVISORY  WRITE 4242 fe:00:9978594 0 EOF
//	2: -> FLOCK  ADVISORY  WRITE 4243 fe:00:9978594 0 EOF   (a waiter)
//
// The device is "major:minor" in hex. On overlayfs a lock is recorded
// against the upper layer's device, not the one stat() reports, so an
// entry on the same inode number of another device counts too when its
// holder is a nichealthd.
func matchLock(r io.Reader, major, minor, ino uint64, daemon func(pid int) bool) (daemonLock, int) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || f[1] != "FLOCK" {
			continue // a waiter ("->"), a POSIX or OFD lock
		}
		parts := strings.Split(f[5], ":")
		if len(parts) != 3 {
			continue
		}
		maj, err1 := strconv.ParseUint(parts[0], 16, 32)
		mnr, err2 := strconv.ParseUint(parts[1], 16, 32)
		in, err3 := strconv.ParseUint(parts[2], 10, 64)
		pid, err4 := strconv.Atoi(f[4])
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil || in != ino {
			continue
		}
		if maj == major && mnr == minor || pid > 0 && daemon(pid) {
			return lockHeld, max(pid, 0)
		}
	}
	if sc.Err() != nil {
		return lockUnknown, 0
	}
	return lockFree, 0
}

// isNichealthd reports whether pid's command name is nichealthd.
func isNichealthd(procRoot string, pid int) bool {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "comm"))
	return err == nil && string(bytes.TrimSpace(b)) == "nichealthd"
}
