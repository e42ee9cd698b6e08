package main

import (
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/internal/iblab"
)

// Seed link counter detection, velocity windows, on the lab fabric
// (DESIGN.md section 13, "judged as the near end is"): a slow trickle of
// symbol errors at the switch port cabled to the node (3 a read, a read a
// second: 3/s, under 10/s, and no hour of reads for the 120/hour rule)
// raises nothing, where one read's rate extrapolated to an hour latched
// peer:symbol_error_fatal; then a counter stuck at its 16-bit maximum is
// one visibility-lost condition naming the switch port and perfquery -R,
// acknowledged with nichealthctl ack, and not raised again while it stays
// saturated.
func TestSeed_VelocityWindows_FarEndTrickleAndSaturationInTheLab(t *testing.T) {
	v, l := farNode(t)
	set := func(n uint64) {
		t.Helper()
		if err := l.PerformanceSet(iblab.Leaf1, iblab.GPUA017Port, "PortCounters.SymbolErrorCounter", n); err != nil {
			t.Fatal(err)
		}
	}
	set(0)
	v.start()
	v.waitPeerCounter("SymbolErrorCounter", 0)
	for n := uint64(3); n <= 12; n += 3 {
		set(n)
		v.waitPeerCounter("SymbolErrorCounter", n)
	}
	v.waitReads(2)
	if c := count(v.read(), func(e event.Event) bool { return e.CheckName == event.FarEndCheck && !e.IsHealthy }); c != 0 {
		t.Fatalf("a trickle of 3 symbol errors a second raised %d far-end conditions: %s", c, summary(v.read()))
	}

	set(65535)
	sat := v.waitEvent("the far end's saturated SymbolErrorCounter on mlx5_0 port 1", func(e event.Event) bool {
		return e.Kind == event.KindPeerSaturated && e.Device() == "mlx5_0" && e.Port() == "1"
	})
	if sat.ErrorCode[0] != "peer-saturated:SymbolErrorCounter" || sat.IsFatal ||
		!strings.HasPrefix(sat.Message, "Direct-attached ibsw-leaf1 port 17: [SymbolErrorCounter == 65535] saturated (16-bit field)") ||
		!strings.Contains(sat.Message, "perfquery -R "+sat.Metadata["peerLID"]+" 17") {
		t.Fatalf("saturation %+v", sat)
	}
	if out, code := v.ctl("ack", "mlx5_0", "1", "peer-saturated:SymbolErrorCounter"); code != 0 {
		t.Fatalf("ack: exit %d: %s", code, out)
	}
	v.waitEvent("the acknowledged saturation's clear", func(e event.Event) bool {
		return e.Kind == event.KindPeerUnsaturated && e.Device() == "mlx5_0" && e.Metadata["acknowledgedBy"] != ""
	})
	v.waitReads(2)
	if c := count(v.read(), func(e event.Event) bool { return e.Kind == event.KindPeerSaturated }); c != 1 {
		t.Fatalf("saturation raised %d times; an acknowledged one stays quiet while it stays saturated: %s", c, summary(v.read()))
	}
	set(0)
	v.stop()
}
