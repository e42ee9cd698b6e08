package metrics

import (
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/dbusapi"
)

func scrape(t testing.TB, h http.Handler) (int, string, http.Header) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Code, rec.Body.String(), rec.Header()
}

func mustParse(t testing.TB, page string) map[string]*promFamily {
	t.Helper()
	fams, _, err := parseExposition(page)
	if err != nil {
		t.Fatalf("invalid exposition: %v\n%s", err, page)
	}
	return fams
}

// unhealthySource: one port down and fatal with a latched fatal breach,
// one healthy RoCE port with congestion, sanity findings and a saturated
// counter.
func unhealthySource() *fakeSource {
	return &fakeSource{
		mgr: dbusapi.ManagerView{
			Version: "0.9.0", PollIntervalUSec: 500_000, LastPollUSec: 1_700_000_000_250_000, Healthy: false,
			FatalPorts: []string{"mlx5_0/1"}, ConfigGeneration: 3, LastReloadError: "config.toml: threshold: must be >= 0",
			MonitoredPorts: 2, MonitoredNICs: 2, Ready: true,
		},
		ports: []dbusapi.PortView{
			{Device: "mlx5_0", Port: 1, LinkLayer: "InfiniBand", Role: "Compute", Rate: "400 Gb/sec (4X NDR)",
				NodeGUID: "0xb83fd20300a0b010", PortGUID: "0xb83fd20300a0b010",
				State: "DOWN", PhysState: "Disabled", Fatal: true, LastChangeUSec: 1_700_000_000_000_000,
				Counters: []dbusapi.CounterView{
					{Name: "link_downed", Value: 3, Unit: "/sec", ThresholdType: "delta", Fatal: true, Breached: true},
				}},
			{Device: "mlx5_8", Port: 1, LinkLayer: "Ethernet", Role: "Storage", Rate: "garbage",
				State: "ACTIVE", PhysState: "LinkUp", Healthy: true, Sanity: []string{"PCIe x8 < x16", "no SM LID"},
				Counters: []dbusapi.CounterView{
					{Name: "port_xmit_wait", Value: 1 << 60, Rate: 5000, Unit: "/sec", ThresholdType: "velocity", LostGbps: 40, LostPercent: 10},
					{Name: "symbol_error", Value: 65535, Rate: 2, Unit: "/hour", ThresholdType: "velocity", Saturated: true},
					{Name: "port_rcv_errors", Value: math.MaxUint64, Rate: 0.5, Unit: "/min", ThresholdType: "velocity"},
				}},
		},
		ob: OutboxStats{LastSeq: 10, Records: 4, Bytes: 2048, Segments: 2, Dropped: 5, Corrupt: 1, OverBound: true,
			Sinks: map[string]OutboxSink{"connector": {Depth: 4}}},
		sinks:   []SinkStats{{Name: "connector", Sent: 6, Failed: 9}},
		stalled: true,
	}
}

