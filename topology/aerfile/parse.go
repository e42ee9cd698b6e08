package aerfile

import "github.com/nichealth/nichealthd/topology/sysfs"

// Reading is one read of a function's counter files.
type Reading struct {
	Counts  [NumClasses]Counts
	Present [NumClasses]bool
}

// Any reports whether at least one counter file was read.
func (r *Reading) Any() bool { return r.Present[0] || r.Present[1] || r.Present[2] }

// Class is one of the three AER counter files.
type Class int

const (
	Correctable Class = iota
	NonFatal
	Fatal
	NumClasses
)

// Files are the per-function counter files, by class.
var Files = [NumClasses]string{"aer_dev_correctable", "aer_dev_nonfatal", "aer_dev_fatal"}

// RootFiles are the root port's totals of what it received from below.
var RootFiles = [NumClasses]string{"aer_rootport_total_err_cor", "aer_rootport_total_err_nonfatal", "aer_rootport_total_err_fatal"}

var totalNames = [NumClasses]string{"TOTAL_ERR_COR", "TOTAL_ERR_NONFATAL", "TOTAL_ERR_FATAL"}

func (c Class) String() string {
	switch c {
	case Correctable:
		return "correctable"
	case NonFatal:
		return "nonfatal"
	case Fatal:
		return "fatal"
	}
	return "unknown"
}

// Describe is the class as an operator message names it.
func (c Class) Describe() string {
	switch c {
	case NonFatal:
		return "uncorrectable non-fatal errors"
	case Fatal:
		return "uncorrectable fatal errors"
	}
	return "correctable errors"
}

// MaxNames bounds the named counters kept per file: the kernel prints 16
// correctable and 27 uncorrectable names at most (one per AER status
// bit). NameLen bounds a name (the longest, PoisonTLPBlocked, is 16).
const (
	MaxNames = 32
	NameLen  = 24
)

// Counts is one parsed counter file, in fixed arrays so that parsing a
// poll's reading allocates nothing.
type Counts struct {
	names [MaxNames][NameLen]byte
	nlen  [MaxNames]uint8
	vals  [MaxNames]uint64
	N     int
	// Total is the TOTAL_ERR_* line, or the sum of the names when the
	// file has none.
	Total    uint64
	HasTotal bool
}

// Name returns the i-th name; it aliases c.
func (c *Counts) Name(i int) []byte { return c.names[i][:c.nlen[i]] }

// Value returns the i-th value.
func (c *Counts) Value(i int) uint64 { return c.vals[i] }

// Lookup returns the value of name.
func (c *Counts) Lookup(name string) (uint64, bool) {
	for i := 0; i < c.N; i++ {
		if string(c.Name(i)) == name {
			return c.vals[i], true
		}
	}
	return 0, false
}

// Equal reports whether c and o hold the same names and values.
func (c *Counts) Equal(o *Counts) bool {
	if c.N != o.N || c.Total != o.Total || c.HasTotal != o.HasTotal {
		return false
	}
	for i := 0; i < c.N; i++ {
		if c.vals[i] != o.vals[i] || string(c.Name(i)) != string(o.Name(i)) {
			return false
		}
	}
	return true
}

// Malformed-line reasons (constants: reporting one allocates nothing).
const (
	ReasonNoValue    = "line has no value after the name"
	ReasonBadName    = "name is empty, too long or not [A-Za-z0-9_]"
	ReasonBadValue   = "value is not a decimal count that fits 64 bits"
	ReasonTooMany    = "more named counters than any kernel prints"
	ReasonWrongTotal = "TOTAL_ERR_ line of another class"
)

// Parse reads one aer_dev_* file of class cl into c: lines "NAME value",
// the TOTAL_ERR_* line last. Malformed lines are skipped; bad counts them
// and reason says why the first one was (the caller logs it once).
func Parse(b []byte, cl Class, c *Counts) (bad int, reason string) {
	c.N, c.Total, c.HasTotal = 0, 0, false
	var sum uint64
	for len(b) > 0 {
		var line []byte
		line, b = cutLine(b)
		line = trimSpace(line)
		if len(line) == 0 {
			continue
		}
		name, val, why := splitLine(line)
		if why == "" && isTotal(name) {
			if string(name) != totalNames[cl] {
				why = ReasonWrongTotal
			} else {
				c.Total, c.HasTotal = val, true
				continue
			}
		}
		if why == "" && c.N == MaxNames {
			why = ReasonTooMany
		}
		if why != "" {
			if bad == 0 {
				reason = why
			}
			bad++
			continue
		}
		c.nlen[c.N] = uint8(copy(c.names[c.N][:], name))
		c.vals[c.N] = val
		c.N++
		sum += val
	}
	if !c.HasTotal {
		c.Total = sum
	}
	return bad, reason
}

// ParseTotal reads an aer_rootport_total_err_* file: one decimal count.
func ParseTotal(b []byte) (uint64, bool) {
	v, err := sysfs.ParseCounter(b)
	return v, err == nil
}

func splitLine(line []byte) (name []byte, val uint64, why string) {
	i := 0
	for i < len(line) && line[i] != ' ' && line[i] != '\t' {
		i++
	}
	name = line[:i]
	if len(name) == 0 || len(name) > NameLen {
		return nil, 0, ReasonBadName
	}
	for _, ch := range name {
		if !(ch == '_' || ch >= '0' && ch <= '9' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z') {
			return nil, 0, ReasonBadName
		}
	}
	rest := trimSpace(line[i:])
	if len(rest) == 0 {
		return nil, 0, ReasonNoValue
	}
	v, err := sysfs.ParseCounter(rest)
	if err != nil {
		return nil, 0, ReasonBadValue
	}
	return name, v, ""
}

func isTotal(name []byte) bool {
	return len(name) > 10 && string(name[:10]) == "TOTAL_ERR_"
}

func cutLine(b []byte) (line, rest []byte) {
	for i, ch := range b {
		if ch == '\n' {
			return b[:i], b[i+1:]
		}
	}
	return b, nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r' || b[0] == '\n' || b[0] == 0) {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\r' || b[len(b)-1] == '\n' || b[len(b)-1] == 0) {
		b = b[:len(b)-1]
	}
	return b
}
