package persist

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/nichealth/nichealthd/internal/regularfile"
)

// CrossBootFile is a file beside the state file that a reboot does not
// clear: seed 6.5 discards the state at a reboot because the node may have
// come back with other hardware, and telling "other hardware" from
// "hardware missing" needs a memory of what was there (the expected
// inventory of checks/inventory). Its content is its owner's (a check's
// JSON); persist reads it bounded and replaces it as it replaces the
// state file (WriteFileAtomic: never torn, durable before the save
// returns). It is safe for concurrent use.
type CrossBootFile struct {
	path string
	wait time.Duration // how long SaveIfChanged waits for its write

	mu   sync.Mutex
	last []byte
	// writing is closed when the write in progress returns; nil when
	// none is. One write at a time: a hung filesystem holds one
	// goroutine, not one per judgement.
	writing chan struct{}
	werr    error
}

// crossBootWriteWait is how long SaveIfChanged waits for its write. Its
// caller judges on the poll loop, which must not wait on a file outside
// sysfs: a write that takes longer goes on in the background, and the
// caller hears about it at its next save.
const crossBootWriteWait = 250 * time.Millisecond

// maxCrossBootBytes bounds a read: the expected inventory of the largest
// node is a few tens of kilobytes.
const maxCrossBootBytes = 4 << 20

// NewCrossBootFile returns the file at path; nothing is read yet.
func NewCrossBootFile(path string) *CrossBootFile {
	return &CrossBootFile{path: path, wait: crossBootWriteWait}
}

// Path is the file's path.
func (f *CrossBootFile) Path() string { return f.path }

// Load reads the file. Outcomes:
//   - (content, nil): read; SaveIfChanged of the same bytes writes nothing;
//   - (nil, nil): there is no file yet;
//   - (nil, err): unreadable, too large or not a regular file; err names
//     the file. The caller starts without it and the next save replaces
//     it (Quarantine keeps the old one for forensics).
func (f *CrossBootFile) Load() ([]byte, error) {
	CleanTemps(f.path)
	b, err := regularfile.Read(f.path, maxCrossBootBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f.path, err)
	}
	f.mu.Lock()
	f.last = b
	f.mu.Unlock()
	return b, nil
}

// Quarantine moves an unusable file to <path>.corrupt; it returns where
// it went ("" when it could not be moved).
func (f *CrossBootFile) Quarantine() string {
	dst := f.path + CorruptSuffix
	if err := os.Rename(f.path, dst); err != nil {
		return ""
	}
	return dst
}

// SaveIfChanged replaces the file with b unless it holds b already:
//   - (false, nil): unchanged, nothing written;
//   - (true, nil): written and durable;
//   - (false, err): not written, the previous file intact; the caller
//     retries later. This includes a write that has not returned within
//     a quarter of a second (a hung filesystem): it goes on in the
//     background, later calls return at once while it does, and the
//     first call after it returns writes b if it still differs.
func (f *CrossBootFile) SaveIfChanged(b []byte) (bool, error) {
	f.mu.Lock()
	if w := f.writing; w != nil {
		f.mu.Unlock()
		return false, f.stillWriting()
	}
	if f.last != nil && bytes.Equal(b, f.last) {
		f.mu.Unlock()
		return false, nil
	}
	data := append([]byte(nil), b...)
	done := make(chan struct{})
	f.writing = done
	f.mu.Unlock()
	go func() {
		err := WriteFileAtomic(f.path, data, 0o600)
		f.mu.Lock()
		if err == nil {
			f.last = data
		}
		f.werr = err
		f.writing = nil
		f.mu.Unlock()
		close(done)
	}()
	t := time.NewTimer(f.wait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		return false, f.stillWriting()
	}
	f.mu.Lock()
	err := f.werr
	f.mu.Unlock()
	if err != nil {
		return false, saveError("save", f.path, err)
	}
	return true, nil
}

func (f *CrossBootFile) stillWriting() error {
	return fmt.Errorf("save %s: the previous write has not returned (is the filesystem hung?); the file is saved when it answers", f.path)
}
