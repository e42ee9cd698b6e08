package main

// DESIGN.md section 14 on a real cluster's fabric, end to end: the PSMN
// X5 QDR cluster's published ibnetdiscover output (100 nodes, 11
// switches: six leaves and five spines) runs in ibsim under a real
// opensm; three of its hosts on three different leaves are one job. The
// built nichealth-fabric plans the job from the lab's own ibnetdiscover -p
// and dump_lfts, three built daemons attached as the three hosts read
// their shares, symbol errors set on one spine port show in the metrics
// of exactly the daemon that port was assigned to, a real Prometheus with
// the shipped rules fires the fabric link alerts from that daemon alone,
// and nichealth-fabric map --prometheus draws the spine link as erroring;
// a fabric that stops answering costs the reads, never the poll loop.

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/internal/iblab"
	"github.com/nichealth/nichealthd/internal/promlab"
)

// The X5 job: one host on each of three leaves, named by a node-name map
// (every X5 HCA describes itself as "MT25408 ConnectX Mellanox
// Technologies", so the first word of the description names no host).
// The map names each HCA by its port GUID, as ibnetdiscover -p prints it.
var x5Job = []struct{ host, sim, guid string }{
	{"x5-node-a", "H-78e7d10300229794", "0x78e7d10300229795"}, // leaf S-0002c90200417670 port 1
	{"x5-node-b", "H-78e7d10300229674", "0x78e7d10300229675"}, // leaf S-0008f105002036b4 port 7
	{"x5-node-c", "H-003048c749cd0000", "0x003048c749cd0001"}, // leaf S-0008f10500200b50 port 4
}

// x5Spines are the X5 switches cabled to no HCA: every port of theirs is
// a switch-to-switch link.
var x5Spines = []string{"0x0008f10500108098", "0x0008f1050010851e", "0x0008f10500108530", "0x0008f10500108c5c", "0x0008f105001086a2"}

