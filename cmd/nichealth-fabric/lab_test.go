package main

// nichealth-fabric plan against the real tools: ibsim simulates a fabric,
// opensm routes it under umad2sim (its libibumad calls reach the
// simulator), and the real infiniband-diags print the inputs plan reads
// (ibnetdiscover -p, dump_lfts). The oracle is ibtracert, which walks the
// switches' programmed tables hop by hop: every switch port on the path
// between two of the job's hosts must be in exactly one host's list. The
// lab's plumbing is here and nowhere else, as small as it can be.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/fabric/fattree"
	"github.com/nichealth/nichealthd/fabric/ibnet"
	"github.com/nichealth/nichealthd/fabric/plan"
	"github.com/nichealth/nichealthd/internal/component"
	"github.com/nichealth/nichealthd/internal/fabricentry"
)

// umad2sim is where Debian's ibsim-utils installs the preload.
const umad2sim = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"

// labTimeout bounds every wait of the lab: the simulator's start,
// opensm's first sweep, one tool's run.
const labTimeout = 2 * time.Minute

var labSeq atomic.Int64

type lab struct {
	t    *testing.T
	dir  string
	env  []string // the simulator's socket, for every process of the lab
	sims []*exec.Cmd
}

// startLab runs ibsim on a fabric and opensm on it, and returns once
// opensm has routed every LID the fabric has (dump_lfts shows a table per
// switch routing them all). Missing tools skip the test, or fail it under
// CI=true.
func startLab(t *testing.T, net []byte) *lab {
	t.Helper()
	for _, tool := range []string{"ibsim", "opensm", "ibnetdiscover", "dump_lfts", "ibtracert"} {
		if _, err := exec.LookPath(tool); err != nil {
			component.Missing(t, "%s not in PATH (apt-get install ibsim-utils opensm infiniband-diags)", tool)
		}
	}
	if _, err := os.Stat(umad2sim); err != nil {
		component.Missing(t, "no %s (apt-get install ibsim-utils)", umad2sim)
	}
	l := &lab{t: t, dir: t.TempDir()}
	// The socket name keeps parallel labs (other tests, other users of
	// the machine) apart.
	l.env = append(os.Environ(), fmt.Sprintf("IBSIM_SOCKNAME=nhfab-%d-%d", os.Getpid(), labSeq.Add(1)))
	if err := os.WriteFile(filepath.Join(l.dir, "net"), net, 0o644); err != nil {
		t.Fatal(err)
	}
	sim := exec.Command("ibsim", "-n", "-s", "net")
	sim.Dir, sim.Env = l.dir, l.env
	out, err := sim.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	sim.Stderr = sim.Stdout
	if err := sim.Start(); err != nil {
		t.Fatalf("start ibsim: %v", err)
	}
	l.sims = append(l.sims, sim)
	t.Cleanup(l.stop)
	ready := make(chan string, 1)
	go func() {
		var seen strings.Builder
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			seen.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "Network simulator ready") {
				ready <- ""
				for sc.Scan() {
				}
				return
			}
		}
		ready <- seen.String()
	}()
	select {
	case failed := <-ready:
		if failed != "" {
			t.Fatalf("ibsim exited before it was ready:\n%s", failed)
		}
	case <-time.After(labTimeout):
		t.Fatalf("ibsim not ready within %s", labTimeout)
	}
	sm := exec.Command("opensm", "-f", filepath.Join(l.dir, "opensm.log"))
	sm.Dir = l.dir
	sm.Env = append(slices.Clone(l.env), "LD_PRELOAD="+umad2sim, "OSM_TMP_DIR="+l.dir, "OSM_CACHE_DIR="+l.dir)
	sm.Stdout, sm.Stderr = &bytes.Buffer{}, &bytes.Buffer{}
	if err := sm.Start(); err != nil {
		t.Fatalf("start opensm: %v", err)
	}
	l.sims = append(l.sims, sm)
	l.waitRouted()
	return l
}

// stop ends opensm and the simulator (under umad2sim opensm does not
// leave on SIGTERM, so both are killed).
func (l *lab) stop() {
	for i := len(l.sims) - 1; i >= 0; i-- {
		_ = l.sims[i].Process.Kill()
		_ = l.sims[i].Wait()
	}
	l.sims = nil
}

// tool runs one infiniband-diags tool in the lab and returns its output.
func (l *lab) tool(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), labTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(slices.Clone(l.env), "LD_PRELOAD="+umad2sim)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %v: %w\n%s", name, args, err, stderr.String())
	}
	return stdout.String(), nil
}

