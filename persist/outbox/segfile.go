package outbox

import "os"

// segmentFile is the append handle of the newest segment.
type segmentFile interface {
	Write(b []byte) (int, error)
	// Datasync makes what was written durable: the data and the size
	// that makes it readable.
	Datasync() error
	Truncate(size int64) error
	Stat() (os.FileInfo, error)
	Close() error
}

// segmentOpener opens a segment for appending, creating it when create
// is set. The order of the calls on what it returns (every record's
// bytes, then their data sync, before Append returns) is the durability
// argument, and no test of file contents can see it: only a power cut
// tells an append that was synced from one that was not. So the
// package's tests substitute an opener that records the calls
// (Options.files); the daemon always gets osSegments.
type segmentOpener interface {
	OpenAppend(path string, create bool) (segmentFile, error)
}

// osSegments opens the real files.
type osSegments struct{}

func (osSegments) OpenAppend(path string, create bool) (segmentFile, error) {
	flags := os.O_WRONLY | os.O_APPEND
	if create {
		flags |= os.O_CREATE
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if err != nil {
		return nil, err
	}
	return osSegment{f}, nil
}

// osSegment is a segment file on disk.
type osSegment struct{ *os.File }

func (f osSegment) Datasync() error { return datasync(f.File) }
