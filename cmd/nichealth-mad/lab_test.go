package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/internal/iblab"
	"github.com/nichealth/nichealthd/mad/wire"
)

// One lab of each fabric for the package's tests, started on first use.
var labs struct {
	sync.Mutex
	m   map[string]*iblab.Lab
	err map[string]error
	bin string
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, l := range labs.m {
		l.Close()
	}
	if labs.bin != "" {
		os.RemoveAll(filepath.Dir(labs.bin))
	}
	os.Exit(code)
}

func lab(t *testing.T, opt iblab.Options) *iblab.Lab {
	t.Helper()
	labs.Lock()
	defer labs.Unlock()
	if labs.m == nil {
		labs.m, labs.err = map[string]*iblab.Lab{}, map[string]error{}
	}
	if l, ok := labs.m[opt.Fabric]; ok {
		return l
	}
	if err, ok := labs.err[opt.Fabric]; ok {
		iblab.Require(t, err)
	}
	l, err := iblab.Start(opt)
	if err != nil {
		labs.err[opt.Fabric] = err
		iblab.Require(t, err)
	}
	labs.m[opt.Fabric] = l
	return l
}

// helperBin builds this command once, with cgo, as make build does.
func helperBin(t *testing.T) string {
	t.Helper()
	labs.Lock()
	defer labs.Unlock()
	if labs.bin != "" {
		return labs.bin
	}
	dir, err := os.MkdirTemp("", "nichealth-mad-")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "nichealth-mad")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build nichealth-mad (needs libibumad-dev, libibmad-dev): %v\n%s", err, out)
	}
	labs.bin = bin
	return bin
}

// session is the helper running as one lab host.
type session struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	id     uint64
	lab    *iblab.Lab
	closed bool
}

func start(t *testing.T, l *iblab.Lab, host string) *session {
	t.Helper()
	cmd := exec.Command(helperBin(t))
	cmd.Dir, cmd.Env = l.Dir, l.Env(host)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &session{t: t, cmd: cmd, in: in, out: bufio.NewReaderSize(out, wire.MaxLine), lab: l}
	t.Cleanup(s.close)
	return s
}

// close ends the helper with EOF, as the daemon does: it must exit and
// give its slot in the simulator back.
func (s *session) close() {
	if s.closed {
		return
	}
	s.closed = true
	s.in.Close()
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			s.t.Errorf("the helper did not exit cleanly at EOF: %v", err)
		}
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
		_ = s.lab.Free(s.cmd.Process.Pid)
		s.t.Error("the helper did not exit at EOF on stdin")
	}
}

func (s *session) ask(req wire.Request) wire.Answer {
	s.t.Helper()
	s.id++
	req.ID = s.id
	if req.TimeoutMS == 0 {
		req.TimeoutMS = 5000
	}
	line, err := wire.Encode(req)
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := s.in.Write(line); err != nil {
		s.t.Fatal(err)
	}
	b, err := s.out.ReadSlice('\n')
	if err != nil {
		s.t.Fatalf("reading the answer to %s: %v", line, err)
	}
	a, err := wire.DecodeAnswer(b)
	if err != nil {
		s.t.Fatalf("the answer to %s is refused by the daemon's decoder: %v", line, err)
	}
	if a.ID != req.ID {
		s.t.Fatalf("answer %d to request %d", a.ID, req.ID)
	}
	return a
}

var ibsim0 = &wire.Local{CA: "ibsim0", Port: 1}

var field = regexp.MustCompile(`(?m)^(\w+):\.+(\S+)$`)

// fields parses what infiniband-diags' tools print ("Name:.....value").
func fields(out string) map[string]string {
	m := map[string]string{}
	for _, f := range field.FindAllStringSubmatch(out, -1) {
		m[f[1]] = f[2]
	}
	return m
}

func num(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return v
}

