package topology

import "strconv"

// ValidDeviceName accepts kernel IB device names (at most 64 bytes) and
// rejects anything that could escape a sysfs path or break the state
// file's key formats ("<device>:<port>:<counter>", "<device>_<port>").
func ValidDeviceName(d string) bool {
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

// PrintableName accepts a non-empty name of at most 256 bytes with no
// control characters and no replacement characters (a counter name, a card
// key), as a check could have written it.
func PrintableName(s string) bool {
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

// ParsePortNumber reads a port number as sysfs names ports: a decimal that
// fits 16 bits. The reason is "" when it is valid.
func ParsePortNumber(s string) (int, string) {
	if len(s) > 0 && s[0] == '-' {
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
