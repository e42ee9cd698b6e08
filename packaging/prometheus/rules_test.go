package prometheus_test

import (
	"bufio"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/daemon/metrics"
	"github.com/nichealth/nichealthd/fabric/overlay"
)

// exprs reads the rule file's record names and expressions. The file is
// plain block YAML: `expr: <one line>` or `expr: |` followed by lines
// indented deeper than the key.
func exprs(t *testing.T) (records []string, out []string) {
	t.Helper()
	f, err := os.Open("nichealth.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var block *strings.Builder
	indent := 0
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		ind := len(line) - len(trimmed)
		if block != nil {
			if trimmed == "" || ind > indent {
				block.WriteString(trimmed + "\n")
				continue
			}
			out = append(out, block.String())
			block = nil
		}
		switch {
		case strings.HasPrefix(trimmed, "- record: "):
			records = append(records, strings.TrimPrefix(trimmed, "- record: "))
		case trimmed == "expr: |":
			block, indent = &strings.Builder{}, ind
		case strings.HasPrefix(trimmed, "expr: "):
			out = append(out, strings.TrimPrefix(trimmed, "expr: "))
		}
	}
	if block != nil {
		out = append(out, block.String())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return records, out
}

var (
	stringLit  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	matchers   = regexp.MustCompile(`\{[^}]*\}`)
	ranges     = regexp.MustCompile(`\[[^\]]*\]`)
	grouping   = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	identifier = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	keywords   = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true,
		"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}
)

// metricNames lists the metric names a PromQL expression selects.
func metricNames(expr string) []string {
	s := stringLit.ReplaceAllString(expr, `""`)
	s = matchers.ReplaceAllString(s, " ")
	s = ranges.ReplaceAllString(s, " ")
	s = grouping.ReplaceAllString(s, " ")
	var out []string
	for _, loc := range identifier.FindAllStringIndex(s, -1) {
		name := s[loc[0]:loc[1]]
		if loc[0] > 0 && strings.ContainsRune("0123456789.", rune(s[loc[0]-1])) {
			continue // a number's or a duration's unit
		}
		if strings.HasPrefix(strings.TrimLeft(s[loc[1]:], " \t\n"), "(") || keywords[name] {
			continue
		}
		out = append(out, name)
	}
	return out
}

func TestRules_ExpressionsNameServedMetrics(t *testing.T) {
	records, es := exprs(t)
	if len(records) < 5 || len(es) < 20 {
		t.Fatalf("read %d records and %d expressions: is the file still block YAML?", len(records), len(es))
	}
	ok := map[string]bool{"up": true, "ALERTS": true} // written by Prometheus itself
	for _, r := range records {
		ok[r] = true
	}
	// The fabric share's series, as the map reads them: each daemon
	// exports them for the switch ports it reads (DESIGN.md section 14).
	for _, n := range overlay.FabricSeries() {
		ok[n] = true
	}
	for _, f := range metrics.Families() {
		ok[f.Name] = true
		if f.Type == "histogram" || f.Type == "summary" {
			ok[f.Name+"_bucket"], ok[f.Name+"_sum"], ok[f.Name+"_count"] = true, true, true
		}
	}
	for _, e := range es {
		names := metricNames(e)
		if len(names) == 0 {
			t.Errorf("expression %q names no metric", e)
		}
		for _, n := range names {
			if !ok[n] {
				t.Errorf("expression %q uses %s, which neither nichealthd serves nor a rule records", strings.TrimSpace(e), n)
			}
		}
	}
}
