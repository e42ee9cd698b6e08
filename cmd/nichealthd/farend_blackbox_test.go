package main

// Black-box tests of the far end of every cable (DESIGN.md section 13),
// named after the slides' "Remote errors check": the built daemon on a
// simulated DGX H100 whose mlx5_0 carries the GUIDs of gpu-a017 in a real
// fabric lab (ibsim, opensm; internal/iblab), its nichealth-mad speaking
// MADs as that node through umad2sim. The lab is shared by the package's
// tests and started on first use.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/internal/iblab"
)

var fabric struct {
	sync.Mutex
	lab    *iblab.Lab
	err    error
	helper string
	mapf   string
	// helperErr is why nichealth-mad could not be built.
	helperErr error
}

func stopFabricLab() {
	fabric.Lock()
	defer fabric.Unlock()
	if fabric.lab != nil {
		fabric.lab.Close()
	}
}

// fabricLab is the package's lab and the helper built for it.
func fabricLab(t *testing.T) (*iblab.Lab, string, string) {
	t.Helper()
	fabric.Lock()
	defer fabric.Unlock()
	if fabric.lab == nil && fabric.err == nil {
		fabric.lab, fabric.err = iblab.Start(iblab.Options{Fabric: iblab.TwoLeaves, SM: iblab.SMHost, Active: []string{iblab.GPUA017, iblab.GPUA018}})
		if fabric.err == nil {
			fabric.helper, fabric.err = buildMADHelperLocked()
			fabric.mapf, _ = iblab.FabricFile(fabric.lab.Dir, iblab.NodeNameMap)
		}
	}
	iblab.Require(t, fabric.err)
	return fabric.lab, fabric.helper, fabric.mapf
}

// madHelper is nichealth-mad built beside the daemon under test, for a
// test that runs a lab of its own.
func madHelper(t *testing.T) string {
	t.Helper()
	fabric.Lock()
	defer fabric.Unlock()
	helper, err := buildMADHelperLocked()
	iblab.Require(t, err)
	return helper
}

// buildMADHelperLocked builds nichealth-mad once. Caller holds fabric.
func buildMADHelperLocked() (string, error) {
	if fabric.helper != "" || fabric.helperErr != nil {
		return fabric.helper, fabric.helperErr
	}
	helper := filepath.Join(filepath.Dir(daemonBin), "nichealth-mad")
	cmd := exec.Command("go", "build", "-o", helper, "../nichealth-mad")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		fabric.helperErr = fmt.Errorf("go build nichealth-mad (needs libibumad-dev, libibmad-dev): %v\n%s", err, out)
		return "", fabric.helperErr
	}
	fabric.helper = helper
	return helper, nil
}

// farNode is a viewed daemon whose mlx5_0 port 1 is gpu-a017's HCA port
// in the lab, reading the far end every second.
func farNode(t *testing.T) (*viewNode, *iblab.Lab) {
	t.Helper()
	l, helper, mapf := fabricLab(t)
	v := newShapeViewNode(t, "dgx-h100", fmt.Sprintf("[farEnd]\ninterval = \"1s\"\ntimeout = \"800ms\"\nhelper = %q\nnodeNameMap = %q\n", helper, mapf))
	if err := v.h.SetGUID("mlx5_0", 0, 0xa088c20300ab0000); err != nil {
		t.Fatal(err)
	}
	if err := v.h.SetGUID("mlx5_0", 1, 0xa088c20300ab0001); err != nil {
		t.Fatal(err)
	}
	v.env = append(v.env, l.Vars(iblab.GPUA017)...)
	v.workDir = l.Dir
	return v, l
}

var peerSample = regexp.MustCompile(`(?m)^nichealth_peer_port_counter\{([^}]*)\} (\S+)$`)

