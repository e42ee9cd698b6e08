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

// Open is Read for a reader that streams the file: the same checks on the
// open file, and a read past limit bytes (a file that grows while read)
// fails with an error naming path. The caller closes it.
func Open(path string, limit int64) (io.ReadCloser, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, fi.Mode().Type())
	}
	if fi.Size() > limit {
		f.Close()
		return nil, fmt.Errorf("%s holds %d bytes, more than the %d expected", path, fi.Size(), limit)
	}
	return &limited{f: f, path: path, left: limit}, nil
}

type limited struct {
	f    *os.File
	path string
	left int64
}

func (l *limited) Read(p []byte) (int, error) {
	if l.left <= 0 {
		// One byte more tells a file that grew from one that ends here.
		var one [1]byte
		if n, _ := l.f.Read(one[:]); n > 0 {
			return 0, fmt.Errorf("%s grew beyond its limit while being read", l.path)
		}
		return 0, io.EOF
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.f.Read(p)
	l.left -= int64(n)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("read %s: %w", l.path, err)
	}
	return n, err
}

func (l *limited) Close() error { return l.f.Close() }