// waitRouted polls until opensm has given every port a LID and every
// switch a table that routes them all: the condition plan needs, not a
// guess at how long a sweep takes.
func (l *lab) waitRouted() {
	l.t.Helper()
	deadline := time.Now().Add(labTimeout)
	pause := 100 * time.Millisecond
	var why string
	for time.Now().Before(deadline) {
		why = l.routed()
		if why == "" {
			return
		}
		time.Sleep(pause)
		pause = min(2*pause, 2*time.Second)
	}
	l.t.Fatalf("opensm did not route the fabric within %s: %s", labTimeout, why)
}

func (l *lab) routed() string {
	ports, err := l.tool("ibnetdiscover", "-p")
	if err != nil {
		return err.Error()
	}
	g := ibnet.Parse([]byte(ports))
	var lids []int
	for i := range g.Nodes {
		if g.Nodes[i].LID == 0 {
			return fmt.Sprintf("%s has no LID yet", g.Nodes[i].Name)
		}
		lids = append(lids, g.Nodes[i].LID)
	}
	out, err := l.tool("dump_lfts")
	if err != nil {
		return err.Error()
	}
	tab, _ := plan.ParseLFTs(strings.NewReader(out), g)
	for i := range g.Nodes {
		if g.Nodes[i].Kind != ibnet.Switch {
			continue
		}
		lft := tab.Switch(g.Nodes[i].GUID)
		if lft == nil {
			return fmt.Sprintf("no table for %s yet", g.Nodes[i].GUID)
		}
		for _, lid := range lids {
			if lft.Port(lid) == plan.NoRoute {
				return fmt.Sprintf("%s does not route LID %d yet", g.Nodes[i].GUID, lid)
			}
		}
	}
	if len(g.Nodes) == 0 {
		return "no node discovered yet"
	}
	return ""
}

// hop is a switch port on a traced path.
type hop struct {
	guid ibnet.GUID
	port int
}

var traceLine = regexp.MustCompile(`^\[(\d+)\] -> (switch|ca) port \{0x([0-9a-f]+)\}\[(\d+)\]`)

// trace asks ibtracert for the path from one LID to another and returns
// both ends of every link on it that are switch ports: the port the
// source's cable enters, each switch's out port and the next switch's in
// port, the port it leaves for the destination.
func (l *lab) trace(from, to int) []hop {
	l.t.Helper()
	out, err := l.tool("ibtracert", strconv.Itoa(from), strconv.Itoa(to))
	if err != nil {
		l.t.Fatal(err)
	}
	var hops []hop
	var prev *hop // the switch the last line arrived at
	for _, line := range strings.Split(out, "\n") {
		m := traceLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		outPort, _ := strconv.Atoi(m[1])
		if prev != nil {
			hops = append(hops, hop{prev.guid, outPort})
		}
		prev = nil
		if m[2] == "switch" {
			g, err := ibnet.ParseGUID(m[3])
			if err != nil {
				l.t.Fatalf("ibtracert line %q: %v", line, err)
			}
			in, _ := strconv.Atoi(m[4])
			hops = append(hops, hop{g, in})
			prev = &hop{guid: g}
		}
	}
	if len(hops) == 0 {
		l.t.Fatalf("ibtracert %d %d: no path in\n%s", from, to, out)
	}
	return hops
}

