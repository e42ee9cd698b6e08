package roce

import (
	"strconv"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/observe"
	"github.com/nichealth/nichealthd/topology"
)

// BenchmarkRun_EightRoCEPorts is one counter tick of the check over eight
// RoCE ports with every signal present, busy (every counter moving, ECN
// marks at a congested rate), a window judged every 60th tick. A steady
// tick must not allocate: the poll cycle's budget is zero allocations.
func BenchmarkRun_EightRoCEPorts(b *testing.B) {
	c := NewCheck()
	c.Configure(Config{On: true, Thresholds: defaults})
	var obs observe.Observation
	obs.Counters = Rows()
	obs.Plan = 1
	for p := range 8 {
		op := &observe.Port{Device: &topology.Device{Name: "mlx5_" + strconv.Itoa(p)},
			Port: &topology.Port{Num: 1, LinkLayer: topology.LinkLayerEthernet}, NetDev: "eth" + strconv.Itoa(p), RateGbps: 400}
		for i := range NumSignals {
			op.Samples = append(op.Samples, observe.Sample{Rows: []int{i}})
		}
		obs.Ports = append(obs.Ports, op)
	}
	cy := checks.NewCycle(noBoundary{})
	out := make([]event.Spec, 0, 16)
	now := t0
	tick := func() {
		now = now.Add(time.Second)
		for _, p := range obs.Ports {
			for i := range p.Samples {
				p.Samples[i].Value += 5000
				p.Samples[i].At = now
			}
		}
		obs.CounterTick, obs.CounterAt = true, now
		out = out[:0]
		cy.Reset(&obs, &out)
		c.Run(cy)
	}
	for range 120 {
		tick() // first windows, classes raised (congested: no event)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		tick()
		if len(out) != 0 {
			b.Fatalf("unexpected events %+v", out)
		}
	}
}