func TestMetrics_7_ValuesFromViews(t *testing.T) {
	m := New()
	code, page, hdr := scrape(t, m.Handler(unhealthySource()))
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, page)
	}
	if ct := hdr.Get("Content-Type"); ct != ContentType {
		t.Errorf("Content-Type %q", ct)
	}
	fams := mustParse(t, page)
	id0 := []string{"device", "mlx5_0", "port", "1", "role", "Compute", "link_layer", "InfiniBand"}
	id8 := []string{"device", "mlx5_8", "port", "1", "role", "Storage", "link_layer", "Ethernet"}
	for _, tc := range []struct {
		family string
		labels []string
		want   float64
	}{
		{"nichealth_build_info", []string{"version", "0.9.0"}, 1},
		{"nichealth_up", nil, 1},
		{"nichealth_ready", nil, 1},
		{"nichealth_healthy", nil, 0},
		{"nichealth_poll_stalled", nil, 1},
		{"nichealth_monitored_ports", nil, 2},
		{"nichealth_monitored_nics", nil, 2},
		{"nichealth_fatal_ports", nil, 1},
		{"nichealth_config_generation", nil, 3},
		{"nichealth_config_reload_failed", nil, 1},
		{"nichealth_poll_interval_seconds", nil, 0.5},
		{"nichealth_last_poll_timestamp_seconds", nil, 1_700_000_000.25},
		{"nichealth_port_healthy", id0, 0},
		// mlx5_8's link is up, but its two sanity findings are non-fatal
		// conditions: one verdict, degraded, as every other view says.
		{"nichealth_port_healthy", id8, 0},
		{"nichealth_port_fatal", id0, 1},
		{"nichealth_port_fatal", id8, 0},
		{"nichealth_port_verdict", id0, 2},
		{"nichealth_port_verdict", id8, 1},
		{"nichealth_degraded_ports", nil, 1},
		{"nichealth_conditions", []string{"check", "InfiniBandStateCheck", "severity", "fatal"}, 1},
		{"nichealth_conditions", []string{"check", "InfiniBandDegradationCheck", "severity", "degraded"}, 2},
		{"nichealth_port_state", id0, 1},
		{"nichealth_port_state", id8, 4},
		{"nichealth_port_phys_state", id0, 3},
		{"nichealth_port_phys_state", id8, 5},
		{"nichealth_port_state_info", []string{"device", "mlx5_0", "state", "DOWN", "phys_state", "Disabled"}, 1},
		{"nichealth_port_rate_gbps", id0, 400},
		// The fabric view joins the port to an ibnetdiscover dump by these.
		{"nichealth_port_info", []string{"device", "mlx5_0", "port", "1", "node_guid", "0xb83fd20300a0b010",
			"port_guid", "0xb83fd20300a0b010", "link_layer", "InfiniBand"}, 1},
		{"nichealth_port_last_change_timestamp_seconds", id0, 1_700_000_000},
		{"nichealth_port_xmit_wait_lost_gbps", []string{"device", "mlx5_8", "port", "1"}, 40},
		{"nichealth_port_xmit_wait_lost_percent", []string{"device", "mlx5_8", "port", "1"}, 10},
		{"nichealth_sanity_findings", []string{"device", "mlx5_0", "port", "1"}, 0},
		{"nichealth_sanity_findings", []string{"device", "mlx5_8", "port", "1"}, 2},
		{"nichealth_hwcounter_value", []string{"device", "mlx5_0", "counter", "link_downed"}, 3},
		{"nichealth_hwcounter_breached", []string{"device", "mlx5_0", "counter", "link_downed"}, 1},
		{"nichealth_hwcounter_breached", []string{"device", "mlx5_8", "counter", "symbol_error"}, 0},
		{"nichealth_hwcounter_saturated", []string{"device", "mlx5_8", "counter", "symbol_error"}, 1},
		{"nichealth_hwcounter_rate", []string{"counter", "port_xmit_wait", "unit", "second"}, 5000},
		{"nichealth_hwcounter_rate", []string{"counter", "symbol_error", "unit", "hour"}, 2},
		{"nichealth_hwcounter_rate", []string{"counter", "port_rcv_errors", "unit", "minute"}, 0.5},
		{"nichealth_outbox_records", nil, 4},
		{"nichealth_outbox_bytes", nil, 2048},
		{"nichealth_outbox_segments", nil, 2},
		{"nichealth_outbox_last_sequence", nil, 10},
		{"nichealth_outbox_dropped_total", nil, 5},
		{"nichealth_outbox_corrupt_total", nil, 1},
		{"nichealth_outbox_over_bound", nil, 1},
		{"nichealth_outbox_depth", []string{"sink", "connector"}, 4},
		{"nichealth_events_sent_total", []string{"sink", "connector"}, 6},
		{"nichealth_events_failed_total", []string{"sink", "connector"}, 9},
	} {
		f := fams[tc.family]
		if f == nil {
			t.Errorf("family %s missing", tc.family)
			continue
		}
		if got := f.value(t, tc.labels...); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.family, tc.labels, got, tc.want)
		}
	}
	// Rate "garbage" is unreadable: no sample rather than a made-up 0.
	if n := len(fams["nichealth_port_rate_gbps"].samples); n != 1 {
		t.Errorf("port_rate_gbps has %d samples, want 1 (mlx5_8's rate is unreadable)", n)
	}
	// A delta counter has no velocity: no counter_rate sample.
	for _, s := range fams["nichealth_hwcounter_rate"].samples {
		if s.labels["counter"] == "link_downed" {
			t.Errorf("counter_rate for delta counter link_downed: %v", s.labels)
		}
	}
	// 64-bit hardware counters are written exactly, not rounded to float.
	for _, s := range fams["nichealth_hwcounter_value"].samples {
		if s.labels["counter"] == "port_rcv_errors" && s.raw != "18446744073709551615" {
			t.Errorf("port_rcv_errors written as %s, want exact 18446744073709551615", s.raw)
		}
		if s.labels["counter"] == "port_xmit_wait" && s.raw != "1152921504606846976" {
			t.Errorf("port_xmit_wait written as %s", s.raw)
		}
	}
}

