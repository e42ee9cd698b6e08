package kmsg

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Facilities the daemon tells apart. The kernel writes facility 0; a
// record written to /dev/kmsg from user space always gets another one
// (LOG_USER when the writer named none), so facility 0 cannot be forged.
const (
	FacilityKernel = 0
	FacilityUser   = 1
)

// MaxRecord bounds one record, dictionary included: the kernel's own
// buffer for a /dev/kmsg record is CONSOLE_EXT_LOG_MAX, 8 KiB.
const MaxRecord = 8192

// Record is one kernel log record.
type Record struct {
	Facility int
	Level    int // 0 emergency .. 7 debug
	Seq      uint64
	// TS is the kernel's timestamp: time since boot.
	TS time.Duration
	// Flags is the first flag character: '-' for a whole record, 'c' for
	// the first fragment of a line continued by later '+' records (kernels
	// before 4.9 split continued printk lines that way).
	Flags byte
	// Message is the text with the kernel's \xNN escapes decoded (a
	// message may hold newlines and invalid UTF-8 that way).
	Message string
	// Subsystem and Device are the dictionary's SUBSYSTEM= and DEVICE=
	// (e.g. "pci" and "+pci:0000:3b:00.0"); empty without a dictionary.
	Subsystem string
	Device    string
	// Time is the wall-clock time of the record, set by Source from TS
	// (zero from Parse).
	Time time.Time
}

// PCIAddress is the PCI function the dictionary names ("+pci:ADDR"), or "".
func (r *Record) PCIAddress() string {
	if a, ok := cutPrefix(r.Device, "+pci:"); ok {
		return a
	}
	return ""
}

func cutPrefix(s, p string) (string, bool) {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):], true
	}
	return s, false
}

// ErrMalformed is wrapped by every parse error.
var ErrMalformed = errors.New("malformed kmsg record")

// Parse decodes one record: the header line and its dictionary lines.
// Unknown header fields after the flags (a caller id on newer kernels) and
// unknown dictionary keys are ignored.
func Parse(b []byte) (Record, error) {
	var r Record
	semi := bytes.IndexByte(b, ';')
	nl := bytes.IndexByte(b, '\n')
	if semi < 0 || (nl >= 0 && nl < semi) {
		return r, fmt.Errorf("%w: no ';' ends the header", ErrMalformed)
	}
	if err := parseHeader(b[:semi], &r); err != nil {
		return r, err
	}
	rest := b[semi+1:]
	line := rest
	if i := bytes.IndexByte(rest, '\n'); i >= 0 {
		line, rest = rest[:i], rest[i+1:]
	} else {
		rest = nil
	}
	r.Message = unescape(line)
	for len(rest) > 0 {
		line = rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		if len(line) == 0 {
			continue
		}
		if line[0] != ' ' {
			return r, fmt.Errorf("%w: dictionary line %q does not start with a space", ErrMalformed, clip(line))
		}
		k, v, ok := bytes.Cut(line[1:], []byte{'='})
		if !ok {
			continue
		}
		switch string(k) {
		case "SUBSYSTEM":
			r.Subsystem = unescape(v)
		case "DEVICE":
			r.Device = unescape(v)
		}
	}
	return r, nil
}

func parseHeader(h []byte, r *Record) error {
	var f [4][]byte
	for i := 0; i < 4; i++ {
		j := bytes.IndexByte(h, ',')
		if j < 0 {
			if i < 3 {
				return fmt.Errorf("%w: header %q has fewer than 4 fields", ErrMalformed, clip(h))
			}
			j = len(h)
		}
		f[i] = h[:j]
		if j < len(h) {
			h = h[j+1:]
		} else {
			h = h[len(h):] // empty: the missing fields read as ""
		}
	}
	prio, err := strconv.ParseUint(string(f[0]), 10, 32)
	if err != nil {
		return fmt.Errorf("%w: priority %q", ErrMalformed, clip(f[0]))
	}
	if r.Seq, err = strconv.ParseUint(string(f[1]), 10, 64); err != nil {
		return fmt.Errorf("%w: sequence number %q", ErrMalformed, clip(f[1]))
	}
	us, err := strconv.ParseUint(string(f[2]), 10, 64)
	if err != nil || us > uint64(1<<63-1)/uint64(time.Microsecond) {
		return fmt.Errorf("%w: timestamp %q", ErrMalformed, clip(f[2]))
	}
	r.Facility, r.Level = int(prio>>3), int(prio&7)
	r.TS = time.Duration(us) * time.Microsecond
	r.Flags = '-'
	if len(f[3]) > 0 {
		r.Flags = f[3][0]
	}
	return nil
}

// unescape decodes the kernel's \xNN escapes; anything else is kept as is.
func unescape(b []byte) string {
	if bytes.IndexByte(b, '\\') < 0 {
		return string(b)
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] == '\\' && i+3 < len(b) && b[i+1] == 'x' {
			if h, ok := hexByte(b[i+2], b[i+3]); ok {
				out = append(out, h)
				i += 3
				continue
			}
		}
		out = append(out, b[i])
	}
	return string(out)
}

func hexByte(a, b byte) (byte, bool) {
	x, ok1 := hexDigit(a)
	y, ok2 := hexDigit(b)
	return x<<4 | y, ok1 && ok2
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// Format writes r as /dev/kmsg prints it: the header, the message with
// bytes outside printable ASCII escaped, and the dictionary. The
// simulator writes records this way into a FIFO at H/dev/kmsg.
func Format(r Record) []byte {
	b := make([]byte, 0, len(r.Message)+64)
	flags := r.Flags
	if flags == 0 {
		flags = '-'
	}
	b = strconv.AppendUint(b, uint64(r.Facility<<3|r.Level&7), 10)
	b = append(b, ',')
	b = strconv.AppendUint(b, r.Seq, 10)
	b = append(b, ',')
	b = strconv.AppendUint(b, uint64(r.TS/time.Microsecond), 10)
	b = append(b, ',', flags, ';')
	b = escape(b, r.Message)
	b = append(b, '\n')
	for _, kv := range [][2]string{{"SUBSYSTEM", r.Subsystem}, {"DEVICE", r.Device}} {
		if kv[1] != "" {
			b = append(b, ' ')
			b = append(b, kv[0]...)
			b = append(b, '=')
			b = escape(b, kv[1])
			b = append(b, '\n')
		}
	}
	return b
}

// escape is the kernel's rule: every byte below 0x20 (tab included) or
// from 0x7f on, and the backslash that would make an escape ambiguous,
// is written as \xNN.
func escape(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < ' ' || c >= 0x7f || c == '\\' {
			b = append(b, '\\', 'x', hex[c>>4], hex[c&15])
			continue
		}
		b = append(b, c)
	}
	return b
}

func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}
