package metrics

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// This file is a strict reader of the text exposition format 0.0.4, so the
// tests check the page the way a scraper would rather than by substring.

type promSample struct {
	name   string // full sample name (with _bucket/_sum/_count)
	labels map[string]string
	value  float64
	raw    string // the value as written
}

type promFamily struct {
	name    string
	help    string
	typ     string
	samples []promSample
}

var (
	metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelNameRE  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// parseExposition reads a whole page and enforces what Prometheus
// enforces, plus this project's own rules: families sorted by name,
// counters (and only counters) named *_total, no duplicate series, and a
// trailing newline.
func parseExposition(text string) (map[string]*promFamily, []string, error) {
	if text == "" {
		return nil, nil, fmt.Errorf("empty page")
	}
	if !strings.HasSuffix(text, "\n") {
		return nil, nil, fmt.Errorf("page does not end with a newline")
	}
	if !utf8.ValidString(text) {
		return nil, nil, fmt.Errorf("page is not UTF-8")
	}
	fams := map[string]*promFamily{}
	var order []string
	var cur *promFamily
	seen := map[string]bool{}
	for n, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		ln := n + 1
		switch {
		case strings.HasPrefix(line, "# HELP "):
			name, help, ok := strings.Cut(line[len("# HELP "):], " ")
			if !ok || !metricNameRE.MatchString(name) {
				return nil, nil, fmt.Errorf("line %d: bad HELP %q", ln, line)
			}
			if _, dup := fams[name]; dup {
				return nil, nil, fmt.Errorf("line %d: second HELP for %s", ln, name)
			}
			h, err := unescape(help, false)
			if err != nil {
				return nil, nil, fmt.Errorf("line %d: %v", ln, err)
			}
			cur = &promFamily{name: name, help: h}
			fams[name] = cur
			order = append(order, name)
		case strings.HasPrefix(line, "# TYPE "):
			name, typ, ok := strings.Cut(line[len("# TYPE "):], " ")
			if !ok || cur == nil || cur.name != name || cur.typ != "" || len(cur.samples) > 0 {
				return nil, nil, fmt.Errorf("line %d: TYPE %q not right after its HELP", ln, line)
			}
			switch typ {
			case "counter", "gauge", "histogram", "summary":
			default:
				return nil, nil, fmt.Errorf("line %d: unexpected type %q", ln, typ)
			}
			if (typ == "counter") != strings.HasSuffix(name, "_total") {
				return nil, nil, fmt.Errorf("line %d: %s %s: counters and only counters end in _total", ln, typ, name)
			}
			cur.typ = typ
		case strings.HasPrefix(line, "#"):
			return nil, nil, fmt.Errorf("line %d: unexpected comment %q", ln, line)
		default:
			s, err := parseSampleLine(line)
			if err != nil {
				return nil, nil, fmt.Errorf("line %d: %v", ln, err)
			}
			if cur == nil || cur.typ == "" {
				return nil, nil, fmt.Errorf("line %d: sample before HELP/TYPE", ln)
			}
			base := s.name
			if cur.typ == "histogram" || cur.typ == "summary" {
				for _, suf := range []string{"_bucket", "_sum", "_count"} {
					if strings.HasSuffix(s.name, suf) {
						base = strings.TrimSuffix(s.name, suf)
					}
				}
			}
			if cur.typ == "summary" && base == s.name {
				if _, ok := s.labels["quantile"]; !ok {
					return nil, nil, fmt.Errorf("line %d: summary sample %s without a quantile label", ln, s.name)
				}
			}
			if base != cur.name {
				return nil, nil, fmt.Errorf("line %d: sample %s inside family %s", ln, s.name, cur.name)
			}
			key := s.name + canonicalLabels(s.labels)
			if seen[key] {
				return nil, nil, fmt.Errorf("line %d: duplicate series %s", ln, key)
			}
			seen[key] = true
			cur.samples = append(cur.samples, s)
		}
	}
	if !sort.StringsAreSorted(order) {
		return nil, nil, fmt.Errorf("families not sorted: %v", order)
	}
	for _, f := range fams {
		if f.typ == "histogram" {
			if err := checkHistogram(f); err != nil {
				return nil, nil, err
			}
		}
	}
	return fams, order, nil
}

