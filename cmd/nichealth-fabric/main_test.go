package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/internal/version"
)

const edr = "../../fabric/ibnet/testdata/switchib-edr-2023.topo"

func TestFabric_12_MapJSONCountsTheDump(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run([]string{"map", "--ibnetdiscover", edr, "--json"}, &out, &errs); code != exitOK {
		t.Fatalf("code %d: %s", code, errs.String())
	}
	var g struct {
		Switches int `json:"switches"`
		HCAs     int `json:"hcas"`
		Routers  int `json:"routers"`
		Links    []struct {
			A, B struct {
				GUID string `json:"guid"`
				Port int    `json:"port"`
				Name string `json:"name"`
			}
			Width    string `json:"width"`
			Speed    string `json:"speed"`
			Degraded bool   `json:"degraded"`
		} `json:"links"`
	}
	if err := json.Unmarshal(out.Bytes(), &g); err != nil {
		t.Fatal(err)
	}
	if g.Switches != 6 || g.HCAs != 96 || g.Routers != 0 || len(g.Links) != 144 {
		t.Fatalf("%d switches %d HCAs %d routers %d links", g.Switches, g.HCAs, g.Routers, len(g.Links))
	}
	l := g.Links[0]
	if l.A.GUID == "" || l.B.GUID == "" || l.A.Name == "" || l.A.Port == 0 || l.Width != "4x" || l.Speed != "EDR" {
		t.Errorf("link %+v", l)
	}
	if errs.Len() != 0 {
		t.Errorf("stderr: %s", errs.String())
	}
}

func TestFabric_12_MapWritesPageAndNamesBadLines(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "f.topo")
	raw, err := os.ReadFile(edr)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, append([]byte("junk line\n"), raw...), 0o644); err != nil {
		t.Fatal(err)
	}
	nm := filepath.Join(dir, "map")
	if err := os.WriteFile(nm, []byte("0xec0d9a0300ec8240 \"leaf-a\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	page := filepath.Join(dir, "fabric.html")
	if code := run([]string{"map", "--ibnetdiscover", in, "--node-name-map", nm, "-o", page}, &out, &errs); code != exitOK {
		t.Fatalf("code %d: %s", code, errs.String())
	}
	if !strings.Contains(errs.String(), "map: f.topo: skipped line 1: not a topology line") {
		t.Errorf("stderr %q", errs.String())
	}
	b, err := os.ReadFile(page)
	if err != nil || !bytes.Contains(b, []byte(`,"leaf-a",`)) || bytes.Contains(b, []byte("src=\"http")) {
		t.Errorf("page: %v", err)
	}
}

func TestFabric_12_MapUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{nil, exitUsage, "usage:"},
		{[]string{"draw"}, exitUsage, "unknown command"},
		{[]string{"map", "--json"}, exitUsage, "--ibnetdiscover FILE is required"},
		{[]string{"map", "--ibnetdiscover", edr}, exitUsage, "-o FILE.html, --json, or both"},
		{[]string{"map", "--ibnetdiscover", edr, "--json", "--prometheus", "http://x", "--status", "d"}, exitUsage, "not both"},
		{[]string{"map", "--ibnetdiscover", "/nonexistent", "--json"}, exitFailed, "/nonexistent"},
		{[]string{"map", "--ibnetdiscover", "/dev/zero", "--json"}, exitFailed, "not a regular file"},
		{[]string{"map", "--ibnetdiscover", "main.go", "--json"}, exitFailed, "holds no switch, HCA or router: is it"},
		{[]string{"map", "--ibnetdiscover", edr, "--json", "--prometheus", "127.0.0.1:9"}, exitFailed, "want http://host:port"},
	} {
		var out, errs bytes.Buffer
		if code := run(tc.args, &out, &errs); code != tc.code || !strings.Contains(errs.String(), tc.msg) {
			t.Errorf("%v: code %d, stderr %q; want %d and %q", tc.args, code, errs.String(), tc.code, tc.msg)
		}
	}
}

func TestFabric_VersionIsTheProductVersion(t *testing.T) {
	var out, errb strings.Builder
	if code := run([]string{"--version"}, &out, &errb); code != exitOK || out.String() != "nichealth-fabric "+version.String()+"\n" {
		t.Fatalf("--version: exit %d, %q %q", code, out.String(), errb.String())
	}
}

const (
	edrPorts = "../../fabric/ibnet/testdata/switchib-edr-2023.ibsim.ports"
	edrLFTs  = "../../fabric/plan/testdata/switchib-edr-2023.ibsim.lfts"
)

