package inventory_test

import (
	"testing"

	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/inventory"
)

// A function without an RDMA device has only its PCI class to say what it
// speaks (a ConnectX's class follows its port type, mlxconfig LINK_TYPE):
// network controller subclass 07 (0x0207) and the serial-bus InfiniBand
// controller (0x0c06) are InfiniBand, every other network controller
// (0x0200 Ethernet, 0x0280 other) Ethernet; the programming interface
// (the class's low byte) does not change it. Its conditions go to the
// state check of that link layer.
func TestInventory_LinkLayerOverThePCIClasses(t *testing.T) {
	for _, tc := range []struct {
		class uint32
		want  string
	}{
		{0x020700, topology.LinkLayerInfiniBand},
		{0x020701, topology.LinkLayerInfiniBand},
		{0x0c0600, topology.LinkLayerInfiniBand},
		{0x0c0601, topology.LinkLayerInfiniBand},
		{0x020000, topology.LinkLayerEthernet},
		{0x020001, topology.LinkLayerEthernet},
		{0x028000, topology.LinkLayerEthernet},
		{0x020800, topology.LinkLayerEthernet},
	} {
		f := inventory.Function{Class: tc.class}
		if got := f.LinkLayer(); got != tc.want {
			t.Errorf("class %#06x: %s, want %s", tc.class, got, tc.want)
		}
	}
}