func TestMetrics_7_HistogramBuckets(t *testing.T) {
	m := New()
	for _, d := range []time.Duration{
		100 * time.Microsecond, 500 * time.Microsecond, // le=0.0005 includes its bound
		700 * time.Microsecond, 3 * time.Millisecond, 2 * time.Second, 10 * time.Second, -time.Second,
	} {
		m.ObservePoll(d)
	}
	_, page, _ := scrape(t, m.Handler(&fakeSource{}))
	f := mustParse(t, page)["nichealth_poll_duration_seconds"]
	if f == nil || f.typ != "histogram" {
		t.Fatalf("no histogram in\n%s", page)
	}
	want := map[string]float64{
		"0.0005": 3, "0.001": 4, "0.0025": 4, "0.005": 5, "0.01": 5, "0.025": 5, "0.05": 5,
		"0.1": 5, "0.25": 5, "0.5": 5, "1": 5, "2.5": 6, "+Inf": 7,
	}
	var les []string
	for _, s := range f.samples {
		switch s.name {
		case "nichealth_poll_duration_seconds_bucket":
			les = append(les, s.labels["le"])
			if s.value != want[s.labels["le"]] {
				t.Errorf("bucket le=%s = %v, want %v", s.labels["le"], s.value, want[s.labels["le"]])
			}
		case "nichealth_poll_duration_seconds_count":
			if s.value != 7 {
				t.Errorf("_count %v, want 7", s.value)
			}
		case "nichealth_poll_duration_seconds_sum":
			if want := 12.0043; math.Abs(s.value-want) > 1e-9 {
				t.Errorf("_sum %v, want %v", s.value, want)
			}
		}
	}
	if got := strings.Join(les, " "); got != "0.0005 0.001 0.0025 0.005 0.01 0.025 0.05 0.1 0.25 0.5 1 2.5 +Inf" {
		t.Errorf("le order %s", got)
	}
}

func TestMetrics_7_EmptyHistogramBeforeFirstPoll(t *testing.T) {
	_, page, _ := scrape(t, New().Handler(&fakeSource{mgr: dbusapi.ManagerView{FatalPorts: []string{}}}))
	fams := mustParse(t, page)
	if v := fams["nichealth_poll_duration_seconds"].value(t, "le", "+Inf"); v != 0 {
		t.Errorf("+Inf bucket %v before any poll", v)
	}
	if v := fams["nichealth_ready"].value(t); v != 0 {
		t.Errorf("ready %v before first poll", v)
	}
	if fams["nichealth_port_healthy"] != nil {
		t.Errorf("port families present without ports")
	}
}

