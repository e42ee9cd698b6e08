package main

// Black-box test of balanced fabric queries (DESIGN.md section 14): the
// built nichealth-fabric plans a job of two hosts of the lab fabric from
// the lab's own ibnetdiscover -p and dump_lfts, and two built daemons,
// each attached to the fabric as one of the job's hosts (umad2sim's
// SIM_HOST) with its own assignment file, read their shares. perfquery's
// counterpart, ibsim's PerformanceSet, puts errors on one switch-to-switch
// port: they show in exactly the /metrics of the host it was assigned to.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/internal/fabricentry"
	"github.com/nichealth/nichealthd/internal/iblab"
)

// shareEntry is an entry of a plan's file by value; the file's shape is
// fabricentry's, the one the plan writes and the daemon parses.
type shareEntry struct {
	SwitchGUID string
	Port       int
	SwitchName string
	SwitchLID  int // 0: the file left it out
}

// shareEntries is l by value; an entry without its switch or port fails
// the test.
func shareEntries(t *testing.T, l []fabricentry.Entry) []shareEntry {
	t.Helper()
	out := make([]shareEntry, 0, len(l))
	for _, fe := range l {
		if fe.SwitchGUID == nil || fe.Port == nil {
			t.Fatalf("an entry without switchGUID or port: %+v", fe)
		}
		e := shareEntry{SwitchGUID: *fe.SwitchGUID, Port: *fe.Port, SwitchName: fe.SwitchName}
		if fe.SwitchLID != nil {
			e.SwitchLID = *fe.SwitchLID
		}
		out = append(out, e)
	}
	return out
}

// planJob runs nichealth-fabric plan for job on the lab's own dumps and
// returns each host's list and its file.
func planJob(t *testing.T, l *iblab.Lab, job ...string) (map[string][]shareEntry, string) {
	t.Helper()
	return planJobAs(t, l, iblab.GPUA018, "", job...)
}

