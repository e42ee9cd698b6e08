package cable

import (
	"fmt"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/observe"
	"github.com/nichealth/nichealthd/topology"
)

// BenchmarkTracker_Observe12Ports is the join's cost in one poll cycle of
// a 12-port node (8 InfiniBand ports with a far end read, 4 RoCE ports
// with a 4-lane module each), two of them erring: what the cable verdict
// adds to the cycle (BenchmarkCycle_dgxH100 in checks/runner measures the
// whole cycle with it).
func BenchmarkTracker_Observe12Ports(b *testing.B) {
	o := trackerObs()
	o.Ports = o.Ports[:0]
	var reads []observe.ModuleReading
	for i := range 12 {
		ll := topology.LinkLayerInfiniBand
		if i >= 8 {
			ll = topology.LinkLayerEthernet
			reads = append(reads, observe.ModuleReading{Device: fmt.Sprintf("mlx5_%d", i), Port: 1, Up: true, Module: *goodModule()})
		}
		o.Ports = append(o.Ports, &observe.Port{Device: &topology.Device{Name: fmt.Sprintf("mlx5_%d", i)},
			Port: &topology.Port{Num: 1, LinkLayer: ll}, Observed: true, Link: active,
			Samples: []observe.Sample{{Path: "counters/symbol_error", Rows: []int{0, 1}}, {Path: "counters/port_xmit_wait", Rows: []int{2}}}})
	}
	o.LinkStory.Modules = reads
	t0 := time.Unix(1_700_000_000, 0)
	o.FarEnd = farEndReading(1, t0, 0)
	tr := NewTracker()
	now := t0
	for i := range 3 {
		now = now.Add(time.Second)
		o.Now = now
		for _, p := range o.Ports {
			p.Samples[0].Value, p.Samples[0].At = 0, now
		}
		o.Ports[0].Samples[0].Value = uint64(i) // one port erring
		tr.Observe(o)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now = now.Add(time.Second)
		o.Now = now
		o.Ports[1].Samples[0].Value++ // another erring every tick
		o.Ports[1].Samples[0].At = now
		tr.Observe(o)
	}
}
