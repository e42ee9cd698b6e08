package grafana_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/daemon/metrics"
	"github.com/nichealth/nichealthd/fabric/overlay"
)

const shipped = "nichealthd.json"

type target struct {
	Expr  string `json:"expr"`
	RefID string `json:"refId"`
}

type panel struct {
	ID         int             `json:"id"`
	Type       string          `json:"type"`
	Title      string          `json:"title"`
	Datasource json.RawMessage `json:"datasource"`
	Targets    []target        `json:"targets"`
	Panels     []panel         `json:"panels"`
}

type dashboard struct {
	UID         string  `json:"uid"`
	Title       string  `json:"title"`
	Panels      []panel `json:"panels"`
	Annotations struct {
		List []struct {
			Name string `json:"name"`
			Expr string `json:"expr"`
		} `json:"list"`
	} `json:"annotations"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

func load(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(shipped)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s: %v", shipped, err)
	}
	return d
}

// allPanels flattens rows (collapsed rows nest their panels).
func allPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

// served is every series name the daemon's /metrics can carry: each
// family's name, plus _bucket/_sum/_count for histograms and summaries,
// and the fabric share's series (DESIGN.md section 14) as the map reads
// them.
func served() map[string]bool {
	m := map[string]bool{}
	for _, n := range overlay.FabricSeries() {
		m[n] = true
	}
	for _, f := range metrics.Families() {
		m[f.Name] = true
		if f.Type == "histogram" || f.Type == "summary" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				m[f.Name+s] = true
			}
		}
	}
	return m
}

// synthetic are series Prometheus itself writes for every target and
// alert; the dashboard may use them besides the daemon's own.
var synthetic = map[string]bool{"up": true, "ALERTS": true}

var (
	grafanaVar  = regexp.MustCompile(`\$\{?\w+\}?`)
	stringLit   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	matchers    = regexp.MustCompile(`\{[^}]*\}`)
	ranges      = regexp.MustCompile(`\[[^\]]*\]`)
	grouping    = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	identifier  = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	labelValues = regexp.MustCompile(`label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)`)
	keywords    = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true,
		"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
		"inf": true, "nan": true, "Inf": true, "NaN": true}
)

// metricNames lists the metric names a PromQL expression selects: what is
// left once Grafana variables, strings, label matchers, ranges, grouping
// clauses, function calls and keywords are taken out.
func metricNames(expr string) []string {
	s := grafanaVar.ReplaceAllString(expr, "")
	s = stringLit.ReplaceAllString(s, `""`)
	s = matchers.ReplaceAllString(s, " ")
	s = ranges.ReplaceAllString(s, " ")
	s = grouping.ReplaceAllString(s, " ")
	var out []string
	for _, loc := range identifier.FindAllStringIndex(s, -1) {
		name := s[loc[0]:loc[1]]
		if loc[0] > 0 && strings.ContainsRune("0123456789.", rune(s[loc[0]-1])) {
			continue // the unit of a number or duration: 5m, 1e3
		}
		rest := strings.TrimLeft(s[loc[1]:], " \t\n")
		if strings.HasPrefix(rest, "(") || keywords[name] { // a function call or an operator
			continue
		}
		out = append(out, name)
	}
	return out
}

func TestMetricNames_Extraction(t *testing.T) {
	cases := map[string][]string{
		`nichealth_up`: {"nichealth_up"},
		`count by (cluster, rack) (nichealth_port_fatal{role="Compute", instance=~"$instance"} == 1)`:                     {"nichealth_port_fatal"},
		`histogram_quantile(0.99, sum by (le) (rate(nichealth_poll_duration_seconds_bucket{instance=~"$i"}[5m])))`:        {"nichealth_poll_duration_seconds_bucket"},
		`time() - nichealth_last_poll_timestamp_seconds{x="a{b}"} offset 4m`:                                              {"nichealth_last_poll_timestamp_seconds"},
		`a / on (instance) group_left (role) b unless c > bool 1e3`:                                                       {"a", "b", "c"},
		`increase(nichealth_port_link_down_episodes_total[$__rate_interval]) or vector(0)`:                                {"nichealth_port_link_down_episodes_total"},
		`topk(20, nichealth_port_xmit_wait_lost_gbps{cluster=~"$cluster"} > 0) * on (instance, device, port) nichealth:x`: {"nichealth_port_xmit_wait_lost_gbps", "nichealth:x"},
	}
	for expr, want := range cases {
		if got := metricNames(expr); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", expr, got, want)
		}
	}
}

// Every query of the dashboard (panels, annotations, template variables)
// selects only metrics the daemon serves.
func TestDashboard_QueriesNameServedMetrics(t *testing.T) {
	d := load(t)
	ok := served()
	var exprs []string
	for _, p := range allPanels(d.Panels) {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Expr == "" {
				t.Errorf("panel %q target %s has no expr", p.Title, tg.RefID)
			}
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, a := range d.Annotations.List {
		if a.Expr != "" {
			exprs = append(exprs, a.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValues.FindStringSubmatch(v.Definition)
		if m == nil {
			t.Errorf("variable %s: %q is not label_values(METRIC, LABEL)", v.Name, v.Definition)
			continue
		}
		exprs = append(exprs, m[1])
	}
	used := map[string]bool{}
	for _, e := range exprs {
		names := metricNames(e)
		if len(names) == 0 {
			t.Errorf("query %q names no metric", e)
		}
		for _, n := range names {
			used[n] = true
			if !ok[n] && !synthetic[n] {
				t.Errorf("query %q uses %s, which nichealthd does not serve (see daemon/metrics)", e, n)
			}
		}
	}
	// The views the dashboard promises are there.
	for _, n := range []string{"nichealth_port_verdict", "nichealth_port_link_down_episodes_total", "nichealth_hwcounter_rate",
		"nichealth_port_xmit_wait_lost_gbps", "nichealth_events_sent_total", "nichealth_outbox_depth"} {
		if !used[n] {
			t.Errorf("no panel uses %s", n)
		}
	}
}

func TestDashboard_FleetAndNodeViews(t *testing.T) {
	d := load(t)
	if d.UID == "" || d.Title == "" {
		t.Fatalf("uid %q title %q", d.UID, d.Title)
	}
	ids := map[int]string{}
	titles := map[string]bool{}
	var rows []string
	for _, p := range allPanels(d.Panels) {
		if prev, dup := ids[p.ID]; dup {
			t.Errorf("panel id %d used by %q and %q", p.ID, prev, p.Title)
		}
		ids[p.ID] = p.Title
		titles[p.Title] = true
		if p.Type == "row" {
			rows = append(rows, p.Title)
			continue
		}
		// Every panel follows the dashboard's Prometheus picker, so the
		// dashboard imports into any Grafana without editing.
		if !strings.Contains(string(p.Datasource), "${datasource}") {
			t.Errorf("panel %q datasource %s, want ${datasource}", p.Title, p.Datasource)
		}
	}
	if !slices.Equal(rows, []string{"Fleet", "Node"}) {
		t.Errorf("rows %v, want [Fleet Node]", rows)
	}
	for _, want := range []string{"Port health", "Counter rates", "xmit_wait lost bandwidth", "Events", "Nodes with fatal compute NICs per rack"} {
		if !titles[want] {
			t.Errorf("no panel %q", want)
		}
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
	}
	for _, v := range []string{"datasource", "cluster", "rack", "instance"} {
		if !vars[v] {
			t.Errorf("no template variable %s", v)
		}
	}
}

// The dashboard links to the fabric map that nichealth-fabric writes.
func TestDashboard_12_LinksTheFabricMap(t *testing.T) {
	b, err := os.ReadFile("nichealthd.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Links []struct {
			Title string `json:"title"`
			URL   string `json:"url"`
		} `json:"links"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	for _, l := range d.Links {
		if l.Title == "Fabric map" && strings.HasSuffix(l.URL, "fabric.html") {
			return
		}
	}
	t.Fatalf("no Fabric map link in %+v", d.Links)
}

