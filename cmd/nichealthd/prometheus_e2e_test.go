package main

// The real Prometheus engine against the built daemon on a simulated node:
// promtool parses and lints the daemon's /metrics, and a Prometheus server
// on loopback scrapes the daemon, evaluates the shipped rules (their
// windows shortened) and fires the seeds' flap and drop alerts.

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/internal/promlab"
)

// requireTool finds a binary of Debian's prometheus package. Without it
// the test is skipped, loudly, except under CI=true, where it fails: CI
// must never pass without having run the real engine.
func requireTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s not found in PATH: install Debian's prometheus package (apt-get install prometheus)", name)
	}
	t.Skipf("SKIP: %s not found in PATH; install Debian's prometheus package to run this test", name)
	return ""
}

var metricsAddrRE = regexp.MustCompile(`msg="metrics endpoint listening" addr=(\S+)`)

// metricsNode starts the daemon on a simulated DGX H100 with the metrics
// endpoint on a loopback port the kernel picks, and returns the node and
// the endpoint's address once the first poll is done.
func metricsNode(t *testing.T) (*node, string) {
	t.Helper()
	n := newNode(t, "dgx-h100", "")
	// A top-level key: it goes before the file's first table.
	cfg, err := os.ReadFile(n.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(n.cfg, append([]byte(`metricsAddress = "127.0.0.1:0"`+"\n"), cfg...), 0o644); err != nil {
		t.Fatal(err)
	}
	n.start()
	n.waitEvent("baseline", portEvent("mlx5_0", event.KindPortBaseline))
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if m := metricsAddrRE.FindStringSubmatch(n.stderr.String()); m != nil {
			return n, m[1]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the daemon never logged its metrics address; stderr:\n%s", n.stderr.Tail())
	return nil, ""
}

func httpGet(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v\n%s", url, resp.StatusCode, err, b)
	}
	return b
}

// promtool check metrics is the parser and linter Prometheus ships: it
// exits 0 only for a page with no parse error and no lint problem.
func TestPrometheus_7_PromtoolChecksRealMetricsPage(t *testing.T) {
	t.Parallel()
	promtool := requireTool(t, "promtool")
	_, addr := metricsNode(t)
	page := httpGet(t, "http://"+addr+"/metrics")
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(page)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
	// The conventional exporter families are there, next to the daemon's.
	for _, name := range []string{
		"go_gc_duration_seconds", "go_goroutines", "go_info", "go_memstats_alloc_bytes", "go_threads",
		"process_cpu_seconds_total", "process_open_fds", "process_max_fds", "process_resident_memory_bytes",
		"process_start_time_seconds", "process_virtual_memory_bytes",
		"nichealth_port_link_down_episodes_total", "nichealth_poll_stalled", "nichealth_last_poll_timestamp_seconds",
	} {
		if !bytes.Contains(page, []byte("\n# TYPE "+name+" ")) {
			t.Errorf("no %s family on the page", name)
		}
	}
}

// shortened maps the shipped rules' windows to seconds so the seeds'
// minutes play out in a test: flap window 10m→10s, stabilization
// 30m→6s, drop 4m→3s, every for: to 1s.
var shortened = []struct{ from, to string }{
	{"[10m]", "[10s]"},
	{"[30m]", "[6s]"},
	{"[4m]", "[3s]"},
	{"offset 4m", "offset 3s"},
}

var forRE = regexp.MustCompile(`(?m)^(\s+for:) \d+m$`)

func shortRules(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "packaging", "prometheus", "nichealth.rules.yml"))
	if err != nil {
		t.Fatalf("read the shipped rules: %v", err)
	}
	s := string(b)
	for _, r := range shortened {
		if !strings.Contains(s, r.from) {
			t.Fatalf("the shipped rules no longer contain %q: update the test's shortened table", r.from)
		}
		s = strings.ReplaceAll(s, r.from, r.to)
	}
	if !forRE.MatchString(s) {
		t.Fatal("the shipped rules have no `for: Nm`: update the test")
	}
	return []byte(forRE.ReplaceAllString(s, "$1 1s"))
}

// freePort asks the kernel for a free loopback port. Prometheus only takes
// an address, so the port is released before Prometheus binds it; a rare
// collision shows as Prometheus exiting, and the caller retries.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startPrometheus runs a Prometheus server (internal/promlab) that
// scrapes target every 500 ms and evaluates rules as often, and returns
// its base URL once it is ready.
func startPrometheus(t *testing.T, target string, rules []byte) string {
	t.Helper()
	return promlab.Start(t, rules, promlab.Target{Addr: target, Labels: map[string]string{"cluster": "test-cluster", "rack": "test-rack"}}).URL
}

type promAlert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
}

// firing lists the alerts in state firing, from the HTTP API.
func firing(t *testing.T, base string) []promAlert {
	t.Helper()
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Alerts []promAlert `json:"alerts"`
		} `json:"data"`
	}
	if err := json.Unmarshal(httpGet(t, base+"/api/v1/alerts"), &r); err != nil || r.Status != "success" {
		t.Fatalf("/api/v1/alerts: %v %q", err, r.Status)
	}
	var out []promAlert
	for _, a := range r.Data.Alerts {
		if a.State == "firing" {
			out = append(out, a)
		}
	}
	return out
}

func hasAlert(as []promAlert, name, device string) bool {
	for _, a := range as {
		if a.Labels["alertname"] == name && a.Labels["device"] == device && a.Labels["port"] == "1" {
			return true
		}
	}
	return false
}

func alertNames(as []promAlert) string {
	var s []string
	for _, a := range as {
		s = append(s, a.Labels["alertname"]+"/"+a.Labels["device"])
	}
	return strings.Join(s, " ")
}

