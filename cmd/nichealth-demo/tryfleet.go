package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// fleetOptions are make try-fleet's: the try node's directory, the
// binaries (for the map command it prints) and the shipped rules.
type fleetOptions struct {
	dir, bin, rules string
}

// defaultPrometheus is Prometheus's own default address; a free port is
// taken when something else holds it.
const defaultPrometheus = "127.0.0.1:9090"

// The fleet's evaluation pace: the shipped rules' for: durations are
// minutes, so a 5 s cycle shows NICPortFatal firing about a minute after
// make try-fleet, as it would on a fleet scraped every 30 s.
const fleetConfig = `# make try-fleet: the try node scraped as a fleet scrapes its nodes
# (job nichealthd, cluster and rack labels), with the shipped rules.
global:
  scrape_interval: 5s
  scrape_timeout: 4s
  evaluation_interval: 5s
rule_files:
  - %q
scrape_configs:
  - job_name: nichealthd
    static_configs:
      - targets: [%q]
        labels: {cluster: try, rack: try-rack, instance: try-node}
`

// startFleet runs Debian's prometheus beside a running try node, with the
// shipped rules, scraping the address the node's daemon bound; make
// try-stop ends it with the node.
func startFleet(w io.Writer, o fleetOptions) error {
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return err
	}
	procs, err := readPidFile(dir)
	if err != nil || len(alive(procs)) != len(procs) {
		return fmt.Errorf("no try-it node runs in %s: make try starts one", dir)
	}
	target := readMetricsAddr(dir)
	if target == "" {
		return fmt.Errorf("the try-it node in %s has no metrics address on record: make try-stop, then make try", dir)
	}
	fleetDir := filepath.Join(dir, "fleet")
	for _, p := range procs {
		if p.name == "prometheus" {
			return printFleet(w, o, readFile(filepath.Join(fleetDir, "url")))
		}
	}
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		return fmt.Errorf("prometheus is not installed (apt-get install prometheus: Debian's package, the server and promtool): %w", err)
	}
	rules, err := os.ReadFile(o.rules)
	if err != nil {
		return fmt.Errorf("read the shipped rules (run from the repository, or pass --rules): %w", err)
	}
	if err := os.MkdirAll(fleetDir, 0o755); err != nil {
		return err
	}
	// A copy: the running server never reads the working tree.
	rulesCopy := filepath.Join(fleetDir, "nichealth.rules.yml")
	if err := os.WriteFile(rulesCopy, rules, 0o644); err != nil {
		return err
	}
	cfg := filepath.Join(fleetDir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(fleetConfig, rulesCopy, target)), 0o644); err != nil {
		return err
	}
	addr := defaultPrometheus
	if l, err := net.Listen("tcp", addr); err != nil {
		if addr, err = freeAddr(); err != nil {
			return err
		}
		fmt.Fprintf(w, "Note: %s is taken, so Prometheus listens on %s.\n", defaultPrometheus, addr)
	} else {
		l.Close()
	}
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(fleetDir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Dir = fleetDir
	if err := startDetached(cmd, dir, "prometheus"); err != nil {
		return err
	}
	promURL := "http://" + addr
	if err := waitPrometheus(promURL, dir); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(fleetDir, "url"), []byte(promURL+"\n"), 0o644); err != nil {
		return err
	}
	return printFleet(w, o, promURL)
}

// waitPrometheus waits until the server is ready and has scraped the node
// once; it fails early, with the server's log, when the server exits.
func waitPrometheus(promURL, dir string) error {
	c := http.Client{Timeout: 5 * time.Second}
	logPath := filepath.Join(dir, "prometheus.log")
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if procs, err := readPidFile(dir); err == nil && len(alive(procs)) < len(procs) {
			return fmt.Errorf("prometheus exited; its log (%s):\n%s", logPath, readLog(logPath))
		}
		var r struct {
			Data struct {
				Result []json.RawMessage `json:"result"`
			} `json:"data"`
		}
		if err := getJSON(&c, promURL+"/api/v1/query?query="+url.QueryEscape(`up{job="nichealthd"} == 1`), &r); err == nil && len(r.Data.Result) > 0 {
			return waitEvaluated(&c, promURL, time.Now())
		}
	}
	return fmt.Errorf("prometheus at %s did not scrape the try node within 60s; its log (%s):\n%s", promURL, logPath, readLog(logPath))
}