// planJobAs is planJob with the dumps taken from the lab host runAs and
// the hosts named by the node-name map nameMap ("" none).
func planJobAs(t *testing.T, l *iblab.Lab, runAs, nameMap string, job ...string) (map[string][]shareEntry, string) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "nichealth-fabric")
	if out, err := exec.Command("go", "build", "-o", bin, "../nichealth-fabric").CombinedOutput(); err != nil {
		t.Fatalf("build nichealth-fabric: %v\n%s", err, out)
	}
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ports, err := l.Run(runAs, "ibnetdiscover", "-p")
	if err != nil {
		t.Fatal(err)
	}
	lfts, err := l.Run(runAs, "dump_lfts")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "plan")
	args := []string{"plan", "--ibnetdiscover", write("fabric.ports", ports), "--lfts", write("fabric.lfts", lfts),
		"--nodes", write("nodes", strings.Join(job, "\n")+"\n"), "-o", out}
	if nameMap != "" {
		args = append(args, "--node-name-map", nameMap)
	}
	cmd := exec.Command(bin, args...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nichealth-fabric plan: %v\n%s", err, b)
	}
	lists := map[string][]shareEntry{}
	for _, h := range job {
		b, err := os.ReadFile(filepath.Join(out, h+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var f fabricentry.File
		if err := json.Unmarshal(b, &f); err != nil || len(f.Assignments) != 1 {
			t.Fatalf("%s.json: %v\n%s", h, err, b)
		}
		lists[h] = shareEntries(t, f.Assignments[h])
	}
	return lists, out
}

// shareNode is a daemon attached to the lab as simHost, reading the
// share listed under host in assignment every 10 s (the shortest
// interval), its far end off.
func shareNode(t *testing.T, l *iblab.Lab, helper, simHost, host, assignment string) (*node, string) {
	t.Helper()
	n := newNode(t, "dgx-h100", fmt.Sprintf("[farEnd]\nenabled = false\nhelper = %q\n[fabric]\nassignment = %q\nhost = %q\ninterval = \"10s\"\ntimeout = \"800ms\"\n",
		helper, assignment, host))
	cfg, err := os.ReadFile(n.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(n.cfg, append([]byte(`metricsAddress = "127.0.0.1:0"`+"\n"), cfg...), 0o644); err != nil {
		t.Fatal(err)
	}
	n.env = append(n.env, l.Vars(simHost)...)
	n.workDir = l.Dir
	n.start()
	return n, n.metricsURL()
}

// shareSeries is a fabric sample's name and labels as a scrape keys it.
func shareSeries(name string, e shareEntry, counter string) string {
	s := fmt.Sprintf(`%s{switch_guid=%q,switch_name=%q,port="%d"`, name, e.SwitchGUID, e.SwitchName, e.Port)
	if counter != "" {
		s += fmt.Sprintf(`,counter=%q`, counter)
	}
	return s + "}"
}

// waitScrape scrapes url until ok holds.
func (n *node) waitScrape(url, what string, ok func(map[string]float64) bool) map[string]float64 {
	n.t.Helper()
	deadline := time.Now().Add(waitDeadline)
	for {
		m, err := n.scrape(url)
		if err == nil && ok(m) {
			return m
		}
		if time.Now().After(deadline) {
			var fab []string
			for k, v := range m {
				if strings.HasPrefix(k, "nichealth_fabric_") && !strings.Contains(k, "counter=") {
					fab = append(fab, fmt.Sprintf("%s %v", k, v))
				}
			}
			n.t.Fatalf("%s: never (%v)\n%s\nstderr:\n%s", what, err, strings.Join(fab, "\n"), n.stderr.Tail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func isSpine(e shareEntry) bool { return e.Port == 33 || e.Port == 34 }

func TestDesign_14_EachSwitchPortReadByTheHostItIsAssignedTo(t *testing.T) {
	l, helper, _ := fabricLab(t)
	const hostA, hostB = "gpu-a017", "sm-01"
	lists, dir := planJob(t, l, hostA, hostB)
	sim := map[string]string{hostA: iblab.GPUA017, hostB: iblab.SMHost}

	// The spine port with the errors, and who reads it.
	owner, other, spine := "", "", shareEntry{}
	for _, h := range []string{hostA, hostB} {
		for _, e := range lists[h] {
			if isSpine(e) && owner == "" {
				owner, spine = h, e
			}
			if e.SwitchLID == 0 {
				t.Fatalf("%s: %+v without switchLID", h, e)
			}
		}
	}
	if owner == "" {
		t.Fatalf("no switch-to-switch port in the plan: %+v", lists)
	}
	other = map[string]string{hostA: hostB, hostB: hostA}[owner]
	node := map[string]*node{}
	url := map[string]string{}
	for _, h := range []string{hostA, hostB} {
		node[h], url[h] = shareNode(t, l, helper, sim[h], h, filepath.Join(dir, h+".json"))
	}
	sw := map[string]string{iblab.Leaf1GUID: iblab.Leaf1, "0xb83fd20300a02000": iblab.Leaf2}[spine.SwitchGUID]
	if err := l.PerformanceSet(sw, spine.Port, "PortCounters.SymbolErrorCounter", 0); err != nil {
		t.Fatal(err)
	}
	// Each reads its whole list (every port's last read stamped), and only it.
	for _, h := range []string{hostA, hostB} {
		node[h].waitScrape(url[h], h+" reads its list", func(m map[string]float64) bool {
			for _, e := range lists[h] {
				if m[shareSeries("nichealth_fabric_port_last_read_timestamp_seconds", e, "")] == 0 {
					return false
				}
			}
			return m["nichealth_fabric_assigned_ports"] == float64(len(lists[h])) && m["nichealth_fabric_assignment_valid"] == 1
		})
	}
	if err := l.PerformanceSet(sw, spine.Port, "PortCounters.SymbolErrorCounter", 4321); err != nil {
		t.Fatal(err)
	}
	sym := shareSeries("nichealth_fabric_port_counter", spine, "SymbolErrorCounter")
	node[owner].waitScrape(url[owner], owner+" shows the errors of "+sym, func(m map[string]float64) bool { return m[sym] == 4321 })
	// The other host has read its whole list again since, and never this port.
	stamps, _ := node[other].scrape(url[other])
	m := node[other].waitScrape(url[other], other+" reads its list again", func(m map[string]float64) bool {
		for _, e := range lists[other] {
			k := shareSeries("nichealth_fabric_port_last_read_timestamp_seconds", e, "")
			if m[k] <= stamps[k] {
				return false
			}
		}
		return true
	})
	for k := range m {
		if strings.Contains(k, fmt.Sprintf(`switch_guid=%q`, spine.SwitchGUID)) && strings.Contains(k, fmt.Sprintf(`port="%d"`, spine.Port)) {
			t.Fatalf("%s, not assigned %s port %d, shows %s", other, spine.SwitchName, spine.Port, k)
		}
	}
	// perfquery, the fabric team's tool, reads what the metric says.
	out, err := l.Run(iblab.GPUA018, "perfquery", strconv.Itoa(spine.SwitchLID), strconv.Itoa(spine.Port))
	if err != nil || !regexp.MustCompile(`SymbolErrorCounter:\.+4321\b`).MatchString(out) {
		t.Fatalf("perfquery %v:\n%s", err, out)
	}

	// The owner's file rewritten while it runs: the other host's list too.
	ownerFile := filepath.Join(dir, owner+".json")
	both := append(append([]shareEntry{}, lists[owner]...), lists[other]...)
	writeShare(t, ownerFile, owner, both)
	added := lists[other][0]
	node[owner].waitScrape(url[owner], owner+" reads the rewritten list", func(m map[string]float64) bool {
		return m["nichealth_fabric_assigned_ports"] == float64(len(both)) && m[shareSeries("nichealth_fabric_port_last_read_timestamp_seconds", added, "")] > 0
	})
	// A corrupt rewrite is refused, and the list in force is still read.
	writeFileRename(t, ownerFile, `{"assignments": {"`+owner+`": [{"switchGUID": "0xb83fd20300a01000", "port": 33`)
	refused := node[owner].waitScrape(url[owner], owner+" refuses the corrupt file", func(m map[string]float64) bool {
		return m["nichealth_fabric_assignment_valid"] == 0
	})
	if refused["nichealth_fabric_assigned_ports"] != float64(len(both)) {
		t.Fatalf("after the refusal %v ports in force, want %d", refused["nichealth_fabric_assigned_ports"], len(both))
	}
	last := shareSeries("nichealth_fabric_port_last_read_timestamp_seconds", added, "")
	node[owner].waitScrape(url[owner], owner+" still reads the list in force", func(m map[string]float64) bool { return m[last] > refused[last] })
	node[owner].waitLog("the refusal's reason", func(s string) bool {
		return strings.Contains(s, "fabric assignment refused; the list in force is kept") && strings.Contains(s, "not the JSON nichealth-fabric plan writes")
	})
	for _, h := range []string{hostA, hostB} {
		node[h].stop()
	}
}

func writeShare(t *testing.T, path, host string, list []shareEntry) {
	t.Helper()
	f := fabricentry.File{Assignments: map[string][]fabricentry.Entry{host: {}}}
	for _, e := range list {
		f.Assignments[host] = append(f.Assignments[host], fabricentry.NewEntry(e.SwitchGUID, e.Port, e.SwitchName, e.SwitchLID))
	}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	writeFileRename(t, path, string(b))
}

// writeFileRename writes path as the plan and configuration management
// do: beside it, then renamed over it.
func writeFileRename(t *testing.T, path, body string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
