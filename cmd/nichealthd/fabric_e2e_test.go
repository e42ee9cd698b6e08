package main

// The fabric view end to end: the built daemon on a simulated DGX H100
// exports its ports' GUIDs, a real Prometheus scrapes it, a port goes
// fatal, and the built nichealth-fabric draws the shipped example fabric
// (which holds this node's GUIDs) with that port fatal, in a real
// headless Chromium.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/internal/browser"
)

func TestFabric_12_FatalPortFromRealPrometheusInBrowser(t *testing.T) {
	t.Parallel()
	requireTool(t, "prometheus")
	b := browser.Start(t)
	dir := t.TempDir()
	fabricBin := filepath.Join(dir, "nichealth-fabric")
	if out, err := exec.Command("go", "build", "-o", fabricBin, "../nichealth-fabric").CombinedOutput(); err != nil {
		t.Fatalf("build nichealth-fabric: %v\n%s", err, out)
	}
	n, addr := metricsNode(t)
	base := startPrometheus(t, addr, shortRules(t))
	waitQuery(t, base, `nichealth_port_info{device="mlx5_3",port="1",node_guid="0xb83fd20300a0b040",port_guid="0xb83fd20300a0b040"}`)

	skip := len(n.read())
	if err := n.h.SetPortState("mlx5_3", 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	n.waitEventAfter(skip, "mlx5_3 down", portEvent("mlx5_3", event.KindPortFatal))
	waitQuery(t, base, `nichealth_port_verdict{device="mlx5_3",port="1"} == 2`)

	page := filepath.Join(dir, "fabric.html")
	cmd := exec.Command(fabricBin, "map", "--ibnetdiscover", filepath.Join("..", "..", "packaging", "examples", "fabric-dgx-h100.topo"),
		"--prometheus", base, "--json", "-o", page)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nichealth-fabric map: %v\n%s", err, out)
	}
	g := decodeFabricMap(t, out)
	if g.Switches != 12 || g.HCAs != 32 || g.Routers != 0 || len(g.Links) != 64 {
		t.Fatalf("example fabric: %d switches %d HCAs %d routers %d links", g.Switches, g.HCAs, g.Routers, len(g.Links))
	}
	verdicts := map[string]string{}
	for _, l := range g.Links {
		verdicts[l.A.GUID] = l.Verdict
	}
	// mlx5_3 fatal; mlx5_0 to mlx5_7's others healthy; other hosts' HCAs
	// run no daemon here: not reported.
	for guid, want := range map[string]string{
		"0xb83fd20300a0b040": "fatal", "0xb83fd20300a0b010": "healthy", "0xb83fd20300a0b080": "healthy", "0x946dae0300b11000": "",
	} {
		if verdicts[guid] != want {
			t.Errorf("link of %s: verdict %q, want %q", guid, verdicts[guid], want)
		}
	}

	b.Navigate(t, "file://"+page)
	var got struct{ Fatal, Healthy, Other, FatalLink string }
	b.Eval(t, `(function(){function v(s){var e=document.querySelector(s); return e ? e.getAttribute("data-verdict") : "<none>"}
		return {Fatal: v("#port-0xb83fd20300a0b040-1"), Healthy: v("#port-0xb83fd20300a0b010-1"),
			Other: v("#port-0x946dae0300b11000-1"), FatalLink: v('line.link[data-a="0xb83fd20300a0b040"]')}})()`, &got)
	if got.Fatal != "fatal" || got.Healthy != "healthy" || got.Other != "unknown" || got.FatalLink != "fatal" {
		t.Errorf("drawn: %+v", got)
	}
	var summary string
	b.Eval(t, `document.getElementById("summary").textContent`, &summary)
	if want := fmt.Sprintf("health from prometheus %s", base); !strings.Contains(summary, want) {
		t.Errorf("summary %q lacks %q", summary, want)
	}
	n.stop()
	_ = os.Remove(page)
}

// fabricMap is nichealth-fabric map --json as these tests read it.
type fabricMap struct {
	Switches, HCAs, Routers int
	Links                   []struct {
		A, B struct {
			GUID    string `json:"guid"`
			Port    int    `json:"port"`
			Verdict string `json:"verdict"`
		}
		Verdict string `json:"verdict"`
		Unread  bool   `json:"unread"`
	}
}

func decodeFabricMap(t *testing.T, out []byte) fabricMap {
	t.Helper()
	var g fabricMap
	if err := json.Unmarshal(out, &g); err != nil {
		t.Fatalf("nichealth-fabric map --json: %v\n%.2000s", err, out)
	}
	return g
}
