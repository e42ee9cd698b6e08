package outbox

import (
	"os"
	"syscall"
)

// datasync flushes a segment's data and the size that makes it readable;
// the timestamps fsync would add are of no use to a reader.
func datasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
