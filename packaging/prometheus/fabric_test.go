package prometheus_test

import (
	"bufio"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/config/countertable"
	"github.com/nichealth/nichealthd/fabric/overlay"
)

// alertRule is one alerting rule of the file: its name, expression and
// labels.
type alertRule struct {
	name, expr string
	labels     map[string]string
}

// alertRules reads the alerting rules of one group.
func alertRules(t *testing.T, group string) []alertRule {
	t.Helper()
	f, err := os.Open("nichealth.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []alertRule
	in, inLabels, inExpr := false, false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		ind := len(line) - len(strings.TrimLeft(line, " "))
		if strings.HasPrefix(trimmed, "- name: ") {
			in = strings.TrimPrefix(trimmed, "- name: ") == group
			continue
		}
		if !in {
			continue
		}
		switch {
		case strings.HasPrefix(trimmed, "- alert: "):
			out = append(out, alertRule{name: strings.TrimPrefix(trimmed, "- alert: "), labels: map[string]string{}})
			inLabels, inExpr = false, false
		case len(out) == 0:
		case inExpr && ind > 8:
			out[len(out)-1].expr += trimmed + " "
		case trimmed == "expr: |":
			inExpr, inLabels = true, false
		case strings.HasPrefix(trimmed, "expr: "):
			out[len(out)-1].expr = strings.TrimPrefix(trimmed, "expr: ")
			inExpr, inLabels = false, false
		case trimmed == "labels:":
			inLabels, inExpr = true, false
		case inLabels && ind == 10 && strings.Contains(trimmed, ": "):
			k, v, _ := strings.Cut(trimmed, ": ")
			out[len(out)-1].labels[k] = strings.Trim(v, `"`)
		default:
			inLabels, inExpr = inLabels && ind >= 10, false
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

var (
	velocityExpr = regexp.MustCompile(`^rate\(nichealth_fabric_port_counter\{counter="(\w+)"\}\[(\d+[mh])\]\)(?: \* (\d+))? > ([0-9.]+)$`)
	deltaExpr    = regexp.MustCompile(`^increase\(nichealth_fabric_port_counter\{counter="(\w+)"\}\[(\d+m)\]\) > ([0-9.]+)$`)
)

// The fabric link rules judge a switch port's counters by the counter
// table's rows for the same counter (FarEndFields maps the PMA field to
// its rows): each rule's threshold, unit and counter must be its row's,
// and every judged row with a threshold of the seed has its rule. The
// promtool tests pin the numbers; this test fails when the rules and the
// table drift apart.
func TestFabric_14_LinkRuleThresholdsAreTheCounterTables(t *testing.T) {
	rules := alertRules(t, "nichealth.fabric-links")
	if len(rules) < 8 {
		t.Fatalf("read %d fabric link rules: is the group still there?", len(rules))
	}
	table := map[string]countertable.Definition{}
	for _, d := range countertable.Defaults() {
		table[d.Name] = d
	}
	rowField := map[string]string{}
	for _, f := range countertable.FarEndFields() {
		for _, r := range f.Rows {
			rowField[r] = f.Field
		}
		if f.Own != nil {
			rowField[f.Own.Name] = f.Field
			table[f.Own.Name] = *f.Own
		}
	}
	covered := map[string]bool{}
	for _, r := range rules {
		row := r.labels["seed_counter"]
		d, ok := table[row]
		if !ok {
			t.Errorf("%s: seed_counter %q is no row of the counter table", r.name, row)
			continue
		}
		covered[row] = true
		expr := strings.TrimSpace(r.expr)
		var field string
		var threshold float64
		switch d.ThresholdType {
		case countertable.TypeVelocity:
			m := velocityExpr.FindStringSubmatch(expr)
			if m == nil {
				t.Errorf("%s: %q is not rate(nichealth_fabric_port_counter{counter=\"F\"}[W]) [* S] > T", r.name, expr)
				continue
			}
			field = m[1]
			scale := map[string]string{countertable.UnitSecond: "", countertable.UnitMinute: "60", countertable.UnitHour: "3600"}[d.VelocityUnit]
			if m[3] != scale {
				t.Errorf("%s: rate scaled by %q, but %s is per %s (want %q)", r.name, m[3], row, d.VelocityUnit, scale)
			}
			if d.VelocityUnit == countertable.UnitHour && m[2] != "1h" {
				t.Errorf("%s: a per-hour threshold over [%s], want [1h]", r.name, m[2])
			}
			threshold, _ = strconv.ParseFloat(m[4], 64)
		case countertable.TypeDelta:
			m := deltaExpr.FindStringSubmatch(expr)
			if m == nil {
				t.Errorf("%s: %q is not increase(nichealth_fabric_port_counter{counter=\"F\"}[W]) > T", r.name, expr)
				continue
			}
			field = m[1]
			threshold, _ = strconv.ParseFloat(m[3], 64)
		default:
			t.Errorf("%s: row %s is judged as %s, which the fabric rules do not express", r.name, row, d.ThresholdType)
			continue
		}
		if threshold != d.Threshold {
			t.Errorf("%s: threshold %v, the counter table's %s says %v", r.name, threshold, row, d.Threshold)
		}
		if rowField[row] != field {
			t.Errorf("%s: reads counter %s, but row %s is PMA field %q", r.name, field, row, rowField[row])
		}
		wantSeverity := "warning"
		if d.IsFatal {
			wantSeverity = "critical"
		}
		if r.labels["severity"] != wantSeverity || r.labels["scope"] != "fabric" {
			t.Errorf("%s: labels %v, want severity %s (the row is fatal: %v) and scope fabric", r.name, r.labels, wantSeverity, d.IsFatal)
		}
	}
	// Every field the map colours a link for, with a row of the seed's
	// own, has its rule.
	for _, f := range countertable.FarEndFields() {
		if !slices.Contains(overlay.LinkErrorCounters, f.Field) {
			continue
		}
		for _, row := range f.Rows {
			if !covered[row] {
				t.Errorf("%s (row %s) colours the map but no fabric rule judges it", f.Field, row)
			}
		}
	}
	for _, c := range overlay.LinkErrorCounters {
		if !slices.ContainsFunc(countertable.FarEndFields(), func(f countertable.FarEndField) bool { return f.Field == c }) {
			t.Errorf("the map's link error counter %s is no PortCounters error field", c)
		}
	}
}

var spaces = regexp.MustCompile(`\s+`)

// flat is an expression on one line, without the spaces inside brackets.
func flat(e string) string {
	e = spaces.ReplaceAllString(strings.TrimSpace(e), " ")
	return strings.NewReplacer("( ", "(", " )", ")").Replace(e)
}

// nichealth-fabric map draws as unread what NICFabricPortUnread alerts
// on: the same expression.
func TestFabric_14_MapUnreadIsTheRule(t *testing.T) {
	for _, r := range alertRules(t, "nichealth.fabric-reads") {
		if r.name == "NICFabricPortUnread" {
			if got, want := flat(r.expr), flat(overlay.FabricQueries.Unread); got != want {
				t.Errorf("rule:\n%s\nmap:\n%s", got, want)
			}
			return
		}
	}
	t.Fatal("no NICFabricPortUnread rule")
}
