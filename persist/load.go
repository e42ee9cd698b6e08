package persist

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// maxStateBytes bounds what Load reads. A real state file of the largest
// node shape is well under a megabyte; anything near this size is not a
// state file and must not make the daemon allocate without bound.
const maxStateBytes = 64 << 20

// CorruptSuffix is appended to the state file's path to keep an unusable
// file for forensics instead of overwriting it with the fresh state.
const CorruptSuffix = ".corrupt"

// ErrNewerSchema is matched (errors.Is) by the error Load returns for a
// state file written by a newer nichealthd.
var ErrNewerSchema = errors.New("state file schema is newer than this nichealthd")

// NewerSchemaError says which file and which version were refused.
type NewerSchemaError struct {
	Path    string
	Version int64
}

func (e *NewerSchemaError) Error() string {
	return fmt.Sprintf("state file %s has schema version %d, newer than this nichealthd understands (%d); "+
		"refusing to overwrite it: upgrade nichealthd or move the file away", e.Path, e.Version, SchemaVersion)
}

// Is lets errors.Is(err, ErrNewerSchema) hold.
func (e *NewerSchemaError) Is(target error) bool { return target == ErrNewerSchema }

// LoadStatus says what Load found on disk.
type LoadStatus int

const (
	// LoadFresh: no state file; the daemon starts with empty state.
	LoadFresh LoadStatus = iota
	// LoadCorrupt: the file could not be used (unparseable, wrong shape);
	// it was moved to <path>.corrupt and the daemon starts with empty
	// state. Seed 6.6: "starts with empty state ... A warning is logged".
	LoadCorrupt
	// LoadLoaded: the file was read; entries that failed validation were
	// dropped and are listed in Report.Dropped.
	LoadLoaded
)

func (s LoadStatus) String() string {
	switch s {
	case LoadFresh:
		return "fresh"
	case LoadCorrupt:
		return "corrupt"
	case LoadLoaded:
		return "loaded"
	}
	return fmt.Sprintf("LoadStatus(%d)", int(s))
}

// Report is everything Load learned, for the one warning the caller logs.
type Report struct {
	Status LoadStatus
	// Reason says why a Corrupt file could not be used.
	Reason string
	// Preserved is where a Corrupt file was kept ("" when it could not be
	// moved; Reason then says why).
	Preserved string
	// Dropped lists, sorted, each entry of a Loaded file that failed
	// validation and was discarded, with the reason.
	Dropped []string
}

// Load reads the state file at path. Outcomes:
//   - (state, LoadLoaded, nil): the file was read (see LoadDetailed for the
//     entries validation dropped);
//   - (empty state, LoadFresh, nil): there is no file;
//   - (empty state, LoadCorrupt, nil): the file was unusable and was moved
//     to path+CorruptSuffix;
//   - (nil, _, err): the file could not be read (permissions, a directory
//     in its place) or was written by a newer nichealthd (ErrNewerSchema);
//     the daemon must not start, because saving would destroy it.
//
// A version of 0 or a missing version is read as version 1 (files written
// by the seed's implementation) and migrated to sections. The returned
// state never has a nil section map.
func Load(path string) (*State, LoadStatus, error) {
	st, rep, _, err := load(path)
	return st, rep.Status, err
}

// LoadDetailed is Load with the full Report, so that the caller can log the
// corrupt reason and the dropped entries.
func LoadDetailed(path string) (*State, Report, error) {
	st, rep, _, err := load(path)
	return st, rep, err
}

// load also returns the bytes it read so that a Store can skip a first
// save that would rewrite identical content.
func load(path string) (*State, Report, []byte, error) {
	raw, err := readBounded(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return NewState(""), Report{Status: LoadFresh}, nil, nil
	case errors.Is(err, errTooLarge), errors.Is(err, errNotRegular):
		return corrupt(path, err.Error())
	case err != nil:
		return nil, Report{}, nil, fmt.Errorf("read state file %s: %w (make it readable by the user nichealthd runs as, or move it away to start fresh)", path, err)
	}
	st, dropped, reason, err := decode(path, raw)
	if err != nil {
		return nil, Report{}, nil, err
	}
	if reason != "" {
		return corrupt(path, reason)
	}
	return st, Report{Status: LoadLoaded, Dropped: dropped}, raw, nil
}

var errTooLarge = fmt.Errorf("file is larger than %d bytes", maxStateBytes)

var errNotRegular = errors.New("not a regular file")

// readBounded reads the state file without blocking on a FIFO (non-blocking
// open, type checked on the open file) and without reading more than the
// largest plausible state. A directory stays an error to fix, not a file
// to set aside.
func readBounded(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
		return nil, fmt.Errorf("%w (%s)", errNotRegular, fi.Mode().Type())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxStateBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxStateBytes {
		return nil, errTooLarge
	}
	return b, nil
}