// The fleet row shows the fabric's links: the error counters of the switch
// ports the daemons read, top 20 by rate, and the ports no daemon reads
// any more; their queries name the fabric share's series, the error
// counters the map colours links for, and the fabric rules' alerts.
func TestDashboard_14_FabricLinksPanel(t *testing.T) {
	d := load(t)
	byTitle := map[string]panel{}
	for _, p := range allPanels(d.Panels) {
		byTitle[p.Title] = p
	}
	errs, ok := byTitle["Fabric link errors per switch port (5m rate), top 20"]
	if !ok || len(errs.Targets) != 1 {
		t.Fatalf("no fabric link errors panel with one query: %+v", errs)
	}
	e := errs.Targets[0].Expr
	if !slices.Equal(metricNames(e), []string{overlay.SeriesPortCounter}) || !strings.HasPrefix(e, "topk(20, ") || !strings.Contains(e, "rate(") {
		t.Errorf("fabric errors query %q: want topk(20, ...rate(%s...))", e, overlay.SeriesPortCounter)
	}
	for _, c := range overlay.LinkErrorCounters {
		if !strings.Contains(e, c) {
			t.Errorf("fabric errors query leaves out %s", c)
		}
	}
	unread, ok := byTitle["Fabric switch ports read by no node"]
	if !ok || len(unread.Targets) != 2 {
		t.Fatalf("no unread fabric ports panel with two queries: %+v", unread)
	}
	if names := metricNames(unread.Targets[0].Expr); !slices.Equal(names, []string{overlay.SeriesLastRead}) ||
		!strings.HasSuffix(unread.Targets[0].Expr, "> 600") {
		t.Errorf("unread query %q: want the age of %s over 600 s, the rule's", unread.Targets[0].Expr, overlay.SeriesLastRead)
	}
	rules, err := os.ReadFile("../prometheus/nichealth.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"NICFabricPortUnread", "NICFabricAssignmentRefused"} {
		if !strings.Contains(unread.Targets[1].Expr, a) || !strings.Contains(string(rules), "- alert: "+a+"\n") {
			t.Errorf("alert %s: not in the panel's query %q or not a shipped rule", a, unread.Targets[1].Expr)
		}
	}
}

