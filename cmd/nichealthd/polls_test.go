package main

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Progress of the daemon under test, read from its metrics endpoint: the
// number of completed polls and the last value it read from a counter. A
// test that checks that something did NOT happen waits for the daemon to
// have looked (polls completed, a value read), never for wall time.

// waitDeadline bounds every wait for something to happen. A wait that
// succeeds returns as soon as it sees it, so the bound only decides how
// long a real failure takes to be reported: it is set for a 2-core
// machine running two test suites at once (the race-built daemon's
// slowest wait seen there, a disappeared NIC after three enumerations,
// took 55 s). Waits for something NOT to happen count the daemon's polls
// instead (waitPolls), never wall time.
const waitDeadline = 2 * time.Minute

// withMetrics turns on the metrics endpoint on a free loopback port. Call
// it after the configuration is written and before start.
func (n *node) withMetrics() {
	n.t.Helper()
	b, err := os.ReadFile(n.cfg)
	if err != nil {
		n.t.Fatal(err)
	}
	// A top-level key: it must come before the first table.
	if err := os.WriteFile(n.cfg, append([]byte("metricsAddress = \"127.0.0.1:0\"\n"), b...), 0o644); err != nil {
		n.t.Fatal(err)
	}
}

var metricsAddrRe = regexp.MustCompile(`msg="metrics endpoint listening" addr=(\S+)`)

// metricsURL is the endpoint of the running daemon, from its log.
func (n *node) metricsURL() string {
	n.t.Helper()
	var addr string
	n.waitLog("the metrics endpoint", func(l string) bool {
		m := metricsAddrRe.FindAllStringSubmatch(l, -1)
		if len(m) == 0 {
			return false
		}
		addr = m[len(m)-1][1]
		return true
	})
	return "http://" + addr + "/metrics"
}

// scrape returns every sample of the endpoint keyed by its name and
// labels as printed ("nichealth_hwcounter_value{device=\"mlx5_0\",...}").
func (n *node) scrape(url string) (map[string]float64, error) {
	c := &http.Client{Timeout: 10 * time.Second}
	if n.http != nil {
		c = n.http
	}
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}

// waitMetric waits until the endpoint's samples satisfy ok; key names the
// sample shown when it times out.
func (n *node) waitMetric(what, key string, ok func(m map[string]float64) bool) {
	n.t.Helper()
	url := n.metricsURL()
	deadline := time.Now().Add(waitDeadline)
	for {
		m, err := n.scrape(url)
		if err == nil && ok(m) {
			return
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("metrics never showed %s (%s = %v, err %v)\nstderr:\n%s", what, key, m[key], err, n.stderr.Tail())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

const pollCount = "nichealth_poll_duration_seconds_count"

// waitPolls waits until k more polls have completed. A poll already under
// way when it is called counts, so waitPolls(2) is the least that
// guarantees one whole poll that started after the call.
func (n *node) waitPolls(k int) {
	n.t.Helper()
	var start float64
	n.waitMetric("a poll count", pollCount, func(m map[string]float64) bool {
		v, ok := m[pollCount]
		start = v
		return ok
	})
	n.waitMetric(fmt.Sprintf("%d more polls", k), pollCount, func(m map[string]float64) bool {
		return m[pollCount] >= start+float64(k)
	})
}

// waitCounterValue waits until the daemon has read value from a counter.
func (n *node) waitCounterValue(dev string, port int, counter string, value float64) {
	n.t.Helper()
	want := []string{fmt.Sprintf("device=%q", dev), fmt.Sprintf(`port="%d"`, port), fmt.Sprintf("counter=%q", counter)}
	n.waitMetric(fmt.Sprintf("%s %d %s = %v", dev, port, counter, value), counter, func(m map[string]float64) bool {
		for k, v := range m {
			if !strings.HasPrefix(k, "nichealth_hwcounter_value{") {
				continue
			}
			all := true
			for _, w := range want {
				all = all && strings.Contains(k, w)
			}
			if all {
				return v == value
			}
		}
		return false
	})
}

// counterFile is the value of a counter file of the simulated host.
func (n *node) counterFile(dev string, port int, rel string) uint64 {
	n.t.Helper()
	p := filepath.Join(n.h.SysRoot(), "class", "infiniband", dev, "ports", strconv.Itoa(port), rel)
	b, err := os.ReadFile(p)
	if err != nil {
		n.t.Fatal(err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		n.t.Fatalf("%s: %v", p, err)
	}
	return v
}

// waitDrained waits until every event appended to the outbox since start
// is in the JSON-lines file.
func (n *node) waitDrained() {
	n.t.Helper()
	const last = "nichealth_outbox_last_sequence"
	n.waitMetric("the JSON-lines sink caught up with the outbox", last, func(m map[string]float64) bool {
		seq, ok := m[last]
		return ok && seq > 0 && float64(len(n.read())) >= seq
	})
}