// corrupt moves the unusable file aside rather than letting the next save
// overwrite it: whoever investigates a lost latch needs the original bytes.
func corrupt(path, reason string) (*State, Report, []byte, error) {
	rep := Report{Status: LoadCorrupt, Reason: reason}
	dst := path + CorruptSuffix
	if err := os.Rename(path, dst); err != nil {
		rep.Reason += fmt.Sprintf(" (could not keep it as %s: %v)", dst, err)
	} else {
		rep.Preserved = dst
		_ = SyncDir(dirOf(path))
	}
	return NewState(""), rep, nil, nil
}

// decode parses and validates raw. A non-empty reason means the whole file
// is unusable; err is reserved for ErrNewerSchema.
func decode(path string, raw []byte) (st *State, dropped []string, reason string, err error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return nil, nil, "file is empty", nil
	}
	if trimmed[0] != '{' {
		return nil, nil, "file is not a JSON object", nil
	}
	// The version is probed on its own first so that a newer schema is
	// recognised even when the rest of the file no longer fits ours.
	var probe struct {
		Version json.RawMessage `json:"version"`
	}
	if e := json.Unmarshal(trimmed, &probe); e != nil {
		return nil, nil, "invalid JSON: " + e.Error(), nil
	}
	ver, why := parseVersion(probe.Version)
	if why != "" {
		return nil, nil, why, nil
	}
	if ver > SchemaVersion {
		return nil, nil, "", &NewerSchemaError{Path: path, Version: ver}
	}
	var s State
	if ver < 2 {
		if why := migrateV1(trimmed, &s); why != "" {
			return nil, nil, why, nil
		}
	} else if e := json.Unmarshal(trimmed, &s); e != nil {
		return nil, nil, "does not match the state schema: " + e.Error(), nil
	}
	s.Version = SchemaVersion
	if s.Checks == nil {
		s.Checks = map[string]json.RawMessage{}
	}
	dropped = s.validate()
	return &s, dropped, "", nil
}

// migrateV1 reads a version 1 file: the envelope as it is, and each
// check's top-level keys gathered into its section.
func migrateV1(raw []byte, s *State) string {
	var top map[string]json.RawMessage
	if e := json.Unmarshal(raw, &top); e != nil {
		return "does not match the state schema: " + e.Error()
	}
	if e := json.Unmarshal(raw, s); e != nil {
		return "does not match the state schema: " + e.Error()
	}
	s.Checks = map[string]json.RawMessage{}
	for _, ls := range legacySections {
		sec := map[string]json.RawMessage{}
		for _, k := range ls.keys {
			if v, ok := top[k]; ok && string(v) != "null" {
				sec[k] = v
			}
		}
		if len(sec) == 0 {
			continue
		}
		sec["version"] = json.RawMessage("1")
		b, err := json.Marshal(sec)
		if err != nil {
			return "section " + ls.section + ": " + err.Error()
		}
		s.Checks[ls.section] = b
	}
	return ""
}

// parseVersion reads the raw version; missing/null/0 mean 1.
func parseVersion(raw json.RawMessage) (int64, string) {
	t := strings.TrimSpace(string(raw))
	if t == "" || t == "null" {
		return 1, "" // the seed's files carry no version: the flat layout
	}
	if v, err := strconv.ParseInt(t, 10, 64); err == nil {
		if v < 0 {
			return 0, fmt.Sprintf("version %d is negative", v)
		}
		if v == 0 {
			return 1, ""
		}
		return v, ""
	}
	// A non-integer number: still honour "newer" so that 2.5 or 1e9 is not
	// overwritten, but a fractional version we understand is nonsense.
	if f, err := strconv.ParseFloat(t, 64); err == nil {
		if f > SchemaVersion {
			if f > float64(1<<62) {
				return 1 << 62, ""
			}
			return int64(f) + 1, "" // 2.5 is above 2
		}
		return 0, fmt.Sprintf("version %s is not a whole number", t)
	}
	return 0, fmt.Sprintf("version %s is not a number", t)
}

// validate checks the envelope. What is inside the sections is the checks'
// to validate when they restore it.
func (s *State) validate() []string {
	var dropped []string
	s.BootID = strings.ToLower(strings.TrimSpace(s.BootID))
	if s.BootID != "" && !validBootID(s.BootID) {
		// Without a trustworthy boot ID the stored observations cannot be
		// tied to this boot; ApplyBoot then treats the state as fresh.
		dropped = append(dropped, fmt.Sprintf("boot_id %q: not a UUID", s.BootID))
		s.BootID = ""
	}
	for name, raw := range s.Checks {
		if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
			dropped = append(dropped, fmt.Sprintf("checks[%q]: not a JSON object", name))
			delete(s.Checks, name)
		}
	}
	sort.Strings(dropped)
	return dropped
}
