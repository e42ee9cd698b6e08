package cards

import (
	"testing"

	"github.com/nichealth/nichealthd/topology"
)

// TestCards_CardIsDescribedByItsLowestFunction: a card's role and HCA type
// come from its lowest PCI function, whatever order discovery lists the
// functions in, so a card is grouped the same way on every boot.
func TestCards_CardIsDescribedByItsLowestFunction(t *testing.T) {
	f0 := &topology.Device{Name: "mlx5_4", Mellanox: true, Card: "0000:3b:00", PCIAddress: "0000:3b:00.0",
		Role: topology.RoleStorage, HCAType: "MT4129"}
	f1 := &topology.Device{Name: "mlx5_5", Mellanox: true, Card: "0000:3b:00", PCIAddress: "0000:3b:00.1",
		Role: topology.RoleCompute, HCAType: "MT4123"}
	for _, order := range [][]*topology.Device{{f0, f1}, {f1, f0}} {
		got := Group(order, nil)
		if len(got) != 1 {
			t.Fatalf("cards = %+v", got)
		}
		if c := got[0]; c.Role != topology.RoleStorage || c.HCAType != "MT4129" || c.Functions != 2 {
			t.Fatalf("order %s,%s: card = %+v; want the lowest function's role and HCA type", order[0].Name, order[1].Name, c)
		}
	}
}
