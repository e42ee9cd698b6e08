package persist

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// tempInfix marks WriteFileAtomic's temporary files: "<name>.tmp-<random>".
const tempInfix = ".tmp-"

// Save writes st to path atomically and durably (see WriteFileAtomic). It
// always writes the current SchemaVersion. Errors name the path and say how
// to fix the cause; the previous file is then left as it was.
func Save(path string, st *State) error {
	b, err := Encode(st)
	if err != nil {
		return fmt.Errorf("save state file %s: %w", path, err)
	}
	if err := WriteFileAtomic(path, b, 0o600); err != nil {
		return saveError("save state file", path, err)
	}
	return nil
}

// Encode is the exact byte form Save writes: indented JSON (operators read
// this file) with map keys sorted by encoding/json, so equal states encode
// to equal bytes.
func Encode(st *State) ([]byte, error) {
	c, err := encodeCompact(st)
	if err != nil {
		return nil, err
	}
	return indent(c), nil
}

// encodeCompact is the form SaveIfChanged compares each poll; indenting
// costs as much again as encoding, so it is done only for a real write.
func encodeCompact(st *State) ([]byte, error) {
	if st == nil {
		return nil, errors.New("nil state")
	}
	c := *st
	c.Version = SchemaVersion
	b, err := json.Marshal(&c)
	if err != nil {
		return nil, fmt.Errorf("encode state: %w", err)
	}
	return b, nil
}

func indent(compact []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(compact) * 3 / 2)
	// Indent cannot fail on json.Marshal output.
	_ = json.Indent(&buf, compact, "", "  ")
	buf.WriteByte('\n')
	return buf.Bytes()
}

// Store is the state file of one daemon: its path and the compact
// encoding of what it last wrote or read, so that an unchanged state is
// not rewritten on every poll. It is safe for concurrent use.
type Store struct {
	path string

	mu   sync.Mutex
	last []byte // compact JSON
}

// NewStore returns a Store for path. Nothing is read or written yet.
func NewStore(path string) *Store { return &Store{path: path} }

// Path is the state file's path.
func (s *Store) Path() string { return s.path }

// Load is LoadDetailed for the Store's path. It also removes temporary
// files an interrupted save left behind (a SIGKILL between create and
// rename), and remembers what it read so that SaveIfChanged skips an
// identical first save.
func (s *Store) Load() (*State, Report, error) {
	CleanTemps(s.path)
	st, rep, raw, err := load(s.path)
	var c bytes.Buffer
	if raw != nil && json.Compact(&c, raw) == nil {
		s.mu.Lock()
		s.last = c.Bytes()
		s.mu.Unlock()
	}
	return st, rep, err
}

// SaveIfChanged saves st unless it encodes to the bytes last saved or
// loaded. Outcomes:
//   - (false, nil): unchanged, nothing written;
//   - (true, nil): written and durable;
//   - (false, err): not written; the previous file is intact and no
//     temporary file remains. The caller keeps monitoring and calls again
//     next poll, which retries the write.
func (s *Store) SaveIfChanged(st *State) (bool, error) {
	c, err := encodeCompact(st)
	if err != nil {
		return false, fmt.Errorf("save state file %s: %w", s.path, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last != nil && bytes.Equal(c, s.last) {
		return false, nil
	}
	if err := WriteFileAtomic(s.path, indent(c), 0o600); err != nil {
		return false, saveError("save state file", s.path, err)
	}
	s.last = c
	return true, nil
}

// Save writes st unconditionally (shutdown, operator actions).
func (s *Store) Save(st *State) error {
	c, err := encodeCompact(st)
	if err != nil {
		return fmt.Errorf("save state file %s: %w", s.path, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := WriteFileAtomic(s.path, indent(c), 0o600); err != nil {
		return saveError("save state file", s.path, err)
	}
	s.last = c
	return nil
}

// WriteFileAtomic replaces path with data so that, whatever happens (crash,
// power loss, full disk), path holds either the old or the new content in
// full: it writes a new file in the same directory (O_EXCL, perm), fsyncs
// it, renames it over path and fsyncs the directory so the rename itself
// is durable. On error the temporary file is removed.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return writeFileAtomic(osFS{}, path, data, perm)
}

// fileSystem is every disk operation of writeFileAtomic. The order of the
// calls is the durability argument (the data is on disk before the name
// points at it; the new name is on disk before the save returns) and no
// test of file contents can see it, since only a power cut tells the
// orders apart; a test substitutes an implementation that records it.
type fileSystem interface {
	CreateExclusive(name string, perm os.FileMode) (syncFile, error)
	Rename(oldpath, newpath string) error
	Remove(name string) error
	SyncDir(dir string) error
}

// syncFile is the part of *os.File that writeFileAtomic uses.
type syncFile interface {
	Write(b []byte) (int, error)
	Sync() error
	Close() error
}

// osFS is the real file system.
type osFS struct{}

func (osFS) CreateExclusive(name string, perm os.FileMode) (syncFile, error) {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (osFS) Rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }
func (osFS) Remove(name string) error             { return os.Remove(name) }
func (osFS) SyncDir(dir string) error             { return SyncDir(dir) }

// createTemp creates a fresh temporary file beside path, trying another
// random name when one is taken.
func createTemp(fsys fileSystem, path string, perm os.FileMode) (syncFile, string, error) {
	for try := 1; ; try++ {
		tmp := path + tempInfix + strconv.FormatUint(rand.Uint64(), 36)
		f, err := fsys.CreateExclusive(tmp, perm)
		if err == nil {
			return f, tmp, nil
		}
		if !errors.Is(err, fs.ErrExist) || try == 10 {
			return nil, "", err
		}
	}
}

func writeFileAtomic(fsys fileSystem, path string, data []byte, perm os.FileMode) error {
	dir := dirOf(path)
	f, tmp, err := createTemp(fsys, path, perm)
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			fsys.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := fsys.Rename(tmp, path); err != nil {
		return err
	}
	ok = true
	return fsys.SyncDir(dir)
}

// SyncDir fsyncs a directory so that entries created or renamed in it
// survive a crash. Filesystems that cannot sync directories are tolerated.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

// CleanTemps removes temporary files WriteFileAtomic left next to path when
// the process died mid-write. Errors are ignored: a leftover costs bytes,
// not correctness.
func CleanTemps(path string) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	prefix := base + tempInfix
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) && e.Type().IsRegular() {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

func dirOf(path string) string {
	d := filepath.Dir(path)
	if d == "" {
		return "."
	}
	return d
}

// saveError wraps err with the path and the fix an operator needs; the
// errno stays matchable with errors.Is.
func saveError(what, path string, err error) error {
	if h := FixHint(dirOf(path), err); h != "" {
		return fmt.Errorf("%s %s: %w (%s)", what, path, err, h)
	}
	return fmt.Errorf("%s %s: %w", what, path, err)
}

// FixHint says what an operator should do about a write error in dir, or
// "" when there is nothing specific to say.
func FixHint(dir string, err error) string {
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return fmt.Sprintf("the filesystem holding %s is full: free space there; monitoring continues and the write is retried", dir)
	case errors.Is(err, syscall.EROFS):
		return fmt.Sprintf("the filesystem holding %s is read-only: remount it read-write or move the state directory to a writable one", dir)
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return fmt.Sprintf("permission denied: %s must be writable by the user nichealthd runs as (the unit's StateDirectory= sets this up)", dir)
	case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ENOTDIR):
		return fmt.Sprintf("the directory %s does not exist: create it or point the state file elsewhere", dir)
	}
	return ""
}