// waitEvaluated waits until every rule group has been evaluated after
// since (the node's first scrape), so the alerts listed are the node's,
// not those of a server that had not scraped it yet.
func waitEvaluated(c *http.Client, promURL string, since time.Time) error {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		var r struct {
			Data struct {
				Groups []struct {
					LastEvaluation time.Time `json:"lastEvaluation"`
				} `json:"groups"`
			} `json:"data"`
		}
		if err := getJSON(c, promURL+"/api/v1/rules", &r); err != nil {
			continue
		}
		done := len(r.Data.Groups) > 0
		for _, g := range r.Data.Groups {
			done = done && g.LastEvaluation.After(since)
		}
		if done {
			return nil
		}
	}
	return fmt.Errorf("prometheus at %s did not evaluate its rules within 30s of scraping the try node", promURL)
}

// alertStates are the shipped alerts as the server evaluates them.
type alertState struct{ name, state, on string }

func fleetAlerts(promURL string) (loaded int, active []alertState, err error) {
	c := http.Client{Timeout: 5 * time.Second}
	var r struct {
		Data struct {
			Groups []struct {
				Rules []struct {
					Name   string `json:"name"`
					State  string `json:"state"`
					Alerts []struct {
						Labels map[string]string `json:"labels"`
						State  string            `json:"state"`
					} `json:"alerts"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := getJSON(&c, promURL+"/api/v1/rules?type=alert", &r); err != nil {
		return 0, nil, err
	}
	for _, g := range r.Data.Groups {
		for _, rule := range g.Rules {
			loaded++
			for _, a := range rule.Alerts {
				on := a.Labels["instance"]
				if d := a.Labels["device"]; d != "" {
					on += " " + d + " port " + a.Labels["port"]
				}
				active = append(active, alertState{rule.Name, a.State, on})
			}
		}
	}
	sort.Slice(active, func(i, j int) bool {
		if active[i].state != active[j].state {
			return active[i].state < active[j].state // firing before pending
		}
		return active[i].name+active[i].on < active[j].name+active[j].on
	})
	return loaded, active, nil
}

func printFleet(w io.Writer, o fleetOptions, promURL string) error {
	loaded, active, err := fleetAlerts(promURL)
	if err != nil {
		return fmt.Errorf("ask %s for its alerts: %w", promURL, err)
	}
	fmt.Fprintf(w, `Prometheus is running at %s (Debian's prometheus, in the try node's directory):
  it scrapes the try node as job nichealthd (cluster try, rack try-rack, instance try-node)
  every 5s and evaluates the %d alerts of packaging/prometheus/nichealth.rules.yml.
Alerts now (an alert fires once its expression has held for the rule's for:, NICPortFatal's 1m):
`, promURL, loaded)
	if len(active) == 0 {
		fmt.Fprintln(w, "  none pending or firing yet")
	}
	for _, a := range active {
		fmt.Fprintf(w, "  %-8s %-22s %s\n", a.state, a.name, a.on)
	}
	bin := o.bin
	if abs, err := filepath.Abs(o.bin); err == nil {
		bin = abs
	}
	fmt.Fprintf(w, `
  %s/alerts                                    every rule and its state, in a browser
  curl -s %s/api/v1/alerts                     the same as JSON
  %s map --ibnetdiscover packaging/examples/fabric-dgx-h100.topo --prometheus %s -o fabric.html
        the fabric map with the try node's health on it (gpu-a017 is the try node; with the
        fabric lab on, its mlx5_0 carries the lab's GUIDs and shows grey there)
Stop it:  make try-stop (stops the node too)
`, promURL, promURL, filepath.Join(bin, "nichealth-fabric"), promURL)
	return nil
}

func getJSON(c *http.Client, u string, v any) error {
	resp, err := c.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", u, resp.StatusCode)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(v)
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return strings.TrimSpace(string(b))
}