// waitAlert waits until the alert is firing (want) or no longer firing.
func waitAlert(t *testing.T, base, name, device string, want bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var last []promAlert
	for time.Now().Before(deadline) {
		last = firing(t, base)
		if hasAlert(last, name, device) == want {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s on %s port 1: firing=%v never reached; firing: %s", name, device, want, alertNames(last))
}

// waitQuery waits until an instant query returns at least one sample.
func waitQuery(t *testing.T, base, q string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var r struct {
			Data struct {
				Result []json.RawMessage `json:"result"`
			} `json:"data"`
		}
		if json.Unmarshal(httpGet(t, base+"/api/v1/query?query="+url.QueryEscape(q)), &r) == nil && len(r.Data.Result) > 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("query %s never returned a sample", q)
}

// Seed state 6.3 (RepeatedNICLinkFlap with its stabilization window) and
// 6.2 (NICPortDrop), as fleet alerts: the simulator flaps mlx5_0 port 1
// three times and drops mlx5_1 port 1; a real Prometheus scraping the
// daemon fires both alerts, and the flap alert clears once the port has
// been stable for the (shortened) stabilization window.
func TestPrometheus_6_2_6_3_FlapAndDropAlertsFire(t *testing.T) {
	t.Parallel()
	requireTool(t, "prometheus")
	promtool := requireTool(t, "promtool")
	n, addr := metricsNode(t)
	base := startPrometheus(t, addr, shortRules(t))
	// A sample from before the faults: the episode counter's baseline.
	waitQuery(t, base, `nichealth_port_link_down_episodes_total{device="mlx5_0",rack="test-rack"} == 0`)

	// Three link-down episodes on one port: DOWN with link_downed
	// stepping, then ACTIVE again, each seen by the daemon.
	for i := 0; i < 3; i++ {
		skip := len(n.read())
		if err := n.h.SetPortState("mlx5_0", 1, "DOWN", "Polling"); err != nil {
			t.Fatal(err)
		}
		if err := n.h.AddCounter("mlx5_0", 1, "counters/link_downed", 1); err != nil {
			t.Fatal(err)
		}
		n.waitEventAfter(skip, "mlx5_0 down", func(e event.Event) bool {
			return e.Device() == "mlx5_0" && e.Kind == event.KindPortFatal && e.CheckName == event.InfiniBandStateCheck
		})
		if err := n.h.SetPortState("mlx5_0", 1, "ACTIVE", "LinkUp"); err != nil {
			t.Fatal(err)
		}
		n.waitEventAfter(skip, "mlx5_0 up", portEvent("mlx5_0", event.KindPortRecovered))
	}
	waitAlert(t, base, "RepeatedNICLinkFlap", "mlx5_0", true)
	// Each flap was seen by link_downed and by the state: counted once.
	waitQuery(t, base, `nichealth_port_link_down_episodes_total{device="mlx5_0",port="1"} == 3`)

	// The port drops: down once (the fall itself steps link_downed) and
	// never retrains.
	skip := len(n.read())
	if err := n.h.SetPortState("mlx5_1", 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	if err := n.h.AddCounter("mlx5_1", 1, "counters/link_downed", 1); err != nil {
		t.Fatal(err)
	}
	n.waitEventAfter(skip, "mlx5_1 down", portEvent("mlx5_1", event.KindPortFatal))
	waitAlert(t, base, "NICPortDrop", "mlx5_1", true)
	waitAlert(t, base, "NICPortFatal", "mlx5_1", true)

	// mlx5_0 has been stable since its third flap: the stabilization
	// window runs out and the flap alert clears; the dropped port's stays.
	waitAlert(t, base, "RepeatedNICLinkFlap", "mlx5_0", false)
	if as := firing(t, base); !hasAlert(as, "NICPortDrop", "mlx5_1") || hasAlert(as, "NICPortDrop", "mlx5_0") {
		t.Fatalf("after the flap cleared: firing %s", alertNames(as))
	}
	checkDashboardQueries(t, base)
	// The page of a node with faults (fatal ports, latched breaches) still
	// passes the real parser and linter.
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(httpGet(t, "http://"+addr+"/metrics"))
	if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Fatalf("promtool check metrics on the faulty node: %v\n%s", err, out)
	}
	n.stop()
}

// checkDashboardQueries runs every query of the shipped Grafana dashboard
// on the real engine, its variables set to match everything: each must
// parse and evaluate, and the port health table must show the node's
// ports.
func checkDashboardQueries(t *testing.T, base string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "packaging", "grafana", "nichealthd.json"))
	if err != nil {
		t.Fatalf("read the shipped dashboard: %v", err)
	}
	type panel struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	}
	var d struct {
		Panels []panel `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	vars := strings.NewReplacer("$cluster", ".*", "$rack", ".*", "$instance", ".*", "$counter", ".*")
	n := 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			q := vars.Replace(tg.Expr)
			resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(q))
			if err != nil {
				t.Fatal(err)
			}
			var r struct {
				Status string `json:"status"`
				Error  string `json:"error"`
				Data   struct {
					Result []json.RawMessage `json:"result"`
				} `json:"data"`
			}
			err = json.NewDecoder(resp.Body).Decode(&r)
			resp.Body.Close()
			if err != nil || r.Status != "success" {
				t.Errorf("panel %q: query %s: %v %s %s", p.Title, q, err, r.Status, r.Error)
			}
			if p.Title == "Port health" && len(r.Data.Result) < 12 {
				t.Errorf("port health query %s: %d series, want one per dgx-h100 monitored port", q, len(r.Data.Result))
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("the dashboard has no queries")
	}
}
