package persist

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

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

	mu   sync.Mutex
	last []byte
}

// maxCrossBootBytes bounds a read: the expected inventory of the largest
// node is a few tens of kilobytes.
const maxCrossBootBytes = 4 << 20

// NewCrossBootFile returns the file at path; nothing is read yet.
func NewCrossBootFile(path string) *CrossBootFile { return &CrossBootFile{path: path} }

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
//     retries later.
func (f *CrossBootFile) SaveIfChanged(b []byte) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.last != nil && bytes.Equal(b, f.last) {
		return false, nil
	}
	if err := WriteFileAtomic(f.path, b, 0o600); err != nil {
		return false, saveError("save", f.path, err)
	}
	f.last = append([]byte(nil), b...)
	return true, nil
}
