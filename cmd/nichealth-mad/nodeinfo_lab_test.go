package main

import (
	"fmt"
	"testing"

	"github.com/nichealth/nichealthd/internal/iblab"
	"github.com/nichealth/nichealthd/mad/wire"
)

// nodeinfo at a LID names the node that answers there, as smpquery's
// LID-routed NodeInfo does: each leaf at its own LID, the HCA at its LID
// as a CA, and a LID nobody holds times out.
func TestLab_NodeInfoAtALID(t *testing.T) {
	l := lab(t, iblab.Options{Fabric: iblab.TwoLeaves, SM: iblab.SMHost, Active: []string{iblab.GPUA017, iblab.GPUA018}})
	s := start(t, l, iblab.GPUA017)
	leaf1 := s.ask(wire.Request{Op: wire.OpPeer, Local: ibsim0}).Peer
	if leaf1 == nil || leaf1.LID == 0 {
		t.Fatalf("peer: %+v", leaf1)
	}
	ports := s.ask(wire.Request{Op: wire.OpPorts}).Ports
	if len(ports) != 1 || ports[0].LID == 0 {
		t.Fatalf("ports: %+v", ports)
	}
	for _, c := range []struct {
		lid           int
		guid          string
		typ, numPorts int
	}{
		{leaf1.LID, iblab.Leaf1GUID, 2, 41},
		{ports[0].LID, "0xa088c20300ab0000", 1, 1},
	} {
		a := s.ask(wire.Request{Op: wire.OpNodeInfo, Local: ibsim0, LID: c.lid})
		out, err := l.Run(iblab.GPUA017, "smpquery", "nodeinfo", fmt.Sprint(c.lid))
		if err != nil {
			t.Fatal(err)
		}
		f := fields(out)
		if a.Node == nil || a.Node.NodeGUID != c.guid || num(t, f["Guid"]) != mustGUID(t, a.Node.NodeGUID) ||
			a.Node.NodeType != c.typ || a.Node.NumPorts != c.numPorts || num(t, f["NumPorts"]) != uint64(a.Node.NumPorts) {
			t.Fatalf("nodeinfo at LID %d: %+v %v\nsmpquery nodeinfo:\n%s", c.lid, a.Node, a.Err, out)
		}
	}
	// Leaf 2's LID, as a fabric dump gives it, names leaf 2.
	other := 0
	for lid := 1; lid < 20 && other == 0; lid++ {
		if a := s.ask(wire.Request{Op: wire.OpNodeInfo, TimeoutMS: 300, Local: ibsim0, LID: lid}); a.Node != nil && a.Node.NodeGUID == "0xb83fd20300a02000" {
			other = lid
		}
	}
	if other == 0 || other == leaf1.LID {
		t.Fatalf("leaf 2 answers at no LID below 20 (leaf 1 at %d)", leaf1.LID)
	}
	if a := s.ask(wire.Request{Op: wire.OpNodeInfo, TimeoutMS: 300, Local: ibsim0, LID: 999}); a.Err == nil || a.Err.Kind != wire.ErrTimeout {
		t.Errorf("nodeinfo at a LID nobody holds: %+v", a)
	}
}
