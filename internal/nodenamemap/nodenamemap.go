package nodenamemap

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// MaxLine bounds one line of a map: longer ones are skipped and listed.
const MaxLine = 4096

// Problem is a line of a map that names nothing, and why.
type Problem struct {
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}

// ParseGUID reads a GUID in any of the forms the tools print: with or
// without 0x, with or without leading zeros, or sysfs's colon-separated
// groups (b83f:d203:00a0:b010).
func ParseGUID(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimPrefix(strings.TrimPrefix(t, "0x"), "0X")
	if strings.Count(t, ":") == 3 {
		t = strings.ReplaceAll(t, ":", "")
	}
	if t == "" || len(t) > 16 {
		return 0, fmt.Errorf("GUID %q: want up to 16 hex digits", s)
	}
	v, err := strconv.ParseUint(t, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("GUID %q: %w", s, err)
	}
	return v, nil
}

// Parse reads a node-name map: one `GUID "name"` per line, `#` comments
// and blank lines ignored, the name quoted (an unquoted name runs to the
// end of the line or a `#`, as opensm reads it). A line that does not
// start with a GUID is skipped and listed; a GUID given twice keeps its
// last name, as opensm's map does.
func Parse(b []byte) (map[uint64]string, []Problem) {
	out := map[uint64]string{}
	var probs []Problem
	line := 0
	for len(b) > 0 {
		line++
		var ln []byte
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			ln, b = b[:i], b[i+1:]
		} else {
			ln, b = b, nil
		}
		if len(ln) > MaxLine {
			probs = append(probs, Problem{line, fmt.Sprintf("longer than %d bytes", MaxLine)})
			continue
		}
		s := strings.TrimSpace(string(bytes.TrimRight(ln, "\r")))
		if s == "" || s[0] == '#' {
			continue
		}
		gs, rest := s, ""
		if i := strings.IndexAny(s, " \t#"); i >= 0 {
			gs, rest = s[:i], s[i:]
		}
		g, err := ParseGUID(gs)
		if err != nil {
			probs = append(probs, Problem{line, err.Error()})
			continue
		}
		rest = strings.TrimSpace(rest)
		var name string
		if strings.HasPrefix(rest, `"`) {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				probs = append(probs, Problem{line, "name has no closing quote"})
				continue
			}
			name = rest[1 : 1+end]
		} else {
			name, _, _ = strings.Cut(rest, "#")
			name = strings.TrimSpace(name)
		}
		if name == "" {
			probs = append(probs, Problem{line, fmt.Sprintf("GUID 0x%016x has no name", g)})
			continue
		}
		out[g] = name
	}
	return out, probs
}
