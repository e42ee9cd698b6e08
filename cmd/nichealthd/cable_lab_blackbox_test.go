package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/internal/iblab"
)

// waitCable waits until /metrics shows mlx5_0 port 1's cable verdict.
func (v *viewNode) waitCable(direction, suspect string) {
	v.t.Helper()
	want := fmt.Sprintf(`nichealth_cable_verdict{device="mlx5_0",port="1",direction=%q,suspect=%q} 1`, direction, suspect)
	deadline := time.Now().Add(waitDeadline)
	for !strings.Contains(v.scrape(), want) {
		if time.Now().After(deadline) {
			v.t.Fatalf("/metrics never showed %s\nstderr:\n%s", want, v.stderr.Tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// DESIGN.md section 15 in the lab: symbol errors counted by the switch
// port cabled to gpu-a017's HCA (ibsim PerformanceSet on leaf 1 port 17)
// are the host-to-switch direction, in every view (the far end's event
// metadata, /metrics, D-Bus, nichealthctl cables and port, the Nagios
// line); symbol errors then counted by our own port too make both
// directions, and the cable the suspect. Before that, a clean cable says
// nothing, and names its switch port.
func TestCable_15_LabFromHostThenBoth(t *testing.T) {
	v, l := farNode(t)
	base := uint64(100)
	if err := l.PerformanceSet(iblab.Leaf1, iblab.GPUA017Port, "PortCounters.SymbolErrorCounter", base); err != nil {
		t.Fatal(err)
	}
	v.start()
	v.waitPeerCounter("SymbolErrorCounter", base)
	v.waitCable("none", "")
	out, code := v.ctl("cables")
	if code != 0 || !strings.Contains(out, "ibsw-leaf1 port 17") {
		t.Fatalf("clean cables (exit %d):\n%s", code, out)
	}

	if err := l.PerformanceSet(iblab.Leaf1, iblab.GPUA017Port, "PortCounters.SymbolErrorCounter", base+55); err != nil {
		t.Fatal(err)
	}
	e := v.waitEvent("the far end's symbol errors", func(e event.Event) bool { return peerBreach(e) && e.Metadata["value"] == fmt.Sprint(base+55) })
	if e.Metadata["cableDirection"] != "from-host" || e.Metadata["cableSuspect"] != "unknown" ||
		!strings.Contains(e.Metadata["cableEvidence"], "switch SymbolErrorCounter +55 in 2m0s") {
		t.Fatalf("far-end event metadata %v", e.Metadata)
	}
	v.waitCable("from-host", "unknown")
	pv, err := v.cl.Port(ctxT(t), "mlx5_0", 1)
	if err != nil {
		t.Fatal(err)
	}
	if pv.CableDirection != "from-host" || pv.CableSuspect != "unknown" {
		t.Fatalf("D-Bus CableDirection %q CableSuspect %q", pv.CableDirection, pv.CableSuspect)
	}
	out, code = v.ctl("cables")
	var line string
	for _, ln := range strings.Split(out, "\n") {
		if strings.HasPrefix(ln, "mlx5_0/1 ") {
			line = ln
		}
	}
	if code != 1 || !strings.Contains(line, "ibsw-leaf1 port 17") || !strings.Contains(line, "from-host") || !strings.Contains(line, "switch SymbolErrorCounter +55") {
		t.Fatalf("cables (exit %d) line %q:\n%s", code, line, out)
	}
	// One direction names no part: the Nagios line stays the slides'
	// (their words first, then the rule and window the far-end check
	// names), with no suspect part appended.
	check, _ := v.ctl("check")
	want := fmt.Sprintf("mlx5_0-%s:WARNING - Direct-attached ibsw-leaf1 port 17: [SymbolErrorCounter == %d]", pv.NetDev, base+55)
	var nagios string
	for _, ln := range strings.Split(check, "\n") {
		if strings.HasPrefix(ln, want) {
			nagios = ln
		}
	}
	if nagios == "" || !strings.HasSuffix(nagios, " ;;") || strings.Contains(nagios, "suspect") {
		t.Fatalf("the Nagios line is not the slides' %q (and no part named):\n%s", want, check)
	}

	// Our receiver counts errors too: both directions, the cable.
	if err := v.h.AddCounter("mlx5_0", 1, "counters/symbol_error", 3); err != nil {
		t.Fatal(err)
	}
	v.waitCable("both", "cable")
	pv, err = v.cl.Port(ctxT(t), "mlx5_0", 1)
	if err != nil {
		t.Fatal(err)
	}
	if pv.CableDirection != "both" || pv.CableSuspect != "cable" || pv.CablePart != "cable" {
		t.Fatalf("D-Bus after both ends erred: %q %q %q", pv.CableDirection, pv.CableSuspect, pv.CablePart)
	}
	check, _ = v.ctl("check")
	if !strings.Contains(check, "[SymbolErrorCounter == 155] ") || !strings.Contains(check, ") - suspect cable, errors both ;;") {
		t.Fatalf("the Nagios line does not name the suspect part:\n%s", check)
	}
	port, _ := v.ctl("port", "mlx5_0", "1")
	if !strings.Contains(port, "Cable: both; suspect cable; host symbol_error +3 in 2m0s; switch SymbolErrorCounter +55 in 2m0s") {
		t.Fatalf("nichealthctl port:\n%s", port)
	}
	v.stop()
}