// DESIGN 13 on the dashboard: the node view shows the switch port at the
// far end of each cable, its latched breaches (what NICPeerPortErrors
// alerts on) and the error counters that rose, never the traffic counters.
func TestDashboard_13_FarEndPanel(t *testing.T) {
	d := load(t)
	var far *panel
	for _, p := range allPanels(d.Panels) {
		if strings.HasPrefix(p.Title, "Far end of each cable") {
			far = &p
		}
	}
	if far == nil || len(far.Targets) != 2 {
		t.Fatalf("no far-end panel with two queries: %+v", far)
	}
	breached, rose := far.Targets[0].Expr, far.Targets[1].Expr
	if !slices.Equal(metricNames(breached), []string{"nichealth_peer_port_counter_breached"}) || !strings.Contains(breached, `instance=~"$instance"`) {
		t.Errorf("breach query %q", breached)
	}
	if !slices.Equal(metricNames(rose), []string{"nichealth_peer_port_counter"}) || !strings.Contains(rose, "increase(") ||
		!strings.Contains(rose, `counter!~"Port(Xmit|Rcv)(Data|Pkts)|PortXmitWait"`) {
		t.Errorf("rising errors query %q: want the increase of the error counters only", rose)
	}
	rules, err := os.ReadFile("../prometheus/nichealth.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rules), "- alert: NICPeerPortErrors\n        expr: nichealth_peer_port_counter_breached == 1\n") {
		t.Errorf("NICPeerPortErrors is not the panel's breach series == 1")
	}
}

// DESIGN 16 on the dashboard: the node view shows its RoCE ports' classes
// (what the NICRoCE* rules alert on) with the last window's rates, and the
// pause time as lost bandwidth beside the rail's lossy ports.
func TestDashboard_16_RoCEPanels(t *testing.T) {
	d := load(t)
	byTitle := map[string]panel{}
	for _, p := range allPanels(d.Panels) {
		byTitle[p.Title] = p
	}
	classes, ok := byTitle["RoCE classes: congestion and loss per port"]
	if !ok || len(classes.Targets) != 2 || classes.Targets[0].Expr != `nichealth_roce_class{instance=~"$instance"} == 1` ||
		!slices.Equal(metricNames(classes.Targets[1].Expr), []string{"nichealth_roce_signal_rate"}) {
		t.Fatalf("RoCE classes panel: %+v", classes)
	}
	lost, ok := byTitle["RoCE pause lost bandwidth (% of port rate)"]
	if !ok || len(lost.Targets) != 2 || !slices.Equal(metricNames(lost.Targets[0].Expr), []string{"nichealth_roce_pause_lost_percent"}) ||
		!strings.Contains(lost.Targets[1].Expr, `class="roce-lossy"`) {
		t.Fatalf("RoCE pause panel: %+v", lost)
	}
	rules, err := os.ReadFile("../prometheus/nichealth.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"NICRoCEPortLossy", "NICRoCERailLossy", "NICRoCERxStarved", "NICRoCEPauseStorm"} {
		if !strings.Contains(string(rules), "- alert: "+a+"\n") {
			t.Errorf("the panel names %s, which is not a shipped rule", a)
		}
	}
}
