package main

// Black-box tests of what the views make of the far end (DESIGN.md
// section 13, "Judged as the near end is"), on the built daemon in the
// fabric lab: the boot gate, a frozen fabric's aged series, a hostile
// switch description.

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/internal/iblab"
)

// farEndRaised is a far-end condition raised on mlx5_0 port 1.
func farEndRaised(e event.Event) bool {
	return e.CheckName == event.FarEndCheck && !e.IsHealthy && e.Device() == "mlx5_0" && e.Port() == "1"
}

// DESIGN.md section 13: a node cabled to a switch port whose symbol
// errors are breached and whose 16-bit counter is stuck at 65535 becomes
// ready: nichealthctl wait-ready (what nichealthd-wait-ready.service
// runs) exits 0 and lists the far end's conditions as not waited for,
// while nichealthctl check still says WARNING.
func TestDesign_13_FarEndConditionsNeverHoldWaitReady(t *testing.T) {
	v, l := farNode(t)
	if err := l.PerformanceSet(iblab.Leaf1, iblab.GPUA017Port, "PortCounters.SymbolErrorCounter", 0); err != nil {
		t.Fatal(err)
	}
	defer l.PerformanceSet(iblab.Leaf1, iblab.GPUA017Port, "PortCounters.SymbolErrorCounter", 0)
	v.start()
	v.waitPeerCounter("SymbolErrorCounter", 0)
	if err := l.PerformanceSet(iblab.Leaf1, iblab.GPUA017Port, "PortCounters.SymbolErrorCounter", 65535); err != nil {
		t.Fatal(err)
	}
	e := v.waitEvent("a far-end condition on mlx5_0 port 1", farEndRaised)
	if e.IsFatal {
		t.Fatalf("a far-end condition is fatal: %+v", e)
	}
	// The event reaches the JSON lines before the D-Bus view may show its
	// condition (views never hold the poll loop): wait until check reads
	// it from the bus, then ask the gate.
	for deadline := time.Now().Add(waitDeadline); ; time.Sleep(100 * time.Millisecond) {
		if _, code := v.ctl("check"); code == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("nichealthctl check never said WARNING for the far-end condition")
		}
	}
	_, errs, code := v.ctlAll("wait-ready", "--timeout", "20s")
	if code != 0 || !strings.Contains(errs, "not waited for") || !strings.Contains(errs, "mlx5_0/1: "+e.Message) {
		t.Fatalf("wait-ready with a far-end condition: exit %d\n%s", code, errs)
	}
	if _, code := v.ctl("check"); code != 1 {
		t.Fatalf("nichealthctl check exit %d, want WARNING", code)
	}
	v.stop()
}

var peerErrorsSample = regexp.MustCompile(`(?m)^nichealth_peer_port_read_errors_total\{device="mlx5_0",port="1"\} (\S+)$`)

func (v *viewNode) peerReadErrors() float64 {
	if m := peerErrorsSample.FindStringSubmatch(v.scrape()); m != nil {
		n, _ := strconv.ParseFloat(m[1], 64)
		return n
	}
	return -1
}