func TestMetrics_7_LabelEscaping(t *testing.T) {
	nasty := []string{
		`back\slash`, `dq"uote`, "new\nline", `all\"three` + "\n", "tab\tand\x7f", "\xff\xfeinvalid utf-8", "Ünïcødé",
	}
	src := &fakeSource{}
	for i, name := range nasty {
		src.ports = append(src.ports, dbusapi.PortView{Device: name, Port: int32(i), Role: name, LinkLayer: "Ethernet",
			Counters: []dbusapi.CounterView{{Name: name, ThresholdType: "velocity", Unit: "/" + name}}})
	}
	src.sinks = []SinkStats{{Name: "a\"b\\c\nd"}}
	_, page, _ := scrape(t, New().Handler(src))
	fams := mustParse(t, page)
	for i, name := range nasty {
		want := string([]rune(name)) // each invalid byte becomes U+FFFD
		if got := fams["nichealth_port_healthy"].value(t, "port", itoa(i)); got != 0 {
			t.Errorf("port %d healthy %v", i, got)
		}
		found := false
		for _, s := range fams["nichealth_hwcounter_rate"].samples {
			if s.labels["port"] == itoa(i) {
				found = true
				if s.labels["device"] != want || s.labels["counter"] != want || s.labels["unit"] != want {
					t.Errorf("labels %q, want device/counter/unit %q", s.labels, want)
				}
			}
		}
		if !found {
			t.Errorf("no counter_rate for port %d", i)
		}
	}
	if v := fams["nichealth_events_sent_total"].value(t, "sink", "a\"b\\c\nd"); v != 0 {
		t.Errorf("sink sample %v", v)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestMetrics_7_OutputSortedAndStable(t *testing.T) {
	src := simSource(t, "dgx-h100", false)
	h := New().Handler(src)
	_, first, _ := scrape(t, h)
	// Reverse the ports and the sinks: the page must not change.
	for i, j := 0, len(src.ports)-1; i < j; i, j = i+1, j-1 {
		src.ports[i], src.ports[j] = src.ports[j], src.ports[i]
	}
	src.sinks[0], src.sinks[1] = src.sinks[1], src.sinks[0]
	_, second, _ := scrape(t, h)
	if withoutRuntime(first) != withoutRuntime(second) {
		t.Fatalf("output depends on input order")
	}
	fams, order, err := parseExposition(first)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range order {
		f := fams[name]
		if f.typ == "histogram" || f.typ == "summary" {
			continue
		}
		for i := 1; i < len(f.samples); i++ {
			// The label sets are written sorted as rendered text.
			if prev, cur := lineOf(first, f.samples[i-1]), lineOf(first, f.samples[i]); prev > cur {
				t.Errorf("%s: %q after %q", name, cur, prev)
			}
		}
	}
}

// withoutRuntime drops the go_* and process_* families, whose values move
// between two scrapes by themselves.
func withoutRuntime(page string) string {
	var b strings.Builder
	for l := range strings.Lines(page) {
		name := strings.TrimPrefix(strings.TrimPrefix(l, "# HELP "), "# TYPE ")
		if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") {
			continue
		}
		b.WriteString(l)
	}
	return b.String()
}

// lineOf finds the rendered label part of a sample in the page (for sort
// checks, the raw text is what was sorted).
func lineOf(page string, s promSample) string {
	for _, l := range strings.Split(page, "\n") {
		if !strings.HasPrefix(l, s.name+"{") {
			continue
		}
		ps, err := parseSampleLine(l)
		if err == nil && canonicalLabels(ps.labels) == canonicalLabels(s.labels) {
			return l
		}
	}
	return ""
}

func TestMetrics_7_DuplicatePortKeepsFirst(t *testing.T) {
	// An inconsistent view listing a port twice must not produce duplicate
	// series: Prometheus would reject the whole page.
	src := unhealthySource()
	dup := src.ports[0]
	dup.Fatal = false
	src.ports = append(src.ports, dup)
	_, page, _ := scrape(t, New().Handler(src))
	fams := mustParse(t, page)
	if v := fams["nichealth_port_fatal"].value(t, "device", "mlx5_0"); v != 1 {
		t.Errorf("port_fatal %v, want the first view's 1", v)
	}
}

func TestMetrics_7_UnknownStateNamesAreZero(t *testing.T) {
	src := &fakeSource{ports: []dbusapi.PortView{
		{Device: "mlx5_0", Port: 1, State: "", PhysState: ""},
		{Device: "mlx5_1", Port: 1, State: "WEIRD", PhysState: "Phy Test"},
		{Device: "mlx5_2", Port: 1, State: "ACTIVE_DEFER", PhysState: "9: Vendor"},
	}}
	_, page, _ := scrape(t, New().Handler(src))
	fams := mustParse(t, page)
	for _, tc := range []struct {
		dev         string
		state, phys float64
	}{{"mlx5_0", 0, 0}, {"mlx5_1", 0, 7}, {"mlx5_2", 5, 9}} {
		if v := fams["nichealth_port_state"].value(t, "device", tc.dev); v != tc.state {
			t.Errorf("%s state %v, want %v", tc.dev, v, tc.state)
		}
		if v := fams["nichealth_port_phys_state"].value(t, "device", tc.dev); v != tc.phys {
			t.Errorf("%s phys %v, want %v", tc.dev, v, tc.phys)
		}
	}
}

func TestMetrics_7_SimulatedDGXH100(t *testing.T) {
	src := simSource(t, "dgx-h100", false)
	_, page, _ := scrape(t, New().Handler(src))
	fams := mustParse(t, page)
	if n := len(fams["nichealth_port_healthy"].samples); n != 13 {
		t.Errorf("%d port_healthy series, want 13 (dgx-h100 PF ports)", n)
	}
	want := 0
	for _, p := range src.ports {
		want += len(p.Counters)
	}
	if n := len(fams["nichealth_hwcounter_value"].samples); n != want {
		t.Errorf("%d counter_value series, want %d", n, want)
	}
	roles := map[string]int{}
	for _, s := range fams["nichealth_port_healthy"].samples {
		roles[s.labels["role"]]++
	}
	if roles["Compute"] == 0 {
		t.Errorf("no Compute role label in %v", roles)
	}
}

func TestHealthz_4_OKThenStalled(t *testing.T) {
	m := New()
	fixed := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	m.now = func() time.Time { return fixed }
	src := &fakeSource{}
	h := m.Handler(src)
	get := func() (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := get(); code != 200 || body != "ok\n" {
		t.Fatalf("healthy: %d %q", code, body)
	}
	src.setStalled(true)
	code, body := get()
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "poll loop stalled") || !strings.Contains(body, "no poll has completed") {
		t.Fatalf("stalled before any poll: %d %q", code, body)
	}
	m.ObservePoll(time.Millisecond)
	code, body = get()
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "poll loop stalled since 2025-03-01T12:00:00Z") {
		t.Fatalf("stalled: %d %q", code, body)
	}
	src.setStalled(false)
	if code, _ := get(); code != 200 {
		t.Fatalf("recovered: %d", code)
	}
	// Issue 22 row 2: polling, but the outbox refuses every event.
	src.mu.Lock()
	src.undeliv = "3 events cannot be written to the outbox"
	src.mu.Unlock()
	if code, body := get(); code != http.StatusServiceUnavailable || !strings.Contains(body, "cannot be made durable: 3 events") {
		t.Fatalf("undeliverable: %d %q", code, body)
	}
}