// planInLab runs the built nichealth-fabric plan on the lab's own
// ibnetdiscover -p and dump_lfts output for a job, and holds the plan to
// the slides' rules with ibtracert as the oracle of the paths.
func planInLab(t *testing.T, bin string, l *lab, job []string) {
	ports, err := l.tool("ibnetdiscover", "-p")
	if err != nil {
		t.Fatal(err)
	}
	lfts, err := l.tool("dump_lfts")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cmd := exec.Command(bin, "plan", "--ibnetdiscover", write("fabric.ports", ports), "--lfts", write("fabric.lfts", lfts),
		"--nodes", write("nodes", strings.Join(job, "\n")+"\n"), "--json", "-o", filepath.Join(dir, "plan"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("nichealth-fabric plan: %v\n%s", err, stderr.String())
	}
	// Beside --json, -o's one line of what it wrote goes to stderr; any
	// other line is a warning.
	if said, _ := strings.CutPrefix(stderr.String(), "nichealth-fabric plan: wrote "); said == stderr.String() || strings.Count(said, "\n") != 1 {
		t.Errorf("plan said: %s", stderr.String())
	}
	var p fabricentry.Plan
	if err := json.Unmarshal(stdout.Bytes(), &p); err != nil {
		t.Fatalf("--json: %v\n%s", err, stdout.String())
	}
	owner := map[hop]string{}
	least, most := -1, 0
	for h, list := range p.Assignments {
		for _, a := range list {
			if a.SwitchGUID == nil || a.Port == nil {
				t.Fatalf("entry %+v without switchGUID or port", a)
			}
			g, err := ibnet.ParseGUID(*a.SwitchGUID)
			if err != nil || a.SwitchName == "" {
				t.Fatalf("entry %+v: %v", a, err)
			}
			if prev, dup := owner[hop{g, *a.Port}]; dup {
				t.Errorf("%s port %d read by %s and %s", *a.SwitchGUID, *a.Port, prev, h)
			}
			owner[hop{g, *a.Port}] = h
		}
		if least < 0 || len(list) < least {
			least = len(list)
		}
		most = max(most, len(list))
		// -o DIR: each host's file holds its own list.
		b, err := os.ReadFile(filepath.Join(dir, "plan", h+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var one fabricentry.File
		if err := json.Unmarshal(b, &one); err != nil || len(one.Assignments) != 1 || len(one.Assignments[h]) != len(list) {
			t.Errorf("%s.json: %v %s", h, err, b)
		}
	}
	if len(p.Assignments) != len(job) || len(p.Unassigned) != 0 {
		un, _ := json.Marshal(p.Unassigned)
		t.Fatalf("%d lists for a job of %d, unassigned %s", len(p.Assignments), len(job), un)
	}
	// The oracle: every switch port on every traced path between two
	// hosts of the job is read by exactly one host, and nothing else is;
	// the port each host's cable enters is its own.
	g := ibnet.Parse([]byte(ports))
	hps, missing := plan.HostPorts(g, job)
	if len(missing) != 0 {
		t.Fatalf("hosts not in the fabric: %v", missing)
	}
	onPaths := map[hop]bool{}
	for _, src := range hps {
		direct := hop{g.Nodes[src.Switch].GUID, src.SwitchPort}
		onPaths[direct] = true
		if owner[direct] != src.Host {
			t.Errorf("rule 1: %s's switch port %v is read by %q", src.Host, direct, owner[direct])
		}
		for _, dst := range hps {
			if dst.Host == src.Host {
				continue
			}
			for _, h := range l.trace(src.LID, dst.LID) {
				onPaths[h] = true
			}
		}
	}
	for h := range onPaths {
		if _, ok := owner[h]; !ok {
			t.Errorf("rule 2: %s port %d is on a traced path and read by no host", h.guid, h.port)
		}
	}
	for h, who := range owner {
		if !onPaths[h] {
			t.Errorf("%s port %d is read by %s but on no path of the job", h.guid, h.port, who)
		}
	}
	if most-least > 5 {
		t.Errorf("rule 4: lists of %d to %d ports", least, most)
	}
	t.Logf("%d hosts read %d switch ports (%d to %d each)", len(job), len(owner), least, most)
}

func buildFabricTool(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "nichealth-fabric")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// DESIGN 14 on the real tools: the published EDR cluster (4 leaves, 2
// spines, 96 HCAs) in ibsim, routed by opensm, and a job of seven hosts
// on all four leaves.
func TestDesign_14_PlanInTheLab_EDRCluster(t *testing.T) {
	bin := buildFabricTool(t)
	net, err := os.ReadFile(filepath.Join("..", "..", "fabric", "ibnet", "testdata", "switchib-edr-2023.topo"))
	if err != nil {
		t.Fatal(err)
	}
	l := startLab(t, net)
	planInLab(t, bin, l, []string{"node001", "node002", "gpu004", "gpu005", "gpu041", "node021", "controller"})
}

// DESIGN 14 on the real tools, three tiers: a generated fat tree of 12
// leaves, 12 aggregation and 8 core switches in three pods, 24 hosts, and
// a job of every third host, whose paths cross all three tiers.
func TestDesign_14_PlanInTheLab_ThreeTierFatTree(t *testing.T) {
	bin := buildFabricTool(t)
	f, err := fattree.Build(fattree.Spec{Radix: 8, Hosts: 24, HostsPerLeaf: 2, Pods: 3, Speed: "EDR"})
	if err != nil {
		t.Fatal(err)
	}
	var net bytes.Buffer
	if err := f.WriteTopology(&net); err != nil {
		t.Fatal(err)
	}
	l := startLab(t, net.Bytes())
	var job []string
	for i, h := range f.Hosts {
		if i%3 == 0 {
			job = append(job, h)
		}
	}
	planInLab(t, bin, l, job)
}