func TestDesign_14_RealClusterSpineErrorsReachPrometheusFromOneNodeAndTheMap(t *testing.T) {
	helper := madHelper(t)
	sims := []string{}
	for _, j := range x5Job {
		sims = append(sims, j.sim)
	}
	l, err := iblab.Start(iblab.Options{Fabric: iblab.X5, SM: "H-0002c90300048288", Active: sims})
	iblab.Require(t, err)
	t.Cleanup(l.Close)

	var nm strings.Builder
	hosts := []string{}
	for _, j := range x5Job {
		fmt.Fprintf(&nm, "%s %q\n", j.guid, j.host+" HCA-1")
		hosts = append(hosts, j.host)
	}
	mapFile := filepath.Join(t.TempDir(), "ib-node-name-map")
	if err := os.WriteFile(mapFile, []byte(nm.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	lists, dir := planJobAs(t, l, x5Job[0].sim, mapFile, hosts...)

	// The spine port with the errors, and who reads it.
	owner, spine := "", shareEntry{}
	total := 0
	for _, h := range hosts {
		total += len(lists[h])
		for _, e := range lists[h] {
			if owner == "" && slices.Contains(x5Spines, e.SwitchGUID) {
				owner, spine = h, e
			}
		}
	}
	if owner == "" {
		t.Fatalf("no spine port in the plan of three hosts on three leaves: %+v", lists)
	}
	t.Logf("%d switch ports in the job's plan; %s port %d (LID %d) is %s's", total, spine.SwitchGUID, spine.Port, spine.SwitchLID, owner)

	node := map[string]*node{}
	addr := map[string]string{}
	var targets []promlab.Target
	for _, j := range x5Job {
		n, u := shareNode(t, l, helper, j.sim, j.host, filepath.Join(dir, j.host+".json"))
		node[j.host] = n
		addr[j.host] = u
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, promlab.Target{Addr: pu.Host, Labels: map[string]string{"instance": j.host, "cluster": "x5"}})
	}
	rules, err := os.ReadFile(filepath.Join("..", "..", "packaging", "prometheus", "nichealth.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	// No pending time: a rule fires at its first evaluation that holds.
	forClause := regexp.MustCompile(`(?m)^(\s+for:) \d+[smh]$`)
	prom := promlab.Start(t, forClause.ReplaceAll(rules, []byte("$1 0s")), targets...)

	sw := "S-" + strings.TrimPrefix(spine.SwitchGUID, "0x")
	if err := l.PerformanceSet(sw, spine.Port, "PortCounters.SymbolErrorCounter", 0); err != nil {
		t.Fatal(err)
	}
	// Every daemon reads its whole list, and Prometheus holds the clean
	// reading of the spine port before the errors come.
	for _, h := range hosts {
		node[h].waitScrape(addr[h], h+" reads its list", func(m map[string]float64) bool {
			for _, e := range lists[h] {
				if m[shareSeries("nichealth_fabric_port_last_read_timestamp_seconds", e, "")] == 0 {
					return false
				}
			}
			return m["nichealth_fabric_assigned_ports"] == float64(len(lists[h])) && m["nichealth_fabric_assignment_valid"] == 1
		})
	}
	sel := fmt.Sprintf(`nichealth_fabric_port_counter{switch_guid=%q,port="%d",counter="SymbolErrorCounter"}`, spine.SwitchGUID, spine.Port)
	prom.Wait(t, sel+" == 0")

	if err := l.PerformanceSet(sw, spine.Port, "PortCounters.SymbolErrorCounter", 60000); err != nil {
		t.Fatal(err)
	}
	sym := shareSeries("nichealth_fabric_port_counter", spine, "SymbolErrorCounter")
	node[owner].waitScrape(addr[owner], owner+" shows the errors of "+sym, func(m map[string]float64) bool { return m[sym] == 60000 })

	// Through Prometheus: the series comes from the owner alone, and so
	// do the fabric link alerts.
	if got := prom.Wait(t, sel+" == 60000"); len(got) != 1 || got[0].Metric["instance"] != owner {
		t.Fatalf("%s in Prometheus: %v, want one series from %s", sel, got, owner)
	}
	fired := prom.Wait(t, `ALERTS{alertname="NICFabricLinkSymbolErrorsBER",alertstate="firing"}`)
	if len(fired) != 1 || fired[0].Metric["instance"] != owner || fired[0].Metric["switch_guid"] != spine.SwitchGUID ||
		fired[0].Metric["port"] != fmt.Sprint(spine.Port) {
		t.Fatalf("NICFabricLinkSymbolErrorsBER: %v, want one alert from %s for %s port %d", fired, owner, spine.SwitchGUID, spine.Port)
	}
	if other := prom.Query(t, fmt.Sprintf(`ALERTS{alertname=~"NICFabric.+",alertstate="firing",instance!=%q}`, owner)); len(other) != 0 {
		t.Fatalf("fabric alerts from the hosts that do not read %s port %d: %v", spine.SwitchGUID, spine.Port, other)
	}

	// The fabric map over the same Prometheus draws the spine link fatal
	// (the critical BER rule fires for it) and the job's other read links
	// healthy.
	out, err := exec.Command(filepath.Join(dir, "..", "nichealth-fabric"), "map", "--ibnetdiscover", filepath.Join(dir, "..", "fabric.ports"),
		"--prometheus", prom.URL, "--json").Output()
	if err != nil {
		t.Fatalf("nichealth-fabric map --prometheus: %v\n%s", err, out)
	}
	g := decodeFabricMap(t, out)
	type end struct {
		guid string
		port int
	}
	verdict, link := map[end]string{}, map[end]int{}
	for i, lk := range g.Links {
		for _, e := range []end{{lk.A.GUID, lk.A.Port}, {lk.B.GUID, lk.B.Port}} {
			verdict[e], link[e] = lk.Verdict, i
		}
	}
	if v := verdict[end{spine.SwitchGUID, spine.Port}]; v != "fatal" {
		t.Fatalf("the map draws %s port %d's link %q, want fatal", spine.SwitchGUID, spine.Port, v)
	}
	healthy := 0
	for _, h := range hosts {
		for _, e := range lists[h] {
			if link[end{e.SwitchGUID, e.Port}] == link[end{spine.SwitchGUID, spine.Port}] {
				continue // the spine link's other end
			}
			if v := verdict[end{e.SwitchGUID, e.Port}]; v == "healthy" {
				healthy++
			} else if v == "fatal" || v == "degraded" {
				t.Errorf("the map draws %s port %d (read by %s, no errors) %q", e.SwitchGUID, e.Port, h, v)
			}
		}
	}
	if healthy == 0 {
		t.Errorf("the map draws none of the job's %d other read ports healthy", total-1)
	}

	// A fabric that stops answering (ibsim frozen) costs the reads, off
	// the poll loop: the owner keeps polling, /metrics answers, and the
	// failed reads are counted.
	failed := func(m map[string]float64) (n float64) {
		for k, v := range m {
			if strings.HasPrefix(k, "nichealth_fabric_port_read_errors_total{") {
				n += v
			}
		}
		return n
	}
	before, err := node[owner].scrape(addr[owner])
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Stop(); err != nil {
		t.Fatal(err)
	}
	thawed := false
	defer func() {
		if !thawed {
			l.Cont()
		}
	}()
	node[owner].waitPolls(20)
	node[owner].waitScrape(addr[owner], owner+" counts the reads the frozen fabric fails", func(m map[string]float64) bool { return failed(m) > failed(before) })
	if err := l.Cont(); err != nil {
		t.Fatal(err)
	}
	thawed = true
	for _, h := range hosts {
		node[h].stop()
	}
}