// DESIGN.md section 13, stale not vanished: ibsim stopped (SIGSTOP: every
// MAD goes unanswered, a frozen fabric) leaves every nichealth_peer_port_*
// series of mlx5_0/1 on /metrics with its labels and last value, its read
// timestamp at the last good read while the failed reads count up; once
// the fabric answers, the timestamp moves again. NICPeerPortUnread's
// promtool test replays such a series.
func TestDesign_13_FrozenFabricLeavesAgedSeries(t *testing.T) {
	v, l := farNode(t)
	v.start()
	v.waitReads(1)
	before := v.scrape()
	m := readStamp.FindStringSubmatch(before)
	if m == nil {
		t.Fatalf("no read timestamp:\n%s", before)
	}
	stamp := m[1]
	labels, value, ok := v.peerCounter("SymbolErrorCounter")
	if !ok {
		t.Fatal("no far-end counter series")
	}
	errs0 := v.peerReadErrors()
	if errs0 < 0 {
		t.Fatalf("no nichealth_peer_port_read_errors_total for mlx5_0/1:\n%s", before)
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
	// A read in flight when ibsim stopped may still have answered: the
	// last good read is the one stamped once the first failure counts.
	deadline := time.Now().Add(waitDeadline)
	for v.peerReadErrors() < errs0+1 {
		if time.Now().After(deadline) {
			t.Fatalf("no failed read counted (%v, from %v)\nstderr:\n%s", v.peerReadErrors(), errs0, v.stderr.Tail())
		}
		time.Sleep(100 * time.Millisecond)
	}
	frozen := v.scrape()
	if m = readStamp.FindStringSubmatch(frozen); m == nil {
		t.Fatalf("no read timestamp once frozen:\n%s", frozen)
	}
	stamp = m[1]
	if labels, value, ok = v.peerCounter("SymbolErrorCounter"); !ok {
		t.Fatal("no far-end counter series once frozen")
	}
	errs0 = v.peerReadErrors()
	for v.peerReadErrors() < errs0+3 {
		if time.Now().After(deadline) {
			t.Fatalf("the failed reads were not counted (%v, from %v)\nstderr:\n%s", v.peerReadErrors(), errs0, v.stderr.Tail())
		}
		time.Sleep(100 * time.Millisecond)
	}
	page := v.scrape()
	if m := readStamp.FindStringSubmatch(page); m == nil || m[1] != stamp {
		t.Fatalf("read timestamp while frozen: %v, want the last good read %s", m, stamp)
	}
	if l2, v2, ok := v.peerCounter("SymbolErrorCounter"); !ok || l2 != labels || v2 != value {
		t.Fatalf("the far end's series while frozen: %v %q %d, want %q %d", ok, l2, v2, labels, value)
	}
	if age := time.Since(parseStamp(t, stamp)); age < 2*time.Second {
		t.Fatalf("the series are only %v old after three failed reads", age)
	}
	// DESIGN.md section 9: D-Bus and nichealthctl port read the same
	// snapshot: the same peer and counter, the same last good read, stale.
	for {
		pv, err := v.cl.Port(ctxT(t), "mlx5_0", 1)
		if err == nil && pv.PeerReadError != "" && pv.PeerReadErrors >= uint64(errs0)+3 {
			want := parseStamp(t, stamp)
			if got := time.UnixMicro(int64(pv.PeerReadUSec)); pv.PeerGUID != iblab.Leaf1GUID || pv.PeerPort != 17 || pv.PeerCounters["SymbolErrorCounter"] != value ||
				got.Sub(want).Abs() > time.Millisecond {
				t.Fatalf("D-Bus while frozen: peer %q %d counters %v read at %v, want %s port 17, %d, read at %v (/metrics)",
					pv.PeerGUID, pv.PeerPort, pv.PeerCounters, got, iblab.Leaf1GUID, value, want)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("D-Bus never said the far end is stale: %+v %v", pv, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if port, _ := v.ctl("port", "mlx5_0", "1"); !strings.Contains(port, "Far end: ibsw-leaf1 port 17 (node GUID "+iblab.Leaf1GUID+"), stale: last read ") ||
		!strings.Contains(port, "failed reads") || !strings.Contains(port, "Far error: ") {
		t.Fatalf("nichealthctl port while frozen:\n%s", port)
	}
	if err := l.Cont(); err != nil {
		t.Fatal(err)
	}
	thawed = true
	v.waitReads(2)
	if m := readStamp.FindStringSubmatch(v.scrape()); m == nil || m[1] == stamp {
		t.Fatalf("the read timestamp did not move once the fabric answered: %v", m)
	}
	v.stop()
}

func parseStamp(t *testing.T, s string) time.Time {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.UnixMicro(int64(f * 1e6))
}

// DESIGN.md sections 9 and 13: a switch that describes itself with ESC
// [31m, a C1 CSI and a right-to-left override (U+202E) reaches no view
// raw. Without a node-name map its NodeDescription is its name: the event
// message, the Nagios line, nichealthctl port and D-Bus show the bytes
// escaped as \xNN.
func TestDesign_13_HostileSwitchDescriptionIsEscaped(t *testing.T) {
	helper := madHelper(t)
	l, err := iblab.Start(iblab.Options{Fabric: iblab.TwoLeavesHostile, SM: iblab.SMHost, Active: []string{iblab.GPUA017}})
	iblab.Require(t, err)
	defer l.Close()
	v := newShapeViewNode(t, "dgx-h100", fmt.Sprintf("[farEnd]\ninterval = \"1s\"\ntimeout = \"800ms\"\nhelper = %q\n", helper))
	if err := v.h.SetGUID("mlx5_0", 0, 0xa088c20300ab0000); err != nil {
		t.Fatal(err)
	}
	if err := v.h.SetGUID("mlx5_0", 1, 0xa088c20300ab0001); err != nil {
		t.Fatal(err)
	}
	v.env = append(v.env, l.Vars(iblab.GPUA017)...)
	v.workDir = l.Dir
	if err := l.PerformanceSet(iblab.Leaf1, iblab.GPUA017Port, "PortCounters.SymbolErrorCounter", 0); err != nil {
		t.Fatal(err)
	}
	v.start()
	v.waitPeerCounter("SymbolErrorCounter", 0)
	if err := l.PerformanceSet(iblab.Leaf1, iblab.GPUA017Port, "PortCounters.SymbolErrorCounter", 55); err != nil {
		t.Fatal(err)
	}
	e := v.waitEvent("the far end's symbol errors on mlx5_0 port 1", farEndRaised)
	const escaped = `MF0;ibsw-\x1b[31mleaf1\xc2\x9b0m\xe2\x80\xae1U/0078MQM`
	raw := func(s string) bool { return strings.ContainsAny(s, "\x1b\u009b\u202e") }
	if !strings.Contains(e.Message, escaped) || raw(e.Message) || raw(e.Metadata["peerName"]) {
		t.Fatalf("event message %q (peerName %q), want %q escaped", e.Message, e.Metadata["peerName"], escaped)
	}
	check, _ := v.ctl("check")
	if !strings.Contains(check, escaped) || raw(check) {
		t.Fatalf("the Nagios line:\n%q", check)
	}
	port, _ := v.ctl("port", "mlx5_0", "1")
	if !strings.Contains(port, escaped) || raw(port) {
		t.Fatalf("nichealthctl port:\n%q", port)
	}
	pv, err := v.cl.Port(ctxT(t), "mlx5_0", 1)
	if err != nil || pv.PeerName != escaped {
		t.Fatalf("D-Bus PeerName %q (%v), want %q", pv.PeerName, err, escaped)
	}
	v.stop()
}