func TestHealthz_4_AnswersWhileSourceBlocked(t *testing.T) {
	// A wedged poll cycle holds the daemon's lock: /metrics cannot answer,
	// /healthz must (it only asks Stalled).
	src := &fakeSource{block: make(chan struct{}), entered: make(chan struct{}, 4), stalled: true}
	h := New().Handler(src)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *httptest.ResponseRecorder)
	go func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil).WithContext(ctx))
		done <- rec
	}()
	<-src.entered
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("healthz %d while stalled", rec.Code)
	}
	cancel()
	if r := <-done; r.Code != http.StatusServiceUnavailable || !strings.Contains(r.Body.String(), "did not answer") {
		t.Errorf("blocked scrape: %d %q", r.Code, r.Body.String())
	}
	close(src.block)
}

func TestMetrics_7_BlockedSourceSharedAndTimesOut(t *testing.T) {
	src := &fakeSource{block: make(chan struct{}), entered: make(chan struct{}, 4)}
	h := New().Handler(src)
	// Scrape 1: Prometheus's own timeout header bounds the wait.
	first := make(chan *httptest.ResponseRecorder)
	go func() {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", "0.01")
		h.ServeHTTP(rec, req)
		first <- rec
	}()
	<-src.entered
	if r := <-first; r.Code != http.StatusServiceUnavailable || !strings.Contains(r.Body.String(), "10ms") {
		t.Fatalf("scrape 1: %d %q", r.Code, r.Body.String())
	}
	// Scrape 2 joins the gather still blocked; it must not start another.
	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan int)
	go func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil).WithContext(ctx))
		second <- rec.Code
	}()
	cancel()
	if code := <-second; code != http.StatusServiceUnavailable {
		t.Fatalf("scrape 2: %d", code)
	}
	src.mu.Lock()
	calls := src.calls
	src.mu.Unlock()
	if calls != 1 {
		t.Fatalf("Manager called %d times while blocked, want 1 shared call", calls)
	}
	// The lock is released: scrapes work again.
	src.mu.Lock()
	block := src.block
	src.block = nil
	src.mu.Unlock()
	close(block)
	if code, page, _ := scrape(t, h); code != 200 {
		t.Fatalf("after unblock: %d %s", code, page)
	}
}