func parseSampleLine(line string) (promSample, error) {
	s := promSample{labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return s, fmt.Errorf("no value in %q", line)
	}
	s.name = line[:i]
	if !metricNameRE.MatchString(s.name) {
		return s, fmt.Errorf("bad metric name %q", s.name)
	}
	rest := line[i:]
	if rest[0] == '{' {
		rest = rest[1:]
		for {
			if strings.HasPrefix(rest, "}") {
				rest = rest[1:]
				break
			}
			eq := strings.Index(rest, `="`)
			if eq < 0 {
				return s, fmt.Errorf("bad label in %q", line)
			}
			name := rest[:eq]
			if !labelNameRE.MatchString(name) || strings.HasPrefix(name, "__") {
				return s, fmt.Errorf("bad label name %q", name)
			}
			rest = rest[eq+2:]
			var val strings.Builder
			closed := false
			for j := 0; j < len(rest); j++ {
				c := rest[j]
				if c == '\\' {
					if j+1 >= len(rest) {
						return s, fmt.Errorf("dangling escape in %q", line)
					}
					switch rest[j+1] {
					case '\\':
						val.WriteByte('\\')
					case '"':
						val.WriteByte('"')
					case 'n':
						val.WriteByte('\n')
					default:
						return s, fmt.Errorf("unknown escape \\%c in %q", rest[j+1], line)
					}
					j++
					continue
				}
				if c == '"' {
					rest = rest[j+1:]
					closed = true
					break
				}
				if c == '\n' {
					return s, fmt.Errorf("raw newline in label value")
				}
				val.WriteByte(c)
			}
			if !closed {
				return s, fmt.Errorf("unterminated label value in %q", line)
			}
			if _, dup := s.labels[name]; dup {
				return s, fmt.Errorf("label %s twice in %q", name, line)
			}
			s.labels[name] = val.String()
			if strings.HasPrefix(rest, ",") {
				rest = rest[1:]
			} else if !strings.HasPrefix(rest, "}") {
				return s, fmt.Errorf("expected , or } in %q", line)
			}
		}
	}
	if !strings.HasPrefix(rest, " ") {
		return s, fmt.Errorf("no space before value in %q", line)
	}
	fields := strings.Split(rest[1:], " ")
	if len(fields) < 1 || len(fields) > 2 || fields[0] == "" {
		return s, fmt.Errorf("bad value part in %q", line)
	}
	s.raw = fields[0]
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, fmt.Errorf("value %q: %v", fields[0], err)
	}
	s.value = v
	return s, nil
}

func unescape(s string, quotes bool) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 >= len(s) {
			return "", fmt.Errorf("dangling escape in %q", s)
		}
		i++
		switch {
		case s[i] == '\\':
			b.WriteByte('\\')
		case s[i] == 'n':
			b.WriteByte('\n')
		case s[i] == '"' && quotes:
			b.WriteByte('"')
		default:
			return "", fmt.Errorf("unknown escape in %q", s)
		}
	}
	return b.String(), nil
}

func canonicalLabels(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%q,", k, l[k])
	}
	return "{" + b.String() + "}"
}

// checkHistogram: buckets ascending in le, cumulative, ending with +Inf,
// whose count equals _count; _sum present.
func checkHistogram(f *promFamily) error {
	var prevLe = -1.0
	var prevCount float64
	var inf, count float64 = -1, -2
	hasSum := false
	for _, s := range f.samples {
		switch s.name {
		case f.name + "_bucket":
			le, err := strconv.ParseFloat(s.labels["le"], 64)
			if err != nil {
				return fmt.Errorf("%s: le %q: %v", f.name, s.labels["le"], err)
			}
			if le <= prevLe || s.value < prevCount {
				return fmt.Errorf("%s: buckets not ascending/cumulative at le=%s", f.name, s.labels["le"])
			}
			prevLe, prevCount = le, s.value
			if s.labels["le"] == "+Inf" {
				inf = s.value
			}
		case f.name + "_sum":
			hasSum = true
		case f.name + "_count":
			count = s.value
		}
	}
	if inf != count || !hasSum {
		return fmt.Errorf("%s: +Inf bucket %v, _count %v, _sum present %v", f.name, inf, count, hasSum)
	}
	return nil
}

// value returns the one sample of family name whose labels include want
// (alternating name, value); it fails the test unless exactly one matches.
func (f *promFamily) value(t testing.TB, want ...string) float64 {
	t.Helper()
	var found []promSample
	for _, s := range f.samples {
		ok := true
		for i := 0; i+1 < len(want); i += 2 {
			if s.labels[want[i]] != want[i+1] {
				ok = false
			}
		}
		if ok {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s%v: %d samples match, want 1", f.name, want, len(found))
	}
	return found[0].value
}

func TestParser_RejectsMalformedPages(t *testing.T) {
	for _, tc := range []struct{ name, page string }{
		{"no trailing newline", "# HELP a x\n# TYPE a gauge\na 1"},
		{"sample before type", "a 1\n"},
		{"unknown escape", "# HELP a x\n# TYPE a gauge\na{l=\"\\t\"} 1\n"},
		{"duplicate series", "# HELP a x\n# TYPE a gauge\na{l=\"x\"} 1\na{l=\"x\"} 2\n"},
		{"counter without _total", "# HELP a x\n# TYPE a counter\na 1\n"},
		{"unsorted", "# HELP b x\n# TYPE b gauge\nb 1\n# HELP a x\n# TYPE a gauge\na 1\n"},
		{"bad value", "# HELP a x\n# TYPE a gauge\na one\n"},
		{"histogram count mismatch", "# HELP h x\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 3\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := parseExposition(tc.page); err == nil {
				t.Fatalf("accepted:\n%s", tc.page)
			}
		})
	}
}
