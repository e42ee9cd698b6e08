package main

import (
	"slices"
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

// DESIGN.md section 13, one cable event, for a flap too short for any
// state poll to see, on the lab fabric: the port's own link_downed rises
// and the switch counts the same link going down (LinkDownedCounter +1
// at leaf 1 port 17). The local count is the cable event; the switch's
// is its witness (episodeKind counted), never a peer:link_downed latch.
func TestDesign_13_OneCableEvent_FlapShorterThanAPollSeenFromTheSwitch(t *testing.T) {
	v, l := farNode(t)
	if err := l.PerformanceSet(iblab.Leaf1, iblab.GPUA017Port, "PortCounters.LinkDownedCounter", 0); err != nil {
		t.Fatal(err)
	}
	v.start()
	v.waitPeerCounter("LinkDownedCounter", 0)
	skip := v.mark()
	// Both ends count the flap; ours first, as the switch's count reaches
	// the node only at the next far-end read.
	if err := v.h.AddCounter("mlx5_0", 1, "counters/link_downed", 1); err != nil {
		t.Fatal(err)
	}
	if err := l.PerformanceSet(iblab.Leaf1, iblab.GPUA017Port, "PortCounters.LinkDownedCounter", 1); err != nil {
		t.Fatal(err)
	}
	v.waitEventAfter(skip, "the local link_downed", func(e event.Event) bool {
		return e.Kind == event.KindCounterBreach && e.Device() == "mlx5_0" && e.Port() == "1" && slices.Contains(e.ErrorCode, "link_downed")
	})
	w := v.waitEventAfter(skip, "the switch's count taken as the local flap", func(e event.Event) bool {
		return e.CheckName == event.FarEndCheck && e.Metadata["reason"] == "local-episode"
	})
	if !w.IsHealthy || w.Metadata["peerLinkDowned"] != "+1" || w.Metadata["episodeKind"] != "counted" || w.Metadata["episodeDuration"] != "" ||
		!strings.Contains(w.Message, "shorter than a state poll") {
		t.Fatalf("witness %+v", w)
	}
	v.waitReads(2)
	if c := count(v.read()[skip:], func(e event.Event) bool { return e.Kind == event.KindPeerBreach }); c != 0 {
		t.Fatalf("a flap both ends counted latched %d far-end conditions: %s", c, summary(v.read()[skip:]))
	}
	v.stop()
}

// DESIGN.md section 13, one cable event, on the lab fabric: the node's
// port goes DOWN and back to ACTIVE while the switch counts the same link
// going down (LinkDownedCounter +1 at leaf 1 port 17): the switch's count
// is that episode seen from the other end, one healthy event of the local
// port carrying the witness, never a peer:link_downed latch.
func TestDesign_13_OneCableEvent_LocalLinkDownSeenFromTheSwitch(t *testing.T) {
	v, l := farNode(t)
	if err := l.PerformanceSet(iblab.Leaf1, iblab.GPUA017Port, "PortCounters.LinkDownedCounter", 0); err != nil {
		t.Fatal(err)
	}
	v.start()
	v.waitPeerCounter("LinkDownedCounter", 0)
	skip := len(v.read())
	if err := v.h.SetPortState("mlx5_0", 1, "DOWN", "Polling"); err != nil {
		t.Fatal(err)
	}
	v.waitEventAfter(skip, "mlx5_0 port 1 DOWN", func(e event.Event) bool {
		return e.Kind == event.KindPortFatal && e.Device() == "mlx5_0" && e.Port() == "1"
	})
	if err := l.PerformanceSet(iblab.Leaf1, iblab.GPUA017Port, "PortCounters.LinkDownedCounter", 1); err != nil {
		t.Fatal(err)
	}
	if err := v.h.SetPortState("mlx5_0", 1, "ACTIVE", "LinkUp"); err != nil {
		t.Fatal(err)
	}
	w := v.waitEventAfter(skip, "the switch's link-down taken as the local episode", func(e event.Event) bool {
		return e.CheckName == event.FarEndCheck && e.Metadata["reason"] == "local-episode"
	})
	if !w.IsHealthy || w.Metadata["peerLinkDowned"] != "+1" || w.Metadata["episodeKind"] != "link-down" || w.ErrorCode[0] != "peer:link_downed" ||
		!strings.HasPrefix(w.Message, "Direct-attached ibsw-leaf1 port 17: [LinkDownedCounter == 1] is the local link-down of mlx5_0 port 1") {
		t.Fatalf("witness %+v", w)
	}
	v.waitReads(2)
	if c := count(v.read()[skip:], func(e event.Event) bool { return e.Kind == event.KindPeerBreach }); c != 0 {
		t.Fatalf("the local link-down seen from the switch latched %d far-end conditions: %s", c, summary(v.read()[skip:]))
	}
	v.agree(verdictWant{dev: "mlx5_0", port: 1, verdict: "healthy"})
	v.stop()
}
