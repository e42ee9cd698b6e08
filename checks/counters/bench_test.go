package counters

import (
	"fmt"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/config/countertable"

	"github.com/nichealth/nichealthd/topology"
)

// BenchmarkEvaluate_PerCounter is one steady-state evaluation of one
// counter: a 1 s velocity window polled every 100 ms, a window completing
// every tenth call, no breach. It must not allocate. (A 64-bit hw_counter,
// so that b.N increments cannot saturate it.)
func BenchmarkEvaluate_PerCounter(b *testing.B) {
	ev := NewEvaluator(Options{})
	st := NewMemory()
	d := def("out_of_sequence")
	s := Sample{Device: "mlx5_0", Port: 1, LinkLayer: topology.LinkLayerInfiniBand, Def: d, Now: t0}
	ev.Evaluate(st, s, false) // first sight allocates the key once
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Now = s.Now.Add(100 * time.Millisecond)
		if i%4 == 0 {
			s.Value++
		}
		if specs, _ := ev.Evaluate(st, s, false); specs != nil {
			b.Fatal("unexpected event")
		}
	}
}

// BenchmarkEvaluate_DGXH100AllCounters is one poll cycle of a DGX H100's 13
// monitored ports (8 IB compute, 5 RoCE storage/management functions) over
// every default counter, in steady state.
func BenchmarkEvaluate_DGXH100AllCounters(b *testing.B) {
	ev := NewEvaluator(Options{})
	st := NewMemory()
	plan := PlanFor(countertable.Defaults())
	var samples []Sample
	for p := 0; p < 13; p++ {
		ll := topology.LinkLayerInfiniBand
		if p >= 8 {
			ll = topology.LinkLayerEthernet
		}
		for i := range plan {
			if !plan[i].AppliesTo(ll) {
				continue
			}
			samples = append(samples, Sample{Device: fmt.Sprintf("mlx5_%d", p), Port: 1, LinkLayer: ll,
				Def: &plan[i], PortRateGbps: 400, Now: t0})
		}
	}
	for i := range samples {
		ev.Evaluate(st, samples[i], false)
	}
	now := t0
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		now = now.Add(time.Second)
		for i := range samples {
			s := &samples[i]
			s.Now = now
			if n%8 == 0 && s.Def.VelocityUnit == countertable.UnitSecond {
				s.Value++
			}
			if specs, _ := ev.Evaluate(st, *s, false); specs != nil {
				b.Fatalf("unexpected event %+v", specs)
			}
		}
	}
	b.ReportMetric(float64(len(samples)), "counters/op")
}
