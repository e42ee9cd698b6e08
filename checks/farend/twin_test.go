package farend

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks/counters"
	"github.com/nichealth/nichealthd/checks/latch"
	"github.com/nichealth/nichealthd/config/countertable"
	"github.com/nichealth/nichealthd/mad/wire"
	"github.com/nichealth/nichealthd/topology"
)

// Seed link counter detection, appendix A (default counter thresholds),
// and DESIGN.md section 13 "judged as the near end is": every row of the
// default table that the far end judges is judged there as its local
// twin is. Each case feeds the same readings (the same cadence, the same
// increments) to the local evaluator (checks/counters) and to the far-end
// check, and pins, read by read, the breach decision both must take: the
// seed's numbers are the literals here, never the table's constants. The
// cadences are the far end's (reads a [farEnd] interval apart): where the
// local 1 s poll would see more (a burst inside a minute), the cadence
// does not allow the comparison and it is left to each side's own tests.
func TestSeed_AppendixA_FarEndJudgedAsItsLocalTwin(t *testing.T) {
	type step struct {
		dt    time.Duration
		value uint64
	}
	every := func(n int, dt time.Duration, f func(i int) uint64) []step {
		out := make([]step, 0, n)
		for i := 1; i <= n; i++ {
			out = append(out, step{dt, f(i)})
		}
		return out
	}
	one := func(dt time.Duration, vs ...uint64) []step {
		var out []step
		for _, v := range vs {
			out = append(out, step{dt, v})
		}
		return out
	}
	minute, sec := time.Minute, time.Second
	for _, tc := range []struct {
		row, field string
		rateGbps   float64
		steps      []step
		// want is the read (1-based) at which the row is first in
		// breach, 0 for never; held says how it stays.
		want int
	}{
		// symbol_error > 10/sec (non-fatal).
		{"symbol_error", "SymbolErrorCounter", 0, one(minute, 600), 0},
		{"symbol_error", "SymbolErrorCounter", 0, one(minute, 601), 1},
		{"symbol_error", "SymbolErrorCounter", 0, one(10*sec, 100, 201), 2},
		{"symbol_error", "SymbolErrorCounter", 0, one(sec, 10, 21), 2},
		// symbol_error_fatal > 120/hour: only over a full hour.
		{"symbol_error_fatal", "SymbolErrorCounter", 0, every(61, minute, func(i int) uint64 { return uint64(min(i, 60)) * 2 }), 0},
		{"symbol_error_fatal", "SymbolErrorCounter", 0, every(60, minute, func(i int) uint64 { return uint64(i) * 121 / 60 }), 60},
		{"symbol_error_fatal", "SymbolErrorCounter", 0, every(60, minute, func(int) uint64 { return 121 }), 60},
		{"symbol_error_fatal", "SymbolErrorCounter", 0, every(360, 10*sec, func(i int) uint64 { return uint64(i) * 121 / 360 }), 360},
		{"symbol_error_fatal", "SymbolErrorCounter", 0, every(60, minute, func(int) uint64 { return 3 }), 0},
		// link_error_recovery > 5/min.
		{"link_error_recovery", "LinkErrorRecoveryCounter", 0, one(minute, 5), 0},
		{"link_error_recovery", "LinkErrorRecoveryCounter", 0, one(minute, 6), 1},
		{"link_error_recovery", "LinkErrorRecoveryCounter", 0, one(59*sec, 6, 6), 0},
		{"link_error_recovery", "LinkErrorRecoveryCounter", 0, one(59*sec, 11, 11), 2},
		// link_downed: delta > 0 (fatal locally, non-fatal evidence on the far end).
		{"link_downed", "LinkDownedCounter", 0, one(minute, 0, 0, 1), 3},
		// port_rcv_errors > 10/sec.
		{"port_rcv_errors", "PortRcvErrors", 0, one(minute, 600), 0},
		{"port_rcv_errors", "PortRcvErrors", 0, one(minute, 601), 1},
		// port_xmit_discards > 100/sec.
		{"port_xmit_discards", "PortXmitDiscards", 0, one(minute, 6000), 0},
		{"port_xmit_discards", "PortXmitDiscards", 0, one(minute, 6001), 1},
		// local_link_integrity_errors, excessive_buffer_overrun_errors: any increment.
		{"local_link_integrity_errors", "LocalLinkIntegrityErrors", 0, one(minute, 0, 1), 2},
		{"excessive_buffer_overrun_errors", "ExcessiveBufferOverrunErrors", 0, one(minute, 0, 1), 2},
		// port_xmit_wait (DESIGN.md difference 14): over 10% of the link
		// lost to backpressure over a minute, 8 bytes a tick; at 10 Gb/s
		// 10% is 15,625,000 ticks a second.
		{"port_xmit_wait", "PortXmitWait", 10, one(minute, 60*15_625_000), 0},
		{"port_xmit_wait", "PortXmitWait", 10, one(minute, 60*15_625_001), 1},
		// ... and not a latch: it describes the fabric now, and clears
		// below half of it a full window later.
		{"port_xmit_wait", "PortXmitWait", 10, one(minute, 60*15_625_001, 60*15_625_001, 60*15_625_001), 1},
		// Between half the threshold and the threshold it holds; below
		// half it clears: 10% raises, 7% holds, 4% clears.
		{"port_xmit_wait", "PortXmitWait", 10, one(minute, 60*15_625_001, 60*15_625_001+42*15_625_000, 60*15_625_001+66*15_625_000), 1},
		// One 10 s spike at 40% read 10 s apart is 6.7% of the minute.
		{"port_xmit_wait", "PortXmitWait", 10, one(10*sec, 40*15_625_000, 40*15_625_000, 40*15_625_000, 40*15_625_000, 40*15_625_000, 40*15_625_000, 40*15_625_000), 0},
	} {
		name := fmt.Sprintf("%s %v", tc.row, tc.steps[:min(len(tc.steps), 3)])
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, "[farEnd.counters]\nPortRcvErrors = true\nPortXmitDiscards = true\nPortXmitWait = true\n")
			h.obs.Ports[0].RateGbps = tc.rateGbps
			var def *countertable.Definition
			for _, d := range countertable.Defaults() {
				if d.Name == tc.row {
					def = &d
				}
			}
			if def == nil {
				t.Fatalf("no default row %s", tc.row)
			}
			ev, st := counters.NewEvaluator(counters.Options{}), counters.NewMemory()
			local := func(at time.Time, v uint64) bool {
				ev.Evaluate(st, counters.Sample{Device: "mlx5_0", Port: 1, LinkLayer: topology.LinkLayerInfiniBand, Def: def,
					Value: v, PortRateGbps: tc.rateGbps, Now: at}, false)
				k := counters.Key("mlx5_0", 1, tc.row)
				_, congested := st.Congested[k]
				return st.BreachFlags[k].Breached || congested
			}
			far := func(dt time.Duration, v uint64) bool {
				h.read(dt, leaf1, setField(t, tc.field, v))
				_, latched := h.c.Memory().Ports[latch.PortOf("mlx5_0", 1)].Latched[tc.row]
				return latched
			}
			local(h.at, 0)
			far(0, 0)
			first := func(b bool, got *int, i int) {
				if b && *got == 0 {
					*got = i
				}
			}
			var gotLocal, gotFar int
			var trace []string
			for i, s := range tc.steps {
				l, f := local(h.at.Add(s.dt), s.value), far(s.dt, s.value)
				first(l, &gotLocal, i+1)
				first(f, &gotFar, i+1)
				if l != f {
					trace = append(trace, fmt.Sprintf("read %d (%d): local %v, far end %v", i+1, s.value, l, f))
				}
			}
			if gotLocal != tc.want || gotFar != tc.want || len(trace) > 0 {
				t.Fatalf("first breach: local at read %d, far end at read %d, the seed at %d; %s", gotLocal, gotFar, tc.want, strings.Join(trace, "; "))
			}
		})
	}
}

// setField sets one PortCounters field by its wire name.
func setField(t *testing.T, field string, v uint64) func(*wire.PortCounters) {
	return func(c *wire.PortCounters) {
		b, _ := json.Marshal(map[string]uint64{field: v})
		if err := json.Unmarshal(b, c); err != nil {
			t.Fatal(err)
		}
	}
}

// A far-end congestion restated from the state file (no health model
// saved) names its rule as its breach did: a share of the link over a
// minute, not a count per read.
func TestDesign_13_CongestionRestatedWithItsRule(t *testing.T) {
	h := newHarness(t, "[farEnd.counters]\nPortXmitWait = true\n")
	h.obs.Ports[0].RateGbps = 10
	h.read(0, leaf1, nil)
	h.read(time.Minute, leaf1, setField(t, "PortXmitWait", 60*20_000_000))
	var msg string
	for _, r := range h.c.Restate() {
		if r.Spec.ErrorCode[0] == "peer:port_xmit_wait" {
			msg = r.Spec.Message
		}
	}
	if !strings.Contains(msg, "(rule > 10% of the link lost over a minute)") {
		t.Fatalf("restated %q", msg)
	}
}
