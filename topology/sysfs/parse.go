package sysfs

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// ErrUnreadable marks a value that exists but cannot be used this poll
// ("N/A (no PMA)", empty, negative, non-numeric, over 64 bits). Callers
// treat it as "no reading" and never as zero: a zero would look like an
// admin counter reset and fire a false recovery.
var ErrUnreadable = errors.New("unreadable value")

// TrimValue strips the trailing newline and surrounding blanks sysfs adds.
func TrimValue(b []byte) []byte { return bytes.TrimSpace(b) }

// ParseCounter parses a counter file: a non-negative decimal that fits in
// 64 bits. It does not allocate.
func ParseCounter(b []byte) (uint64, error) {
	b = TrimValue(b)
	if len(b) == 0 || len(b) > 20 {
		return 0, ErrUnreadable
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, ErrUnreadable
		}
		d := uint64(c - '0')
		if v > (^uint64(0)-d)/10 {
			return 0, ErrUnreadable
		}
		v = v*10 + d
	}
	return v, nil
}

// PortState is a parsed "N: NAME" line from ports/<n>/state or phys_state.
type PortState struct {
	ID   int
	Name string
}

// Logical port states (ports/<n>/state), kernel ib_port_state.
const (
	StateDown   = 1
	StateInit   = 2
	StateArmed  = 3
	StateActive = 4
)

// Physical port states (ports/<n>/phys_state).
const (
	PhysSleep             = 1
	PhysPolling           = 2
	PhysDisabled          = 3
	PhysTraining          = 4
	PhysLinkUp            = 5
	PhysLinkErrorRecovery = 6
	PhysPhyTest           = 7
)

var stateNames = [...]string{"", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"}
var physNames = [...]string{"", "Sleep", "Polling", "Disabled", "PortConfigurationTraining", "LinkUp", "LinkErrorRecovery", "Phy Test"}

// ParseState parses "4: ACTIVE". The number is authoritative; the name is
// kept as printed. A bare number or a bare known name is accepted too,
// because some vendors' drivers print only one of them.
func ParseState(b []byte) (PortState, error) { return parseNumbered(b, stateNames[:]) }

// ParsePhysState parses "5: LinkUp".
func ParsePhysState(b []byte) (PortState, error) { return parseNumbered(b, physNames[:]) }

func parseNumbered(b []byte, names []string) (PortState, error) {
	b = TrimValue(b)
	if len(b) == 0 {
		return PortState{}, ErrUnreadable
	}
	num, rest, hasColon := bytes.Cut(b, []byte(":"))
	num = bytes.TrimSpace(num)
	if !hasColon {
		if id, err := strconv.Atoi(string(num)); err == nil && id > 0 && id < len(names) {
			return PortState{ID: id, Name: names[id]}, nil
		}
		for id, n := range names {
			if n != "" && string(num) == n {
				return PortState{ID: id, Name: n}, nil
			}
		}
		return PortState{}, fmt.Errorf("%w: %q is not \"N: NAME\"", ErrUnreadable, b)
	}
	id, ok := smallInt(num)
	if !ok {
		return PortState{}, fmt.Errorf("%w: bad state number in %q", ErrUnreadable, b)
	}
	rest = bytes.TrimSpace(rest)
	// The kernel prints the known names; reuse the constant so a steady
	// poll allocates nothing.
	if id < len(names) && (len(rest) == 0 || string(rest) == names[id]) {
		return PortState{ID: id, Name: names[id]}, nil
	}
	return PortState{ID: id, Name: string(rest)}, nil
}

// Rate is a parsed ports/<n>/rate, e.g. "400 Gb/sec (4X NDR)".
type Rate struct {
	Gbps  float64
	Width string // "4X", "" when absent
	Speed string // "NDR", "" when absent
}

// ParseRate parses "400 Gb/sec (4X NDR)", "25 Gb/sec (1X EDR)", "100 Gb/sec".
func ParseRate(b []byte) (Rate, error) {
	b = TrimValue(b)
	num, rest, ok := bytes.Cut(b, []byte(" "))
	if !ok {
		return Rate{}, fmt.Errorf("%w: rate %q has no unit", ErrUnreadable, b)
	}
	g, err := strconv.ParseFloat(string(num), 64)
	if err != nil || g < 0 || g != g || g > 1e6 {
		return Rate{}, fmt.Errorf("%w: rate %q is not a number", ErrUnreadable, b)
	}
	rest = bytes.TrimSpace(rest)
	if !bytes.HasPrefix(rest, []byte("Gb/sec")) {
		return Rate{}, fmt.Errorf("%w: rate %q is not in Gb/sec", ErrUnreadable, b)
	}
	r := Rate{Gbps: g}
	rest = bytes.TrimSpace(rest[len("Gb/sec"):])
	if len(rest) >= 2 && rest[0] == '(' && rest[len(rest)-1] == ')' {
		f := bytes.Fields(rest[1 : len(rest)-1])
		if len(f) >= 1 {
			r.Width = string(f[0])
		}
		if len(f) >= 2 {
			r.Speed = string(f[1])
		}
	}
	return r, nil
}

// ParseInt parses a small signed decimal such as numa_node ("-1", "0").
func ParseInt(b []byte) (int, error) {
	b = TrimValue(b)
	v, err := strconv.Atoi(string(b))
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not an integer", ErrUnreadable, b)
	}
	return v, nil
}

