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
	"time"
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
// by the seed's implementation). The returned state never has nil maps.
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
	if e := json.Unmarshal(trimmed, &s); e != nil {
		return nil, nil, "does not match the state schema: " + e.Error(), nil
	}
	s.Version = SchemaVersion
	dropped = s.validate()
	return &s, dropped, "", nil
}

// parseVersion reads the raw version; missing/null/0 mean 1.
func parseVersion(raw json.RawMessage) (int64, string) {
	t := strings.TrimSpace(string(raw))
	if t == "" || t == "null" {
		return SchemaVersion, ""
	}
	if v, err := strconv.ParseInt(t, 10, 64); err == nil {
		if v < 0 {
			return 0, fmt.Sprintf("version %d is negative", v)
		}
		if v == 0 {
			return SchemaVersion, ""
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
			return int64(f), ""
		}
		return 0, fmt.Sprintf("version %s is not a whole number", t)
	}
	return 0, fmt.Sprintf("version %s is not a number", t)
}

// validate drops entries that no check could have written, so that one bad
// entry (hand edit, bug in an older build) costs that entry, not the file.
func (s *State) validate() []string {
	var dropped []string
	drop := func(format string, a ...any) { dropped = append(dropped, fmt.Sprintf(format, a...)) }

	s.BootID = strings.ToLower(strings.TrimSpace(s.BootID))
	if s.BootID != "" && !validBootID(s.BootID) {
		// Without a trustworthy boot ID the stored observations cannot be
		// tied to this boot; ApplyBoot then treats the state as fresh.
		drop("boot_id %q: not a UUID", s.BootID)
		s.BootID = ""
	}
	if s.CounterSnapshots == nil {
		s.CounterSnapshots = map[string]CounterSnapshot{}
	}
	for k, v := range s.CounterSnapshots {
		if why := checkCounterKey(k); why != "" {
			drop("counter_snapshots[%q]: %s", k, why)
			delete(s.CounterSnapshots, k)
		} else if v.Timestamp.IsZero() {
			// A zero timestamp would make a velocity window look decades
			// long; dropping it only costs a fresh baseline.
			drop("counter_snapshots[%q]: no timestamp", k)
			delete(s.CounterSnapshots, k)
		}
	}
	if s.BreachFlags == nil {
		s.BreachFlags = map[string]BreachFlag{}
	}
	for k := range s.BreachFlags {
		if why := checkCounterKey(k); why != "" {
			drop("breach_flags[%q]: %s", k, why)
			delete(s.BreachFlags, k)
		}
	}
	if s.PortStates == nil {
		s.PortStates = map[string]PortState{}
	}
	for k, v := range s.PortStates {
		nv, why := checkPortState(k, v)
		if why != "" {
			drop("port_states[%q]: %s", k, why)
			delete(s.PortStates, k)
			continue
		}
		s.PortStates[k] = nv
	}
	s.KnownDevices = cleanDevices(s.KnownDevices, "known_devices", drop)
	if s.CardAnomalies == nil {
		s.CardAnomalies = map[string]CardAnomaly{}
	}
	for k, v := range s.CardAnomalies {
		switch {
		case !cleanText(k):
			drop("card_anomalies[%q]: empty or unprintable key", k)
			delete(s.CardAnomalies, k)
		case v.Active < 0 || v.Expected < 0:
			drop("card_anomalies[%q]: negative port count", k)
			delete(s.CardAnomalies, k)
		}
	}
	if s.Saturated == nil {
		s.Saturated = map[string]time.Time{}
	}
	for k := range s.Saturated {
		if why := checkCounterKey(k); why != "" {
			drop("saturated[%q]: %s", k, why)
			delete(s.Saturated, k)
		}
	}
	if len(s.Disappeared) > 0 {
		s.Disappeared = cleanDevices(s.Disappeared, "disappeared", drop)
	}
	sort.Strings(dropped)
	return dropped
}

func cleanDevices(in []string, field string, drop func(string, ...any)) []string {
	out := make([]string, 0, len(in))
	seen := make(map[string]bool, len(in))
	for _, d := range in {
		switch {
		case !validDevice(d):
			drop("%s: %q is not a device name", field, d)
		case seen[d]:
			// Duplicates are harmless; drop them silently.
		default:
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// checkCounterKey validates "<device>:<port>:<counter>" (seed 6.6).
func checkCounterKey(k string) string {
	dev, rest, ok := strings.Cut(k, ":")
	if !ok {
		return "key is not <device>:<port>:<counter>"
	}
	p, counter, ok := strings.Cut(rest, ":")
	if !ok {
		return "key is not <device>:<port>:<counter>"
	}
	if !validDevice(dev) {
		return "bad device name"
	}
	if _, why := parsePort(p); why != "" {
		return why
	}
	if !cleanText(counter) {
		return "empty or unprintable counter name"
	}
	return ""
}

// checkPortState validates a "<device>_<port>" entry against its value and
// fills a device or port the value left out.
func checkPortState(k string, v PortState) (PortState, string) {
	i := strings.LastIndexByte(k, '_')
	if i <= 0 {
		return v, "key is not <device>_<port>"
	}
	dev := k[:i]
	port, why := parsePort(k[i+1:])
	if why != "" {
		return v, why
	}
	if !validDevice(dev) {
		return v, "bad device name"
	}
	if v.Port < 0 {
		return v, "negative port"
	}
	if v.Device == "" {
		v.Device = dev
	}
	if v.Port == 0 {
		v.Port = port
	}
	if v.Device != dev || v.Port != port {
		return v, fmt.Sprintf("key does not match device %q port %d", v.Device, v.Port)
	}
	return v, ""
}

func parsePort(s string) (int, string) {
	if strings.HasPrefix(s, "-") {
		return 0, "negative port"
	}
	if s == "" || s[0] < '0' || s[0] > '9' {
		return 0, "bad port number"
	}
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil {
		return 0, "bad port number"
	}
	return int(n), ""
}

// validDevice accepts kernel IB device names (at most 64 bytes) and rejects
// anything that could escape a sysfs path or break the key formats.
func validDevice(d string) bool {
	if d == "" || len(d) > 64 || d == "." || d == ".." {
		return false
	}
	for i := 0; i < len(d); i++ {
		c := d[i]
		if c <= ' ' || c == 0x7f || c == '/' || c == ':' || c >= 0x80 {
			return false
		}
	}
	return true
}

func cleanText(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for _, r := range s {
		if r < ' ' || r == 0x7f || r == '\uFFFD' {
			return false
		}
	}
	return true
}
