package regularfile

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// Read reads path, refusing anything that is not a regular file (a
// symlink to one is followed) or holds more than limit bytes. The open
// does not block (O_NONBLOCK) and the type is checked on the open file, so
// a swap between check and read cannot slip a FIFO in. Errors name path.
func Read(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, fi.Mode().Type())
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s holds %d bytes, more than the %d expected", path, fi.Size(), limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s grew beyond %d bytes while being read", path, limit)
	}
	return b, nil
}
