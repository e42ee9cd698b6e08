package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/nichealth/nichealthd/internal/promlab"
)

// forClause is a rule's pending time; the test holds none of it, so a
// rule fires at its first evaluation that finds it true.
var forClause = regexp.MustCompile(`(?m)^(\s+for:) \d+[smh]$`)

// DESIGN.md section 14 end to end: two daemons export different shares
// of the shipped DGX H100 fabric's switch ports, node-a spine01's ports 1
// and 2 (port 1's symbol errors rise 200/s) and node-b rail1-leaf01's
// port 33 (the far end of spine01 port 1, clean) and port 1 (towards an
// HCA). A real Prometheus with the shipped rules fires the fabric link
// alert for spine01 port 1 from node-a alone, and the built
// nichealth-fabric map --prometheus draws that spine link as erroring.
func TestFabric_14_SpineLinkErrorsFromTwoSharesToTheMap(t *testing.T) {
	t.Parallel()
	const spine01, leaf01 = "0xfc6a1c0300e40000", "0xfc6a1c0300e50000"
	rules, err := os.ReadFile(filepath.Join("..", "..", "packaging", "prometheus", "nichealth.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	a := promlab.FabricDaemon(t, true, []promlab.FabricPort{
		{SwitchGUID: spine01, SwitchName: "ibsw-spine01", Port: 1, SymbolErrorsPerScrape: 100},
		{SwitchGUID: spine01, SwitchName: "ibsw-spine01", Port: 2},
	})
	b := promlab.FabricDaemon(t, true, []promlab.FabricPort{
		{SwitchGUID: leaf01, SwitchName: "ibsw-rail1-leaf01", Port: 33},
		{SwitchGUID: leaf01, SwitchName: "ibsw-rail1-leaf01", Port: 1},
	})
	prom := promlab.Start(t, forClause.ReplaceAll(rules, []byte("$1 0s")),
		promlab.Target{Addr: a, Labels: map[string]string{"instance": "node-a", "cluster": "c1"}},
		promlab.Target{Addr: b, Labels: map[string]string{"instance": "node-b", "cluster": "c1"}})
	bin := buildFabricTool(t)

	fired := prom.Wait(t, `ALERTS{alertname="NICFabricLinkSymbolErrors",alertstate="firing"}`)
	if len(fired) != 1 {
		t.Fatalf("NICFabricLinkSymbolErrors fired %d times: %v", len(fired), fired)
	}
	for k, want := range map[string]string{"instance": "node-a", "switch_guid": spine01, "switch_name": "ibsw-spine01", "port": "1",
		"counter": "SymbolErrorCounter", "severity": "warning", "scope": "fabric", "seed_counter": "symbol_error"} {
		if got := fired[0].Metric[k]; got != want {
			t.Errorf("alert label %s=%q, want %q (%v)", k, got, want, fired[0].Metric)
		}
	}
	// 200/s is also far past the hour's 120: the link is outside spec.
	prom.Wait(t, `ALERTS{alertname="NICFabricLinkSymbolErrorsBER",alertstate="firing",instance="node-a",port="1"}`)
	if other := prom.Query(t, `ALERTS{alertname=~"NICFabric.+",alertstate="firing",instance!="node-a"}`); len(other) != 0 {
		t.Errorf("fabric alerts from node-b's clean share: %v", other)
	}
	// Both daemons' shares are read freshly: nothing unread, no share refused.
	if other := prom.Query(t, `ALERTS{alertname=~"NICFabricPortUnread|NICFabricAssignmentRefused"}`); len(other) != 0 {
		t.Errorf("unexpected alerts: %v", other)
	}

	out, err := exec.Command(bin, "map", "--ibnetdiscover", filepath.Join("..", "..", "packaging", "examples", "fabric-dgx-h100.topo"),
		"--prometheus", prom.URL, "--json").Output()
	if err != nil {
		t.Fatalf("nichealth-fabric map: %v\n%s", err, out)
	}
	var g struct {
		Links []struct {
			A, B struct {
				GUID    string `json:"guid"`
				Port    int    `json:"port"`
				Verdict string `json:"verdict"`
			}
			Verdict string `json:"verdict"`
			Unread  bool   `json:"unread"`
		}
	}
	if err := json.Unmarshal(out, &g); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	type end struct {
		guid string
		port int
	}
	verdict, unread := map[end]string{}, map[end]bool{}
	for _, l := range g.Links {
		for _, e := range []end{{l.A.GUID, l.A.Port}, {l.B.GUID, l.B.Port}} {
			verdict[e], unread[e] = l.Verdict, l.Unread
		}
	}
	for e, want := range map[end]string{
		{spine01, 1}:              "fatal", // the erroring spine link, its BER rule critical
		{spine01, 2}:              "healthy",
		{leaf01, 1}:               "healthy", // an HCA's link, seen from the leaf
		{"0xfc6a1c0300e40200", 1}: "",        // spine03: in no share
	} {
		if verdict[e] != want || unread[e] {
			t.Errorf("link of %s port %d: verdict %q unread %v, want %q", e.guid, e.port, verdict[e], unread[e], want)
		}
	}
}