// DESIGN 14's command line: --json prints the plan in the shape DESIGN
// gives, -o writes one file per host of the job (an empty list for a
// host that reads nothing), and what the inputs lack is said.
func TestDesign_14_PlanCommand(t *testing.T) {
	dir := t.TempDir()
	nodes := filepath.Join(dir, "nodes")
	if err := os.WriteFile(nodes, []byte("node[001-002]\ngpu004 nosuchhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	planDir := filepath.Join(dir, "plan")
	if code := run([]string{"plan", "--ibnetdiscover", edrPorts, "--lfts", edrLFTs, "--nodes", nodes, "--json", "-o", planDir}, &out, &errs); code != exitOK {
		t.Fatalf("code %d: %s", code, errs.String())
	}
	if !strings.Contains(errs.String(), "nosuchhost: no HCA of this host is in the ibnetdiscover output") {
		t.Errorf("stderr %q", errs.String())
	}
	var p map[string]json.RawMessage
	if err := json.Unmarshal(out.Bytes(), &p); err != nil || len(p) != 2 || p["assignments"] == nil || string(p["unassigned"]) != "[]" {
		t.Fatalf("--json %v: %s", err, out.String())
	}
	var a map[string][]map[string]any
	if err := json.Unmarshal(p["assignments"], &a); err != nil || len(a) != 4 || len(a["nosuchhost"]) != 0 || len(a["node001"]) == 0 {
		t.Fatalf("assignments %v: %s", err, p["assignments"])
	}
	for _, e := range a["gpu004"] {
		if lid, _ := e["switchLID"].(float64); len(e) != 4 || e["switchGUID"] == nil || e["port"] == nil || lid < 1 || e["switchName"] != "SwitchIB Mellanox Technologies" {
			t.Errorf("entry %v", e)
		}
	}
	for _, h := range []string{"node001", "node002", "gpu004", "nosuchhost"} {
		b, err := os.ReadFile(filepath.Join(planDir, h+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var one map[string]map[string][]json.RawMessage
		if err := json.Unmarshal(b, &one); err != nil || len(one) != 1 || len(one["assignments"]) != 1 || len(one["assignments"][h]) != len(a[h]) {
			t.Errorf("%s.json: %v %s", h, err, b)
		}
	}
	entries, _ := os.ReadDir(planDir)
	if len(entries) != 4 {
		t.Errorf("%d files in %s, want 4 (no temporary left)", len(entries), planDir)
	}
}

func TestDesign_14_PlanUsage(t *testing.T) {
	dir := t.TempDir()
	nobody := filepath.Join(dir, "nobody")
	if err := os.WriteFile(nobody, []byte("ghost1 ghost2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("# no host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"plan", "--json"}, exitUsage, "--ibnetdiscover FILE, --lfts FILE and --nodes FILE are required"},
		{[]string{"plan", "--ibnetdiscover", edrPorts, "--lfts", edrLFTs, "--nodes", nobody}, exitUsage, "say what to make: --json, -o DIR"},
		{[]string{"plan", "--ibnetdiscover", edrPorts, "--lfts", edrLFTs, "--nodes", nobody, "--json"}, exitFailed, "none of the 2 hosts"},
		{[]string{"plan", "--ibnetdiscover", edrPorts, "--lfts", edrLFTs, "--nodes", empty, "--json"}, exitFailed, "names no host"},
		{[]string{"plan", "--ibnetdiscover", edrPorts, "--lfts", edrPorts, "--nodes", nobody, "--json"}, exitFailed, "holds no forwarding table"},
		{[]string{"plan", "--ibnetdiscover", edrLFTs, "--lfts", edrLFTs, "--nodes", nobody, "--json"}, exitFailed, "holds no switch, HCA or router"},
		{[]string{"plan", "--ibnetdiscover", edrPorts, "--lfts", "/dev/zero", "--nodes", nobody, "--json"}, exitFailed, "not a regular file"},
		{[]string{"plan", "--ibnetdiscover", edrPorts, "--lfts", edrLFTs, "--nodes", nobody, "extra"}, exitUsage, "unexpected argument"},
	} {
		var out, errs bytes.Buffer
		if code := run(tc.args, &out, &errs); code != tc.code || !strings.Contains(errs.String(), tc.msg) {
			t.Errorf("%v: code %d, stderr %q; want %d and %q", tc.args, code, errs.String(), tc.code, tc.msg)
		}
	}
}

// map reads the ports report of -p too: the same EDR cluster, its
// cables counted as in the topology file.
func TestFabric_34_2_MapReadsThePortsReport(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run([]string{"map", "--ibnetdiscover", edrPorts, "--json"}, &out, &errs); code != exitOK || errs.Len() != 0 {
		t.Fatalf("code %d: %s", code, errs.String())
	}
	var g struct {
		Switches, HCAs int
		Links          []json.RawMessage
	}
	if err := json.Unmarshal(out.Bytes(), &g); err != nil || g.Switches != 6 || g.HCAs != 96 || len(g.Links) != 144 {
		t.Fatalf("%v: %d switches %d HCAs %d links", err, g.Switches, g.HCAs, len(g.Links))
	}
}