// smallInt parses 0..255 without allocating.
func smallInt(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 3 {
		return 0, false
	}
	v := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, v <= 255
}

// ParseNodeGUID parses node_guid ("b83f:d203:00a0:b010": four groups of
// four hex digits) into the GUID that ibnetdiscover prints as
// 0xb83fd20300a0b010, so a port seen by the daemon and the same port in a
// fabric dump can be joined.
func ParseNodeGUID(b []byte) (uint64, error) {
	b = TrimValue(b)
	if len(b) != 19 || b[4] != ':' || b[9] != ':' || b[14] != ':' {
		return 0, fmt.Errorf("%w: %q is not a GUID (xxxx:xxxx:xxxx:xxxx)", ErrUnreadable, b)
	}
	return hexGroups(b, 4)
}

// ParseGIDInterfaceID parses a GID (ports/N/gids/0,
// "fe80:0000:0000:0000:b83f:d203:00a0:b010") and returns its lower 64
// bits: on an InfiniBand port, gids/0 is the link-local GID whose
// interface ID is the port GUID.
func ParseGIDInterfaceID(b []byte) (uint64, error) {
	b = TrimValue(b)
	if len(b) != 39 {
		return 0, fmt.Errorf("%w: %q is not a GID (8 groups of 4 hex digits)", ErrUnreadable, b)
	}
	for i := 4; i < 39; i += 5 {
		if b[i] != ':' {
			return 0, fmt.Errorf("%w: %q is not a GID (8 groups of 4 hex digits)", ErrUnreadable, b)
		}
	}
	if _, err := hexGroups(b[:19], 4); err != nil {
		return 0, err
	}
	return hexGroups(b[20:], 4)
}

// hexGroups reads n colon-separated groups of 4 hex digits.
func hexGroups(b []byte, n int) (uint64, error) {
	var v uint64
	for g := 0; g < n; g++ {
		for _, c := range b[g*5 : g*5+4] {
			var d byte
			switch {
			case c >= '0' && c <= '9':
				d = c - '0'
			case c >= 'a' && c <= 'f':
				d = c - 'a' + 10
			case c >= 'A' && c <= 'F':
				d = c - 'A' + 10
			default:
				return 0, fmt.Errorf("%w: %q has a non-hex digit", ErrUnreadable, b)
			}
			v = v<<4 | uint64(d)
		}
	}
	return v, nil
}

// FormatGUID prints a GUID as ibstat, ibnetdiscover's node-name maps and
// /metrics do: 0x and 16 hex digits.
func FormatGUID(g uint64) string { return fmt.Sprintf("0x%016x", g) }