// peerCounter is the /metrics value of one far-end field of mlx5_0/1 with
// its labels, or ok false.
func (v *viewNode) peerCounter(field string) (labels string, value uint64, ok bool) {
	for _, m := range peerSample.FindAllStringSubmatch(v.scrape(), -1) {
		if strings.Contains(m[1], `device="mlx5_0"`) && strings.Contains(m[1], `port="1"`) && strings.Contains(m[1], `counter="`+field+`"`) {
			n, err := strconv.ParseFloat(m[2], 64)
			return m[1], uint64(n), err == nil
		}
	}
	return "", 0, false
}

// waitPeerCounter waits until /metrics shows the field at value.
func (v *viewNode) waitPeerCounter(field string, value uint64) string {
	v.t.Helper()
	deadline := time.Now().Add(waitDeadline)
	for {
		if l, got, ok := v.peerCounter(field); ok && got == value {
			return l
		}
		if time.Now().After(deadline) {
			l, got, ok := v.peerCounter(field)
			v.t.Fatalf("/metrics never showed the far end's %s = %d (last %v %d %q)\nstderr:\n%s", field, value, ok, got, l, v.stderr.Tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var readStamp = regexp.MustCompile(`(?m)^nichealth_peer_port_read_timestamp_seconds\{[^}]*device="mlx5_0",port="1"[^}]*\} (\S+)$`)

// waitReads waits until the far end of mlx5_0/1 has been read k more times
// (its read timestamp moved k times): how a test that checks that nothing
// was raised knows the daemon has looked.
func (v *viewNode) waitReads(k int) {
	v.t.Helper()
	last, seen := "", -1
	deadline := time.Now().Add(waitDeadline)
	for seen < k {
		m := readStamp.FindStringSubmatch(v.scrape())
		if m != nil && m[1] != last {
			last, seen = m[1], seen+1
		}
		if time.Now().After(deadline) {
			v.t.Fatalf("the far end was read %d more times, want %d\nstderr:\n%s", seen, k, v.stderr.Tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func perfSymbolErrors(t *testing.T, l *iblab.Lab, lid, port int) uint64 {
	t.Helper()
	out, err := l.Run(iblab.GPUA017, "perfquery", strconv.Itoa(lid), strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`SymbolErrorCounter:\.+(\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("perfquery:\n%s", out)
	}
	n, _ := strconv.ParseUint(m[1], 10, 64)
	return n
}

func peerBreach(e event.Event) bool {
	return e.Kind == event.KindPeerBreach && e.Device() == "mlx5_0" && e.Port() == "1"
}

// The slides' "Remote errors check (switch port)": symbol errors counted
// by the switch port cabled to the node's HCA become, on the next reading,
// a non-fatal condition on that HCA port naming the switch by its
// node-name map name and port, in the slides' words, in every view; the
// metric is what perfquery reads; an acknowledgement clears it and the
// switch's counter stays.
func TestSlides_RemoteErrorsCheck_SymbolErrorsOnTheCabledSwitchPort(t *testing.T) {
	v, l := farNode(t)
	if err := l.PerformanceSet(iblab.Leaf1, iblab.GPUA017Port, "PortCounters.SymbolErrorCounter", 0); err != nil {
		t.Fatal(err)
	}
	v.start()
	v.waitPeerCounter("SymbolErrorCounter", 0)
	if err := l.PerformanceSet(iblab.Leaf1, iblab.GPUA017Port, "PortCounters.SymbolErrorCounter", 55); err != nil {
		t.Fatal(err)
	}
	e := v.waitEvent("the far end's symbol errors on mlx5_0 port 1", peerBreach)
	const want = "Direct-attached ibsw-leaf1 port 17: [SymbolErrorCounter == 55]"
	if !strings.HasPrefix(e.Message, want+" symbol_error - ") || !strings.Contains(e.Message, "rule > 10/sec") || e.IsFatal || e.CheckName != event.FarEndCheck || e.RecommendedAction != event.ActionNone ||
		e.Metadata["peerGUID"] != iblab.Leaf1GUID || e.Metadata["peerPort"] != "17" || e.Metadata["peerName"] != "ibsw-leaf1" ||
		!strings.HasPrefix(e.ErrorCode[0], "peer:symbol_error") {
		t.Fatalf("event %+v", e)
	}
	// Raised by the first full second of reads that saw the errors, judged
	// from the read before the fault (DESIGN.md 13: reads a jittered
	// second apart judge the per-second rule at the first read at least a
	// second after the window's start, never over less).
	if e.Metadata["previousValue"] != "0" || e.Metadata["value"] != "55" {
		t.Fatalf("raised from %s to %s: not the window that saw the fault", e.Metadata["previousValue"], e.Metadata["value"])
	}
	v.agree(verdictWant{dev: "mlx5_0", port: 1, verdict: "degraded"})

	pv, err := v.cl.Port(ctxT(t), "mlx5_0", 1)
	if err != nil {
		t.Fatal(err)
	}
	if pv.PeerGUID != iblab.Leaf1GUID || pv.PeerPort != 17 || pv.PeerName != "ibsw-leaf1" || pv.PeerCounters["SymbolErrorCounter"] != 55 {
		t.Fatalf("D-Bus port: peer %q %d %q counters %v", pv.PeerGUID, pv.PeerPort, pv.PeerName, pv.PeerCounters)
	}
	check, code := v.ctl("check")
	line := fmt.Sprintf("mlx5_0-%s:WARNING - %s", pv.NetDev, want)
	if code != 1 || !strings.Contains(check, "\n"+line) {
		t.Fatalf("the Nagios line (exit %d) lacks %q:\n%s", code, line, check)
	}
	port, _ := v.ctl("port", "mlx5_0", "1")
	if !strings.Contains(port, "Far end: ibsw-leaf1 port 17 (node GUID 0xb83fd20300a01000)") || !strings.Contains(port, "SymbolErrorCounter=55") ||
		!strings.Contains(port, want) {
		t.Fatalf("nichealthctl port:\n%s", port)
	}
	labels := v.waitPeerCounter("SymbolErrorCounter", 55)
	for _, w := range []string{`peer_guid="0xb83fd20300a01000"`, `peer_port="17"`, `peer_name="ibsw-leaf1"`} {
		if !strings.Contains(labels, w) {
			t.Fatalf("metric labels %s lack %s", labels, w)
		}
	}
	// The metric is what perfquery, the fabric team's tool, reads.
	lid, _ := strconv.Atoi(e.Metadata["peerLID"])
	if got := perfSymbolErrors(t, l, lid, iblab.GPUA017Port); got != 55 {
		t.Fatalf("perfquery reads %d, the metric 55", got)
	}

	if out, code := v.ctl("ack", "mlx5_0", "1"); code != 0 {
		t.Fatalf("ack: exit %d: %s", code, out)
	}
	v.waitEvent("the far end's recovery", func(e event.Event) bool {
		return e.Kind == event.KindPeerRecovered && e.Device() == "mlx5_0" && e.Metadata["reason"] == "acknowledged"
	})
	v.agree(verdictWant{dev: "mlx5_0", port: 1, verdict: "healthy"})
	// Never cleared from here: the switch still counts 55.
	if got := perfSymbolErrors(t, l, lid, iblab.GPUA017Port); got != 55 {
		t.Fatalf("after the ack the switch's counter reads %d: the daemon cleared it", got)
	}
	v.stop()
}

// Errors on switch ports not cabled to this node (another host's, an
// inter-switch link) are the fabric's, not this node's: nothing is raised,
// after the daemon has read its own far end twice since.
func TestSlides_RemoteErrorsCheck_OtherSwitchPortsRaiseNothing(t *testing.T) {
	v, l := farNode(t)
	v.start()
	v.waitReads(1)
	for _, p := range []int{18, 33} {
		if err := l.PerformanceSet(iblab.Leaf1, p, "PortCounters.SymbolErrorCounter", 999); err != nil {
			t.Fatal(err)
		}
		if err := l.PerformanceSet(iblab.Leaf1, p, "PortCounters.LinkDownedCounter", 7); err != nil {
			t.Fatal(err)
		}
	}
	v.waitReads(3)
	if c := count(v.read(), func(e event.Event) bool { return e.CheckName == event.FarEndCheck && !e.IsHealthy }); c != 0 {
		t.Fatalf("%d far-end conditions for errors on other ports: %s", c, summary(v.read()))
	}
	v.stop()
}

// A recabled port follows its new peer: gpu-a017's cable moved from leaf 1
// port 17 to leaf 2 port 17 (the port goes down and up again) is found
// at the new peer, and a condition the old peer raised clears with it.
func TestDesign_13_RecabledPortFollowsItsNewPeer(t *testing.T) {
	v, l := farNode(t)
	v.start()
	v.waitReads(1)
	if err := l.PerformanceSet(iblab.Leaf1, iblab.GPUA017Port, "PortCounters.LinkDownedCounter", 3); err != nil {
		t.Fatal(err)
	}
	v.waitEvent("the old peer's link_downed", func(e event.Event) bool { return peerBreach(e) && e.ErrorCode[0] == "peer:link_downed" })
	defer func() {
		// The lab's cable back where the other tests expect it.
		l.Unlink(iblab.GPUA017, 1)
		l.Link(iblab.GPUA017, 1, iblab.Leaf1, iblab.GPUA017Port)
		l.WaitActive(iblab.GPUA017, time.Now().Add(waitDeadline))
	}()
	if err := l.Unlink(iblab.GPUA017, 1); err != nil {
		t.Fatal(err)
	}
	v.h.SetPortState("mlx5_0", 1, "DOWN", "Polling")
	if err := l.Link(iblab.GPUA017, 1, iblab.Leaf2, 17); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitActive(iblab.GPUA017, time.Now().Add(waitDeadline)); err != nil {
		t.Fatal(err)
	}
	v.h.SetPortState("mlx5_0", 1, "ACTIVE", "LinkUp")
	e := v.waitEvent("the old peer's condition cleared by the recabling", func(e event.Event) bool {
		return e.Kind == event.KindPeerRecovered && e.Metadata["reason"] == "peer-changed"
	})
	if !strings.Contains(e.Message, "ibsw-leaf2 port 17") || e.ErrorCode[0] != "peer:link_downed" {
		t.Fatalf("%+v", e)
	}
	deadline := time.Now().Add(waitDeadline)
	for {
		pv, err := v.cl.Port(ctxT(t), "mlx5_0", 1)
		if err == nil && pv.PeerName == "ibsw-leaf2" && pv.PeerPort == 17 && pv.PeerGUID == "0xb83fd20300a02000" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("D-Bus never showed the new peer: %+v %v", pv, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	v.stop()
}

// helperPID is the running nichealth-mad child of the daemon (0: none).
func (n *node) helperPID() int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || !strings.Contains(s[:i], "(nichealth-mad") {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(n.cmd.Process.Pid) {
			return pid
		}
	}
	return 0
}

// A killed helper comes back: the far end's monitoring condition is raised
// while it is gone and cleared when a new one answers, and the far end is
// read again.
func TestDesign_13_KilledHelperComesBack(t *testing.T) {
	v, l := farNode(t)
	v.start()
	v.waitReads(1)
	pid := v.helperPID()
	if pid == 0 {
		t.Fatalf("no nichealth-mad child of the daemon\n%s", v.stderr.Tail())
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	v.waitEvent("the far end lost", func(e event.Event) bool { return e.Kind == event.KindFarEndLost })
	// The kernel closes a dead process's umad file; in the lab, X does.
	if err := l.Free(pid); err != nil {
		t.Fatal(err)
	}
	e := v.waitEvent("the far end restored", func(e event.Event) bool { return e.Kind == event.KindFarEndRestored })
	if e.ErrorCode[0] != "far-end-lost" {
		t.Fatalf("%+v", e)
	}
	if p := v.helperPID(); p == 0 || p == pid {
		t.Fatalf("helper after the restart: %d (killed %d)", p, pid)
	}
	v.waitReads(2)
	v.stop()
}

// A hung fabric (ibsim stopped: every MAD goes unanswered) leaves the poll
// loop polling and the views answering; the far end is read again once
// the fabric answers.
func TestDesign_13_HungFabricLeavesThePollLoopPolling(t *testing.T) {
	v, l := farNode(t)
	v.start()
	v.waitReads(1)
	if err := l.Stop(); err != nil {
		t.Fatal(err)
	}
	thawed := false
	defer func() {
		if !thawed {
			l.Cont()
		}
	}()
	v.waitViewPolls(20)
	v.waitLog("the far end's timeout", func(s string) bool { return strings.Contains(s, "far end not read") })
	if pv, err := v.cl.Port(ctxT(t), "mlx5_0", 1); err != nil || pv.Device != "mlx5_0" {
		t.Fatalf("D-Bus while the fabric hangs: %v", err)
	}
	if err := l.Cont(); err != nil {
		t.Fatal(err)
	}
	thawed = true
	v.waitReads(2)
	if c := count(v.read(), func(e event.Event) bool { return e.Kind == event.KindFarEndLost }); c != 0 {
		t.Fatalf("a fabric that does not answer is not the helper's failure: %s", summary(v.read()))
	}
	v.stop()
}

// No umad device at all: the daemon runs every other check and says once,
// with the fix, why the far end is not read; no far-end event.
func TestDesign_13_NoUmadLeavesAWorkingDaemonAndOneLogLine(t *testing.T) {
	n := newNode(t, "dgx-h100", "[farEnd]\ninterval = \"1s\"\ntimeout = \"500ms\"\n")
	umads, _ := filepath.Glob(filepath.Join(n.h.DevRoot(), "infiniband", "umad*"))
	for _, u := range umads {
		os.Remove(u)
	}
	n.withMetrics()
	n.start()
	n.waitEvent("baseline", portEvent("mlx5_0", event.KindPortBaseline))
	n.waitLog("why the far end is not read", func(s string) bool { return strings.Contains(s, "modprobe ib_umad") })
	n.waitPolls(30)
	if c := strings.Count(n.stderr.String(), "is not read on this host"); c != 1 {
		t.Fatalf("said %d times:\n%s", c, n.stderr.Tail())
	}
	n.h.SetPortState("mlx5_3", 1, "DOWN", "Disabled")
	n.waitEvent("fatal mlx5_3", portEvent("mlx5_3", event.KindPortFatal))
	if c := count(n.read(), func(e event.Event) bool { return e.CheckName == event.FarEndCheck && e.Kind != event.KindCheckCleared }); c != 0 {
		t.Fatalf("far-end events without umad: %s", summary(n.read()))
	}
	n.stop()
}

var pollCountSample = regexp.MustCompile(`(?m)^nichealth_poll_duration_seconds_count (\S+)$`)

// waitViewPolls waits until k more polls have completed, from the view
// node's /metrics.
func (v *viewNode) waitViewPolls(k int) {
	v.t.Helper()
	polls := func() float64 {
		if m := pollCountSample.FindStringSubmatch(v.scrape()); m != nil {
			n, _ := strconv.ParseFloat(m[1], 64)
			return n
		}
		return -1
	}
	start := polls()
	deadline := time.Now().Add(waitDeadline)
	for start < 0 || polls() < start+float64(k) {
		if start < 0 {
			start = polls()
		}
		if time.Now().After(deadline) {
			v.t.Fatalf("fewer than %d polls completed\nstderr:\n%s", k, v.stderr.Tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
