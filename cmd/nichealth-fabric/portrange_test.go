package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/mad/fabricshare"
)

// planAndParse runs plan over ports and the EDR tables for hosts and
// has every host's file read by the daemon's own assignment parser.
func planAndParse(t *testing.T, ports string, hosts ...string) []map[string]any {
	t.Helper()
	out, planDir := planFiles(t, ports, hosts...)
	total := 0
	for _, h := range hosts {
		b, err := os.ReadFile(filepath.Join(planDir, h+".json"))
		if err != nil {
			t.Fatal(err)
		}
		list, err := fabricshare.Parse(b, h)
		if err != nil {
			t.Errorf("the daemon refuses %s.json as plan wrote it: %v", h, err)
		}
		if _, err := fabricshare.Parse(out.Bytes(), h); err != nil {
			t.Errorf("the daemon refuses the --json plan for %s: %v", h, err)
		}
		total += len(list)
	}
	if total == 0 {
		t.Fatal("the plan assigned nothing")
	}
	var p struct {
		Unassigned []map[string]any `json:"unassigned"`
	}
	if err := json.Unmarshal(out.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	return p.Unassigned
}

// TestIssue40Row7_PlanWritesOnlyWhatTheDaemonAccepts: every list plan
// writes for the lab's fabric is read by the daemon's parser as it is.
func TestIssue40Row7_PlanWritesOnlyWhatTheDaemonAccepts(t *testing.T) {
	if un := planAndParse(t, edrPorts, "node001", "node002", "node039", "gpu004", "gpu011", "gpu040", "login01", "controller"); len(un) != 0 {
		t.Errorf("unassigned on the lab's fabric: %v", un)
	}
}

// TestIssue40Row7_CAOnSwitchPort255IsNotPlanned: a crafted dump puts a
// job host's HCA on switch port 255 (no switch has one: 1..254). The
// plan still writes every host's list, the daemon accepts each, and
// port 255 is in the unassigned list with the daemon's reason.
func TestIssue40Row7_CAOnSwitchPort255IsNotPlanned(t *testing.T) {
	un := planAndParse(t, port255Ports(t), "node001", "node039", "gpu004")
	found := false
	for _, u := range un {
		if u["port"] == float64(255) {
			found = true
			if r, _ := u["reason"].(string); !strings.Contains(r, "1..254") {
				t.Errorf("port 255 unassigned as %q, want the range said", r)
			}
		}
	}
	if !found {
		t.Errorf("switch port 255 is not in the unassigned list: %v", un)
	}
}

// planFiles runs plan --json -o DIR over ports and the EDR tables for
// hosts, and returns what it printed and DIR.
func planFiles(t *testing.T, ports string, hosts ...string) (*bytes.Buffer, string) {
	t.Helper()
	dir := t.TempDir()
	nodes := filepath.Join(dir, "nodes")
	if err := os.WriteFile(nodes, []byte(strings.Join(hosts, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	planDir := filepath.Join(dir, "plan")
	if code := run([]string{"plan", "--ibnetdiscover", ports, "--lfts", edrLFTs, "--nodes", nodes, "--json", "-o", planDir}, &out, &errs); code != exitOK {
		t.Fatalf("plan: exit %d: %s", code, errs.String())
	}
	return &out, planDir
}

// port255Ports is the EDR lab's ports report crafted so node039's HCA
// is cabled to switch port 255, which no switch has.
func port255Ports(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(edrPorts)
	if err != nil {
		t.Fatal(err)
	}
	const cabled = "CA    71  1 0x506b4b030041d023 4x EDR - SW    29 36 0xec0d9a0300f548c0 ( 'node039 HCA-1'"
	if !bytes.Contains(b, []byte(cabled)) {
		t.Fatal("the lab dump changed: node039's cable not found")
	}
	crafted := filepath.Join(t.TempDir(), "crafted.ports")
	b = bytes.Replace(b, []byte(cabled), []byte(strings.Replace(cabled, "29 36 ", "29 255 ", 1)), 1)
	if err := os.WriteFile(crafted, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return crafted
}

// TestIssue40Row4_ForeignTablesSaidAsSuch: a dump_lfts whose tables are
// all of switches absent from the ibnetdiscover output (a crafted dump,
// or one of another fabric) fails with that reason, after reading them
// at the cost of their lines.
func TestIssue40Row4_ForeignTablesSaidAsSuch(t *testing.T) {
	dir := t.TempDir()
	var b bytes.Buffer
	for i := range 20000 {
		fmt.Fprintf(&b, "Unicast lids [0x1-0xbfff] of switch Lid 1 guid 0x%016x (x):\n0xbfff 001\n", 0x7000000000000000+uint64(i))
	}
	lfts, nodes := filepath.Join(dir, "lfts"), filepath.Join(dir, "nodes")
	if err := os.WriteFile(lfts, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(nodes, []byte("node001\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	code := run([]string{"plan", "--ibnetdiscover", edrPorts, "--lfts", lfts, "--nodes", nodes, "--json"}, &out, &errs)
	if code == exitOK || !strings.Contains(errs.String(), "holds 20000 forwarding tables, none of a switch in") {
		t.Errorf("exit %d: %s", code, errs.String())
	}
	if n := strings.Count(errs.String(), "\n"); n > 15 {
		t.Errorf("%d lines said for 20,000 foreign tables, want a few and a count", n)
	}
}
