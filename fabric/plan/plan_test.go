package plan

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/nichealth/nichealthd/fabric/fattree"
	"github.com/nichealth/nichealthd/fabric/ibnet"
)

// fabric is a generated fat tree as the tools print it, parsed.
type fabric struct {
	g     *ibnet.Graph
	t     *Tables
	hosts []string
}

func generated(tb testing.TB, s fattree.Spec, portsReport bool) fabric {
	tb.Helper()
	f, err := fattree.Build(s)
	if err != nil {
		tb.Fatal(err)
	}
	var topo, lfts bytes.Buffer
	if portsReport {
		err = f.WritePorts(&topo)
	} else {
		err = f.WriteTopology(&topo)
	}
	if err != nil {
		tb.Fatal(err)
	}
	if err := f.WriteLFTs(&lfts); err != nil {
		tb.Fatal(err)
	}
	g := ibnet.Parse(topo.Bytes())
	t, err := ParseLFTs(&lfts, g)
	if err != nil || len(g.Problems) != 0 || len(t.Problems) != 0 {
		tb.Fatalf("%v %v %v", err, g.Problems, t.Problems)
	}
	return fabric{g, t, f.Hosts}
}

// required is rule 2 computed the plain way, to check the plan against:
// walk every path between every pair of the job's hosts to its end and
// keep both ends of each link on it.
func required(tb testing.TB, fb fabric, job []string) map[swPort]bool {
	hps, _ := HostPorts(fb.g, job)
	out := map[swPort]bool{}
	for _, src := range hps {
		out[swPort{src.Switch, src.SwitchPort}] = true
		for _, dst := range hps {
			if dst.Host == src.Host {
				continue
			}
			sw := src.Switch
			for hops := 0; ; hops++ {
				if hops > 10 {
					tb.Fatalf("%s to %s: no end", src.Host, dst.Host)
				}
				out0 := fb.t.Switch(fb.g.Nodes[sw].GUID).Port(dst.LID)
				out[swPort{sw, out0}] = true
				pt := fb.g.PortOf(sw, out0)
				if pt == nil {
					tb.Fatalf("no cable on %d/%d", sw, out0)
				}
				if fb.g.Nodes[pt.Remote.Node].Kind != ibnet.Switch {
					if int(pt.Remote.Node) != dst.CA {
						tb.Fatalf("%s to %s ends at %s", src.Host, dst.Host, fb.g.Nodes[pt.Remote.Node].Name)
					}
					break
				}
				out[swPort{int(pt.Remote.Node), int(pt.Remote.Port)}] = true
				sw = int(pt.Remote.Node)
			}
		}
	}
	return out
}

// checkRules holds a plan to the slides' five rules and DESIGN 14.
func checkRules(t *testing.T, fb fabric, job []string, p *Plan) {
	t.Helper()
	idx := map[ibnet.GUID]int{}
	for i := range fb.g.Nodes {
		idx[fb.g.Nodes[i].GUID] = i
	}
	hps, _ := HostPorts(fb.g, job)
	want := required(t, fb, job)
	got := map[swPort]string{}
	min, max := -1, 0
	for _, h := range job {
		list, ok := p.Assignments[h]
		if !ok {
			t.Fatalf("rule 5: no list for %s", h)
		}
		for _, a := range list {
			sp := swPort{idx[a.SwitchGUID], a.Port}
			if prev, dup := got[sp]; dup {
				t.Fatalf("%s port %d assigned to %s and %s", a.SwitchGUID, a.Port, prev, h)
			}
			got[sp] = h
			if a.SwitchName != fb.g.Nodes[sp.sw].Name {
				t.Errorf("switch name %q", a.SwitchName)
			}
			if a.Rule == Forwarded {
				// Rule 3: the port forwards one of the host's LIDs.
				ok := false
				for _, hp := range hps {
					if hp.Host == h && fb.t.Switch(a.SwitchGUID).Port(hp.LID) == a.Port {
						ok = true
					}
				}
				if !ok {
					t.Errorf("%s port %d went to %s, whose LIDs it does not forward", a.SwitchGUID, a.Port, h)
				}
			}
		}
		if min < 0 || len(list) < min {
			min = len(list)
		}
		if len(list) > max {
			max = len(list)
		}
	}
	if len(p.Assignments) != len(job) || len(p.Unassigned) != 0 {
		t.Errorf("%d lists for %d hosts, unassigned %v", len(p.Assignments), len(job), p.Unassigned)
	}
	// Rule 2: every port on the paths, exactly once, and nothing else.
	for sp := range want {
		if _, ok := got[sp]; !ok {
			t.Errorf("rule 2: %s port %d is on the job's paths and assigned to no host", fb.g.Nodes[sp.sw].GUID, sp.port)
		}
	}
	for sp, h := range got {
		if !want[sp] {
			t.Errorf("%s port %d is not on the job's paths and went to %s", fb.g.Nodes[sp.sw].GUID, sp.port, h)
		}
	}
	// Rule 1: the direct neighbours are kept.
	for _, hp := range hps {
		if h := got[swPort{hp.Switch, hp.SwitchPort}]; h != hp.Host {
			t.Errorf("rule 1: %s's switch port %d went to %q", hp.Host, hp.SwitchPort, h)
		}
	}
	// Rule 4: every host has the same number of HCAs here, so the spread
	// is the slides' threshold of 5 at most.
	if max-min > 5 {
		t.Errorf("rule 4: loads from %d to %d ports", min, max)
	}
}

