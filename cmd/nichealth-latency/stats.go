package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// summary is the distribution of one latency series.
type summary struct {
	n                  int
	p50, p90, p99, max time.Duration
}

// summarize takes nearest-rank percentiles: with 200 samples p99 is the
// second-largest, a value that was really observed rather than one
// interpolated between two.
func summarize(samples []time.Duration) summary {
	if len(samples) == 0 {
		return summary{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	rank := func(p float64) time.Duration {
		i := int(p*float64(len(s))+0.999999) - 1
		i = max(0, min(i, len(s)-1))
		return s[i]
	}
	return summary{n: len(s), p50: rank(0.50), p90: rank(0.90), p99: rank(0.99), max: s[len(s)-1]}
}

// ms renders a duration in milliseconds with one decimal, the resolution
// that matters against a poll interval.
func ms(d time.Duration) string {
	return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
}

// table renders named summaries as aligned columns.
func table(rows []string, sums []summary, missed []int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s %8s %8s %8s %8s %6s %6s\n", "", "p50", "p90", "p99", "max", "n", "missed")
	for i, r := range rows {
		s := sums[i]
		if s.n == 0 {
			fmt.Fprintf(&b, "%-22s %8s %8s %8s %8s %6d %6d\n", r, "-", "-", "-", "-", 0, missed[i])
			continue
		}
		fmt.Fprintf(&b, "%-22s %8s %8s %8s %8s %6d %6d\n", r, ms(s.p50), ms(s.p90), ms(s.p99), ms(s.max), s.n, missed[i])
	}
	return b.String()
}
