package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/internal/component"
)

// make try-fleet: a real Prometheus with the shipped rules scrapes the try
// node, prints its URL, the alerts and the map command; the node's latched
// link_downed breach on mlx5_3 fires NICPortFatal there; make try-stop
// ends the server with the node.
func TestTryFleet_ShippedRuleFiresOnTheTryNode(t *testing.T) {
	needDBus(t)
	if _, err := exec.LookPath("prometheus"); err != nil {
		component.Missing(t, "prometheus not in PATH (apt-get install prometheus)")
		return
	}
	dir, code, out, errs := startTryNode(t, binDir, "--metrics-address", freeLoopbackAddr(t))
	if code != 0 {
		t.Fatalf("make try exited %d:\n%s\n%s", code, out, errs)
	}
	demo := filepath.Join(binDir, "nichealth-demo")
	fleet := exec.Command(demo, "--fleet", "--dir", dir, "--bin", binDir, "--rules", "../../packaging/prometheus/nichealth.rules.yml")
	b, err := fleet.CombinedOutput()
	if err != nil {
		t.Fatalf("make try-fleet: %v\n%s", err, b)
	}
	text := string(b)
	m := regexp.MustCompile(`Prometheus is running at (http://127\.0\.0\.1:\d+)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("make try-fleet did not print the server's URL:\n%s", text)
	}
	promURL := m[1]
	for _, want := range []string{
		"NICPortFatal           try-node mlx5_3 port 1",
		"nichealth-fabric map --ibnetdiscover packaging/examples/fabric-dgx-h100.topo --prometheus " + promURL,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("make try-fleet's output lacks %q:\n%s", want, text)
		}
	}
	// The rule's for: is a minute; evaluated every 5 s.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var r struct {
			Data struct {
				Alerts []struct {
					Labels map[string]string `json:"labels"`
					State  string            `json:"state"`
				} `json:"alerts"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(get(t, promURL+"/api/v1/alerts")), &r); err != nil {
			t.Fatal(err)
		}
		firing := false
		for _, a := range r.Data.Alerts {
			firing = firing || (a.State == "firing" && a.Labels["alertname"] == "NICPortFatal" &&
				a.Labels["device"] == "mlx5_3" && a.Labels["instance"] == "try-node")
		}
		if firing {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("NICPortFatal never fired for try-node mlx5_3; alerts: %+v", r.Data.Alerts)
		}
		time.Sleep(time.Second)
	}
	stop, err := exec.Command(demo, "--stop", "--dir", dir).CombinedOutput()
	if err != nil || !strings.Contains(string(stop), "Stopped prometheus") {
		t.Errorf("make try-stop did not stop prometheus: %v\n%s", err, stop)
	}
}
