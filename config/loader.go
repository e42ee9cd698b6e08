package config

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nichealth/nichealthd/internal/regularfile"
)

// Load reads and validates path. A missing file at the default path is the
// built-in defaults (a fresh package install has one, but an operator may
// delete it); a missing file anywhere else is an error, because a typo in
// --config must not silently run with defaults.
func Load(path string) (*Config, error) {
	var l Loader
	return l.Load(path)
}

// Loader loads the configuration as Load does, for a process that loads
// it again and again (the daemon's reloads). A read that hangs (a hung
// network filesystem) is abandoned after the deadline but stays pending,
// and the next Load of the same file waits on that read instead of
// starting another: each read blocked in the kernel holds an OS thread,
// and a reload every second would otherwise end in thread exhaustion.
// The zero value is ready; it is safe for concurrent use.
type Loader struct {
	// Deadline bounds how long Load waits for the file (0: 5 s).
	Deadline time.Duration

	files regularfile.Joined
}

// Load reads and validates path (see the package-level Load).
func (l *Loader) Load(path string) (*Config, error) {
	deadline := l.Deadline
	if deadline <= 0 {
		deadline = readDeadline
	}
	b, err := l.read(path, deadline)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && path == DefaultPath {
			b = nil
		} else {
			return nil, &Error{File: path, Reason: fmt.Sprintf("cannot read: %v", err)}
		}
	}
	return Parse(path, b)
}

// Bounds on reading the configuration file.
const (
	maxConfigBytes = 1 << 20
	readDeadline   = 5 * time.Second
)

// read reads a configuration file that anyone with write access to
// its directory may have replaced: only a regular file (or a symlink to
// one, as ConfigMaps are) of at most 1 MiB is read. A FIFO would block the
// read forever and /dev/zero would exhaust memory; the non-blocking open
// and the type check on the open file refuse both at once. A regular file
// on a hung network filesystem is abandoned after deadline, and a read
// still pending from an earlier call is joined (regularfile.Joined).
func (l *Loader) read(path string, deadline time.Duration) ([]byte, error) {
	return l.files.Read(path, maxConfigBytes, deadline)
}