func TestMetrics_7_SourcePanicContained(t *testing.T) {
	src := &fakeSource{panicMsg: "index out of range"}
	h := New().Handler(src)
	code, body, _ := scrape(t, h)
	if code != http.StatusInternalServerError || !strings.Contains(body, "panicked") {
		t.Fatalf("%d %q", code, body)
	}
	src.panicMsg = ""
	if code, _, _ := scrape(t, h); code != 200 {
		t.Fatalf("after panic: %d", code)
	}
}

func TestHandler_7_RoutesAndMethods(t *testing.T) {
	h := New().Handler(unhealthySource())
	for _, tc := range []struct {
		method, path string
		code         int
		body         bool
	}{
		{http.MethodGet, "/", 200, true},
		{http.MethodGet, "/metrics", 200, true},
		{http.MethodHead, "/metrics", 200, false},
		{http.MethodHead, "/healthz", 503, false},
		{http.MethodPost, "/metrics", 405, true},
		{http.MethodGet, "/metrics/extra", 404, true},
		{http.MethodGet, "/nope", 404, true},
	} {
		srv := httptest.NewServer(h)
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.Close()
		if resp.StatusCode != tc.code || (len(b) > 0) != tc.body {
			t.Errorf("%s %s: %d with %d body bytes, want %d body %v", tc.method, tc.path, resp.StatusCode, len(b), tc.code, tc.body)
		}
	}
}

func TestHandler_7_NilSource(t *testing.T) {
	h := New().Handler(nil)
	for _, p := range []string{"/metrics", "/healthz"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p, nil))
		if rec.Code != http.StatusInternalServerError {
			t.Errorf("%s: %d", p, rec.Code)
		}
	}
}

func TestObservePoll_7_ZeroAllocs(t *testing.T) {
	m := New()
	if n := testing.AllocsPerRun(1000, func() { m.ObservePoll(3 * time.Millisecond) }); n != 0 {
		t.Fatalf("ObservePoll allocates %v per call", n)
	}
}

func TestObservePoll_7_ConcurrentWithScrape(t *testing.T) {
	m := New()
	h := m.Handler(unhealthySource())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 2000; i++ {
			m.ObservePoll(time.Duration(i) * time.Microsecond)
		}
	}()
	for i := 0; i < 20; i++ {
		_, page, _ := scrape(t, h)
		mustParse(t, page) // _count always equals +Inf
	}
	<-done
	_, page, _ := scrape(t, h)
	if v := mustParse(t, page)["nichealth_poll_duration_seconds"].value(t, "le", "+Inf"); v != 2000 {
		t.Fatalf("+Inf %v, want 2000", v)
	}
}
