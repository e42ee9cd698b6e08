package cards

import (
	"fmt"
	"testing"

	"github.com/nichealth/nichealthd/topology"
)

// BenchmarkGroupEvaluate_128Cards is one homogeneity pass over the xxl
// node's 128 dual-port compute cards.
func BenchmarkGroupEvaluate_128Cards(b *testing.B) {
	var devs []*topology.Device
	for i := 0; i < 128; i++ {
		addr := fmt.Sprintf("0000:%02x:00.0", i+1)
		devs = append(devs, &topology.Device{Name: fmt.Sprintf("mlx5_%d", i), Mellanox: true, Role: topology.RoleCompute,
			HCAType: "MT4129", PCIAddress: addr, Card: topology.CardOf(addr),
			Ports: []topology.Port{{Num: 1, State: "4: ACTIVE", PhysState: "5: LinkUp"}, {Num: 2, State: "1: DOWN", PhysState: "3: Disabled"}}})
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = Evaluate(Group(devs, nil))
	}
}
