package sim

import (
	"testing"

	"github.com/nichealth/nichealthd/topology"
)

// A test gives a simulated port a fabric lab node's GUIDs: discovery
// reads them as it reads a real host's (node_guid, gids/0).
func TestSetGUID_DiscoveryReadsThem(t *testing.T) {
	h, err := Build(t.TempDir(), "dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	var dev string
	for _, d := range h.Devices() {
		if d.LinkLayer == topology.LinkLayerInfiniBand {
			dev = d.Name
			break
		}
	}
	if dev == "" {
		t.Skip("shape has no InfiniBand device")
	}
	if err := h.SetGUID(dev, 0, 0xa088c20300ab0000); err != nil {
		t.Fatal(err)
	}
	if err := h.SetGUID(dev, 1, 0xa088c20300ab0001); err != nil {
		t.Fatal(err)
	}
	devs, _, err := topology.Discover(h.Paths(), topology.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		if d.Name == dev && (d.Ports[0].GUID != "0xa088c20300ab0001" || d.NodeGUID != "a088:c203:00ab:0000") {
			t.Fatalf("discovered %s port GUID %s node GUID %s", dev, d.Ports[0].GUID, d.NodeGUID)
		}
	}
	if d, _ := h.Device(dev); d.NodeGUID != "a088:c203:00ab:0000" {
		t.Fatalf("manifest %+v", d)
	}
	if err := h.SetGUID(dev, 9, 1); err == nil {
		t.Fatal("a port that does not exist took a GUID")
	}
}
