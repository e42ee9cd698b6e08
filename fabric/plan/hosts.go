package plan

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/nichealth/nichealthd/fabric/ibnet"
)

// maxHosts bounds a host list (and what one hostlist expression may
// expand to): the largest InfiniBand subnet has fewer than 49,152 LIDs.
const maxHosts = 65536

// ParseHosts reads a job's host list: names separated by blanks, commas
// or lines, `#` comments, and Slurm's compressed form (`gpu[001-004,007]`,
// what SLURM_JOB_NODELIST holds) as well as `scontrol show hostnames`'
// one a line. A name is what a host name may hold (letters, digits, '-',
// '_', '.'), so it is also safe as a file name. Duplicates are dropped;
// the order is kept. What cannot be read is skipped and listed.
func ParseHosts(r io.Reader) ([]string, []ibnet.Problem, error) {
	var hosts []string
	var probs []ibnet.Problem
	seen := map[string]bool{}
	br := bufio.NewReaderSize(r, 64<<10)
	line := 0
	for {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			line++
			probs = append(probs, ibnet.Problem{Line: line, Reason: fmt.Sprintf("longer than %d bytes", br.Size())})
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
		} else if len(b) > 0 {
			line++
			s, _, _ := strings.Cut(string(b), "#")
			for _, word := range splitList(s) {
				names, perr := expand(word)
				if perr != nil {
					if len(probs) < maxProblems {
						probs = append(probs, ibnet.Problem{Line: line, Reason: perr.Error()})
					}
					continue
				}
				for _, n := range names {
					if seen[n] {
						continue
					}
					if len(hosts) >= maxHosts {
						return hosts, append(probs, ibnet.Problem{Line: line, Reason: fmt.Sprintf("more than %d hosts; the rest are left out", maxHosts)}), nil
					}
					seen[n] = true
					hosts = append(hosts, n)
				}
			}
		}
		if err == io.EOF {
			return hosts, probs, nil
		}
		if err != nil {
			return hosts, probs, err
		}
	}
}

// splitList splits at blanks and at commas outside brackets.
func splitList(s string) []string {
	var out []string
	depth, start := 0, -1
	for i := 0; i <= len(s); i++ {
		var c byte = ' '
		if i < len(s) {
			c = s[i]
		}
		switch {
		case c == '[':
			depth++
		case c == ']':
			depth--
		}
		sep := c == ' ' || c == '\t' || c == '\n' || c == '\r' || (c == ',' && depth <= 0)
		if sep {
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
			if c != ',' {
				depth = max(depth, 0)
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	return out
}

// expand reads one name or hostlist expression: `gpu[001-004,007]`,
// `rack[1-2]-node[01-02]`.
func expand(word string) ([]string, error) {
	names, err := expandRaw(word, 0)
	if err != nil {
		return nil, fmt.Errorf("%.40q: %w", word, err)
	}
	for _, n := range names {
		if !validName(n) {
			return nil, fmt.Errorf("%.40q is not a host name", n)
		}
	}
	return names, nil
}

func expandRaw(word string, depth int) ([]string, error) {
	open := strings.IndexByte(word, '[')
	if open < 0 {
		return []string{word}, nil
	}
	if depth > 8 {
		return nil, errors.New("too many bracket groups")
	}
	end := strings.IndexByte(word[open:], ']')
	if end < 0 {
		return nil, errors.New("no closing bracket")
	}
	end += open
	prefix, ranges, suffix := word[:open], word[open+1:end], word[end+1:]
	tails, err := expandRaw(suffix, depth+1)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range strings.Split(ranges, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		if !isRange {
			hi = lo
		}
		a, e1 := strconv.Atoi(lo)
		z, e2 := strconv.Atoi(hi)
		if e1 != nil || e2 != nil || a < 0 || z < a || len(lo) > 9 || len(hi) > 9 {
			return nil, fmt.Errorf("bad range %.20q", r)
		}
		if len(out)+(z-a+1)*len(tails) > maxHosts {
			return nil, fmt.Errorf("expands to more than %d hosts", maxHosts)
		}
		for v := a; v <= z; v++ {
			n := strconv.Itoa(v)
			if len(n) < len(lo) {
				n = strings.Repeat("0", len(lo)-len(n)) + n
			}
			for _, tail := range tails {
				out = append(out, prefix+n+tail)
			}
		}
	}
	return out, nil
}

// validName accepts a host name: letters, digits, '-', '_', '.', not
// starting with '.' or '-' (so it is also a plain file name).
func validName(s string) bool {
	if s == "" || len(s) > 253 || s[0] == '.' || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}