// The slides' five rules, over generated fat trees (two and three tiers,
// one and eight rails, both ibnetdiscover formats) and jobs of every
// size, from two hosts to all of them, drawn at random (fixed seeds).
func TestPerfqueries_RulesOverFatTrees(t *testing.T) {
	specs := []fattree.Spec{
		{Radix: 8, Hosts: 16},
		{Radix: 16, Hosts: 64, HostsPerLeaf: 4},
		{Radix: 8, Hosts: 24, HostsPerLeaf: 2, Pods: 3},
		{Radix: 16, Hosts: 16, Rails: 8, HostsPerLeaf: 2, Pods: 8},
	}
	forcedSome := false
	for si, s := range specs {
		for _, portsReport := range []bool{false, true} {
			fb := generated(t, s, portsReport)
			rng := rand.New(rand.NewPCG(uint64(si), 34))
			for _, size := range []int{2, 3, 5, len(fb.hosts) / 2, len(fb.hosts)} {
				job := slices.Clone(fb.hosts)
				rng.Shuffle(len(job), func(i, j int) { job[i], job[j] = job[j], job[i] })
				job = job[:size]
				t.Run(fmt.Sprintf("%d-%v-%d", si, portsReport, size), func(t *testing.T) {
					p, notes := Make(fb.g, fb.t, job)
					if len(notes) != 0 {
						t.Errorf("notes %v", notes)
					}
					checkRules(t, fb, job, p)
					for _, list := range p.Assignments {
						for _, a := range list {
							if a.Rule == LeastLoaded {
								forcedSome = true
							}
						}
					}
				})
			}
		}
	}
	if !forcedSome {
		t.Error("no job exercised rule 4")
	}
}

// Rule 4's numbers as the slides give them: the forwarded host keeps a
// port while it reads up to 4 ports more than the least-loaded host, and
// at 5 more the port goes to the least-loaded host.
func TestPerfqueries_4_ThresholdOfFive(t *testing.T) {
	l := newLoads(3)
	for range 4 {
		l.add(0)
	}
	if r, why := l.choose([]int{0}); r != 0 || why != Forwarded {
		t.Errorf("4 ahead: %d %v", r, why)
	}
	l.add(0)
	if r, why := l.choose([]int{0}); r != 1 || why != LeastLoaded {
		t.Errorf("5 ahead: %d %v, want the least-loaded host 1", r, why)
	}
	l.add(1)
	if r, why := l.choose([]int{0, 1}); r != 1 || why != Forwarded {
		t.Errorf("two candidates: %d %v, want the less loaded of them", r, why)
	}
	if r, why := l.choose(nil); r != 2 || why != LeastLoaded {
		t.Errorf("no candidate: %d %v", r, why)
	}
}