// The helper reads what the fabric holds, with infiniband-diags as the
// oracle: the neighbour of gpu-a017's port is leaf 1 port 17 as smpquery
// sees it; every PortCounters field set on the console is what the helper
// and perfquery both read; ClassPortInfo's capability mask is perfquery's.
func TestLab_ReadsWhatTheFabricHolds(t *testing.T) {
	l := lab(t, iblab.Options{Fabric: iblab.TwoLeaves, SM: iblab.SMHost, Active: []string{iblab.GPUA017, iblab.GPUA018}})
	s := start(t, l, iblab.GPUA017)

	if a := s.ask(wire.Request{Op: wire.OpHello}); a.Hello == nil || a.Hello.Version != wire.Version {
		t.Fatalf("hello: %+v", a)
	}
	a := s.ask(wire.Request{Op: wire.OpPorts})
	if len(a.Ports) != 1 || a.Ports[0].CA != "ibsim0" || a.Ports[0].GUID != iblab.GPUA017PortGUID || a.Ports[0].State != 4 {
		t.Fatalf("ports: %+v %v", a.Ports, a.Err)
	}

	ni, err := l.Run(iblab.GPUA017, "smpquery", "-D", "nodeinfo", "0,1")
	if err != nil {
		t.Fatal(err)
	}
	pi, err := l.Run(iblab.GPUA017, "smpquery", "-D", "portinfo", "0,1", "0")
	if err != nil {
		t.Fatal(err)
	}
	nf, pf := fields(ni), fields(pi)
	for _, local := range []*wire.Local{ibsim0, {GUID: iblab.GPUA017PortGUID}} {
		a = s.ask(wire.Request{Op: wire.OpPeer, Local: local})
		p := a.Peer
		if p == nil {
			t.Fatalf("peer by %+v: %v", local, a.Err)
		}
		if p.NodeGUID != iblab.Leaf1GUID || num(t, nf["Guid"]) != mustGUID(t, p.NodeGUID) || p.Port != iblab.GPUA017Port ||
			num(t, nf["LocalPort"]) != uint64(p.Port) || p.NodeType != 2 || p.NumPorts != 41 ||
			uint64(p.LID) != num(t, pf["Lid"]) || p.LID == 0 || p.Description != "MF0;ibsw-leaf1:MQM8700/U1" || p.State != 4 || p.PhysState != 5 {
			t.Fatalf("peer by %+v: %+v\nsmpquery nodeinfo:\n%s\nportinfo 0:\n%s", local, p, ni, pi)
		}
	}
	full := s.ask(wire.Request{Op: wire.OpPeer, Local: ibsim0}).Peer
	lid := full.LID
	// The one-SMP confirmation says the same identity.
	if id := s.ask(wire.Request{Op: wire.OpPeerNode, Local: ibsim0}).Peer; id == nil || id.NodeGUID != full.NodeGUID || id.Port != full.Port ||
		id.NodeType != full.NodeType || id.NumPorts != full.NumPorts || id.LID != 0 {
		t.Fatalf("peernode %+v, peer %+v", id, full)
	}

	set := map[string]uint64{
		"SymbolErrorCounter": 55, "LinkErrorRecoveryCounter": 7, "LinkDownedCounter": 255,
		"PortRcvErrors": 3, "PortRcvRemotePhysicalErrors": 4, "PortRcvSwitchRelayErrors": 5,
		"PortXmitDiscards": 65535, "PortXmitConstraintErrors": 6, "PortRcvConstraintErrors": 8,
		"LocalLinkIntegrityErrors": 15, "ExcessiveBufferOverrunErrors": 9, "VL15Dropped": 10,
		"PortXmitWait": 4294967295,
	}
	for f, v := range set {
		if err := l.PerformanceSet(iblab.Leaf1, iblab.GPUA017Port, "PortCounters."+f, v); err != nil {
			t.Fatal(err)
		}
	}
	a = s.ask(wire.Request{Op: wire.OpPortCounters, Local: ibsim0, LID: lid, PortNum: iblab.GPUA017Port})
	if a.Counters == nil {
		t.Fatalf("portcounters: %v", a.Err)
	}
	out, err := l.Run(iblab.GPUA017, "perfquery", fmt.Sprint(lid), fmt.Sprint(iblab.GPUA017Port))
	if err != nil {
		t.Fatal(err)
	}
	pq := fields(out)
	got := a.Counters.Values()
	for i, f := range wire.Fields {
		oracle, ok := pq[f.Name]
		if !ok {
			t.Errorf("perfquery printed no %s:\n%s", f.Name, out)
			continue
		}
		if want, isSet := set[f.Name]; isSet {
			if got[i] != want || num(t, oracle) != want {
				t.Errorf("%s: helper %d, perfquery %s, set %d", f.Name, got[i], oracle, want)
			}
		} else if got[i] > num(t, oracle) {
			// Traffic counters move with every MAD: the helper read first.
			t.Errorf("%s: helper %d after perfquery's %s", f.Name, got[i], oracle)
		}
	}

	a = s.ask(wire.Request{Op: wire.OpClassPortInfo, Local: ibsim0, LID: lid})
	capm := regexp.MustCompile(`CapMask: (0x[0-9a-f]+)`).FindStringSubmatch(out)
	if a.CPI == nil || capm == nil || uint64(a.CPI.CapMask) != num(t, capm[1]) || !a.CPI.Extended() {
		t.Fatalf("classportinfo %+v %v; perfquery: %v", a.CPI, a.Err, capm)
	}
	a = s.ask(wire.Request{Op: wire.OpPortCountersExt, Local: ibsim0, LID: lid, PortNum: iblab.GPUA017Port})
	xout, err := l.Run(iblab.GPUA017, "perfquery", "-x", fmt.Sprint(lid), fmt.Sprint(iblab.GPUA017Port))
	if err != nil {
		t.Fatal(err)
	}
	if a.Ext == nil || a.Ext.PortXmitData == 0 || a.Ext.PortXmitData > num(t, fields(xout)["PortXmitData"]) || a.Ext.Errors != nil {
		t.Fatalf("portcountersext %+v %v; perfquery -x:\n%s", a.Ext, a.Err, xout)
	}

	// Reading never clears: the switch's counters are the fabric's.
	for range 5 {
		s.ask(wire.Request{Op: wire.OpPortCounters, Local: ibsim0, LID: lid, PortNum: iblab.GPUA017Port})
	}
	out, _ = l.Run(iblab.GPUA017, "perfquery", fmt.Sprint(lid), fmt.Sprint(iblab.GPUA017Port))
	if v := fields(out)["SymbolErrorCounter"]; v != "55" {
		t.Fatalf("after reads SymbolErrorCounter is %s, was set to 55", v)
	}

	// Failures say what failed, by kind.
	if a := s.ask(wire.Request{Op: wire.OpPortCounters, TimeoutMS: 300, Local: ibsim0, LID: 999, PortNum: 1}); a.Err == nil || a.Err.Kind != wire.ErrTimeout {
		t.Errorf("counters of an unassigned LID: %+v", a)
	}
	if a := s.ask(wire.Request{Op: wire.OpPeer, Local: &wire.Local{GUID: "0x0000000000000001"}}); a.Err == nil || a.Err.Kind != wire.ErrNoPort {
		t.Errorf("peer of an unknown GUID: %+v", a)
	}
	if a := s.ask(wire.Request{Op: wire.OpPeer, Local: &wire.Local{CA: "mlx5_9", Port: 1}}); a.Err == nil || a.Err.Kind != wire.ErrOpen {
		t.Errorf("peer of a CA that does not exist: %+v", a)
	}
}

