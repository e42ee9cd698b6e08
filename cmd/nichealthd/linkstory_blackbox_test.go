package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/event"
)

// A RoCE port-down event says why (DESIGN.md section 7): the simulated
// mlx5 driver of the test build reports "cable issue: unsupported cable"
// (nichealth-sim link-down), the port goes DOWN, and the fatal event's
// message and metadata carry the reason; the recovery carries none. An IB
// port going down says nothing of the sort (IPoIB has no extended state).
func TestLinkStory_BlackBoxRoCEPortDownSaysWhy(t *testing.T) {
	n := newNode(t, "dgx-h100", "")
	n.simulate() // the reason comes from nichealth-sim link-down, not a driver
	const dev, netdev = "mlx5_8", "enp65s0f0np0"
	n.start()
	n.waitEvent("RoCE baseline", portEvent(dev, event.KindPortBaseline))
	n.waitEvent("IB baseline", portEvent("mlx5_0", event.KindPortBaseline))
	out, err := exec.Command(simBinary(t), "link-down", "--root", n.h.Root, netdev, "cable_issue", "unsupported_cable").CombinedOutput()
	if err != nil {
		t.Fatalf("nichealth-sim link-down: %v: %s", err, out)
	}
	if err := n.h.SetPortState(dev, 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	e := n.waitEvent("RoCE port-down", portEvent(dev, event.KindPortFatal))
	if !strings.HasSuffix(e.Message, "; link down: cable issue: unsupported cable") ||
		e.Metadata["linkDownReason"] != "cable_issue" || e.Metadata["linkDownSubReason"] != "unsupported_cable" {
		t.Fatalf("port-down event %q %v: does not say why", e.Message, e.Metadata)
	}
	t.Logf("port-down: %s", e.Message)
	if err := n.h.SetPortState(dev, 1, "ACTIVE", "LinkUp"); err != nil {
		t.Fatal(err)
	}
	r := n.waitEvent("RoCE recovery", portEvent(dev, event.KindPortRecovered))
	if strings.Contains(r.Message, "link down") || r.Metadata["linkDownReason"] != "" {
		t.Errorf("recovery %q %v carries a reason", r.Message, r.Metadata)
	}
	if err := n.h.SetPortState("mlx5_0", 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	ib := n.waitEvent("IB port-down", portEvent("mlx5_0", event.KindPortFatal))
	if strings.Contains(ib.Message, "link down") || ib.Metadata["linkDownReason"] != "" {
		t.Errorf("IB port-down %q %v says a reason", ib.Message, ib.Metadata)
	}
	n.stop()
}