// A real fabric through real tools: the published EDR cluster's -p
// output and opensm's tables for it in ibsim (testdata/README.md), a job
// on all four leaves; and the job's hosts that are not in the fabric or
// have no LID are said.
func TestDesign_14_PlanOnTheEDRSample(t *testing.T) {
	g := ibnet.Parse(load(t, filepath.Join("..", "ibnet", "testdata", "switchib-edr-2023.ibsim.ports")))
	tab, err := ParseLFTs(bytes.NewReader(load(t, filepath.Join("testdata", "switchib-edr-2023.ibsim.lfts"))), g)
	if err != nil {
		t.Fatal(err)
	}
	fb := fabric{g, tab, nil}
	job := []string{"node001", "node002", "gpu004", "gpu005", "gpu041", "node021", "controller"}
	p, notes := Make(g, tab, job)
	if len(notes) != 0 {
		t.Fatalf("notes %v", notes)
	}
	checkRules(t, fb, job, p)
	total := 0
	for _, l := range p.Assignments {
		total += len(l)
	}
	// 7 direct ports, and the leaf-to-spine links the paths between four
	// leaves cross.
	if total <= 7 {
		t.Errorf("%d ports planned", total)
	}
	p, notes = Make(g, tab, []string{"node001", "node002", "nosuchhost"})
	if len(notes) != 1 || !bytes.Contains([]byte(notes[0]), []byte("nosuchhost: no HCA of this host")) || len(p.Assignments["nosuchhost"]) != 0 {
		t.Errorf("notes %v, %v", notes, p.Assignments)
	}
	// Two hosts on one leaf: their two direct ports and nothing else.
	if len(p.Assignments["node001"]) != 1 || len(p.Assignments["node002"]) != 1 {
		t.Errorf("one leaf: %v", p.Assignments)
	}
}

// A fully qualified job name matches a short NodeDescription and the
// other way round, case aside; a node-name map's name is used when one
// was applied.
func TestDesign_14_HostNames(t *testing.T) {
	fb := generated(t, fattree.Spec{Radix: 4, Hosts: 2}, false)
	hps, missing := HostPorts(fb.g, []string{"GPU0000.cluster.example", "gpu0001"})
	if len(hps) != 2 || len(missing) != 0 || hps[0].Host != "GPU0000.cluster.example" {
		t.Fatalf("%+v %v", hps, missing)
	}
	fb.g.ApplyNames(map[ibnet.GUID]string{fb.g.Nodes[hps[0].CA].GUID: "login-a HCA-1"})
	if _, missing := HostPorts(fb.g, []string{"login-a", "gpu0000"}); len(missing) != 1 || missing[0] != "gpu0000" {
		t.Errorf("after the map: missing %v", missing)
	}
}

// A job whose hosts have no active port reads nothing, and the ports on
// its paths are listed as unassigned with the reason.
func TestDesign_14_NoReader(t *testing.T) {
	g := ibnet.Parse([]byte("Switch\t8 \"S-000000000000000a\"\t\t# \"sw\" base port 0 lid 1 lmc 0\n" +
		"[1]\t\"H-00000000000000b1\"[1](b1) \t\t# \"h1 mlx5_0\" lid 0 4xNDR\n" +
		"[2]\t\"H-00000000000000b2\"[1](b2) \t\t# \"h2 mlx5_0\" lid 0 4xNDR\n"))
	tab, _ := ParseLFTs(bytes.NewReader(nil), g)
	p, notes := Make(g, tab, []string{"h1", "h2"})
	if len(p.Unassigned) != 2 || p.Unassigned[0].Reason == "" || len(notes) != 2 {
		t.Errorf("%+v %v", p, notes)
	}
}

// The benchmark of DESIGN 14: a 4,000-host fat tree (radix 64, three
// tiers) planned for a job of all its hosts.
func BenchmarkPlan_FatTree4000Hosts(b *testing.B) {
	fb := generated(b, fattree.Spec{Radix: 64, Hosts: 4000, Pods: 4}, false)
	b.ReportAllocs()
	ports := 0
	for b.Loop() {
		p, _ := Make(fb.g, fb.t, fb.hosts)
		ports = 0
		for _, l := range p.Assignments {
			ports += len(l)
		}
	}
	b.ReportMetric(float64(ports), "ports")
}