func mustGUID(t *testing.T, s string) uint64 {
	t.Helper()
	g, err := wire.ParseGUID(s)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// On the real 100-node cluster, every tenth HCA's neighbour is the one
// smpquery finds, and a counter set on that neighbour's port is what the
// helper and perfquery read. Nine helpers in turn also prove that one that
// exits at EOF gives its slot back (ibsim has ten, opensm holds one): the
// libraries' exit handlers run.
func TestLab_X5Neighbours(t *testing.T) {
	l := lab(t, iblab.Options{Fabric: iblab.X5, SM: "H-0002c90300048288", Active: []string{"H-78e7d10300229794"}})
	hosts := regexp.MustCompile(`(?m)^Ca\s+\d+\s+"(H-[0-9a-f]+)"`).FindAllStringSubmatch(x5(t), -1)
	if len(hosts) != 89 {
		t.Fatalf("%d CAs in the X5 fabric, want 89", len(hosts))
	}
	for i := 0; i < len(hosts); i += 10 {
		host := hosts[i][1]
		if err := l.WaitActive(host, time.Now().Add(30*time.Second)); err != nil {
			t.Fatal(err)
		}
		s := start(t, l, host)
		p := s.ask(wire.Request{Op: wire.OpPeer, Local: ibsim0}).Peer
		ni, err := l.Run(host, "smpquery", "-D", "nodeinfo", "0,1")
		if err != nil {
			cs, _ := l.Attached()
			t.Fatalf("%v\nattached: %+v\nibsim: %s", err, cs, tailOf(l.Output()))
		}
		nf := fields(ni)
		if p == nil || mustGUID(t, p.NodeGUID) != num(t, nf["Guid"]) || uint64(p.Port) != num(t, nf["LocalPort"]) {
			t.Fatalf("%s: helper says %+v, smpquery:\n%s", host, p, ni)
		}
		node := fmt.Sprintf("S-%016x", mustGUID(t, p.NodeGUID))
		if err := l.PerformanceSet(node, p.Port, "PortCounters.SymbolErrorCounter", uint64(100+i)); err != nil {
			t.Fatal(err)
		}
		c := s.ask(wire.Request{Op: wire.OpPortCounters, Local: ibsim0, LID: p.LID, PortNum: p.Port}).Counters
		out, err := l.Run(host, "perfquery", fmt.Sprint(p.LID), fmt.Sprint(p.Port))
		if err != nil {
			t.Fatal(err)
		}
		if c == nil || c.SymbolErrorCounter != uint64(100+i) || fields(out)["SymbolErrorCounter"] != fmt.Sprint(100+i) {
			t.Fatalf("%s: neighbour %s port %d: helper %+v, perfquery:\n%s", host, node, p.Port, c, out)
		}
		s.close()
	}
}

func x5(t *testing.T) string {
	dir := t.TempDir()
	p, err := iblab.FabricFile(dir, iblab.X5)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func tailOf(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}
