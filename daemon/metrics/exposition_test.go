package metrics

import (
	"math"
	"testing"
)

func TestExposition_7_FloatFormat(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{
		{0, "0"}, {1, "1"}, {-3, "-3"}, {0.5, "0.5"}, {0.0005, "0.0005"},
		{1_700_000_000, "1700000000"}, {1_700_000_000.25, "1.70000000025e+09"},
		{1 << 53, "9.007199254740992e+15"}, {math.NaN(), "NaN"}, {math.Inf(1), "+Inf"}, {math.Inf(-1), "-Inf"},
	} {
		if got := string(appendFloat(nil, tc.in)); got != tc.want {
			t.Errorf("appendFloat(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestExposition_7_Escapes(t *testing.T) {
	for _, tc := range []struct{ in, label, help string }{
		{`plain`, `plain`, `plain`},
		{`a\b`, `a\\b`, `a\\b`},
		{`say "hi"`, `say \"hi\"`, `say "hi"`}, // quotes are escaped only in label values
		{"two\nlines", `two\nlines`, `two\nlines`},
		{"\xff", "\uFFFD", "\xff"},
	} {
		if got := string(appendLabelValue(nil, tc.in)); got != tc.label {
			t.Errorf("label %q -> %q, want %q", tc.in, got, tc.label)
		}
		if got := string(appendHelp(nil, tc.in)); got != tc.help {
			t.Errorf("help %q -> %q, want %q", tc.in, got, tc.help)
		}
	}
}

func TestExposition_7_TableNamesAndTypes(t *testing.T) {
	ds := descriptors()
	seen := map[string]bool{}
	for i, d := range ds {
		if d.name == "" || d.help == "" {
			t.Errorf("family %d has no name or help", i)
		}
		if seen[d.name] {
			t.Errorf("%s twice", d.name)
		}
		seen[d.name] = true
		if !metricNameRE.MatchString(d.name) || d.name[:len("nichealth_")] != "nichealth_" {
			t.Errorf("bad name %q", d.name)
		}
		isTotal := len(d.name) > 6 && d.name[len(d.name)-6:] == "_total"
		if (d.kind == counter) != isTotal {
			t.Errorf("%s is a %v: counters and only counters end in _total", d.name, d.kind)
		}
	}
}
