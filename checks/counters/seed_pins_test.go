package counters

import (
	"testing"
	"time"

	"github.com/nichealth/nichealthd/config/countertable"

	"github.com/nichealth/nichealthd/topology"
)

// The seed's numbers are written here as literals, never read back from
// Defaults() or a constant: a test that loops to the value under test
// cannot notice that the value changed.

// TestCounters_10_2_SeedPin_DefaultTable pins every row of seed section
// 10.2 (thresholds of 4.5 Table 1/2 and Appendix A). carrier_changes keeps
// the seed's threshold but reads the file Linux has (DESIGN.md difference 1).
func TestCounters_10_2_SeedPin_DefaultTable(t *testing.T) {
	type row struct {
		path      string
		fatal     bool
		typ, unit string
		threshold float64
	}
	want := map[string]row{
		"link_downed":                     {"counters/link_downed", true, "delta", "", 0},
		"excessive_buffer_overrun_errors": {"counters/excessive_buffer_overrun_errors", true, "delta", "", 0},
		"local_link_integrity_errors":     {"counters/local_link_integrity_errors", true, "delta", "", 0},
		"rnr_nak_retry_err":               {"hw_counters/rnr_nak_retry_err", true, "delta", "", 0},
		"symbol_error":                    {"counters/symbol_error", false, "velocity", "second", 10},
		"symbol_error_fatal":              {"counters/symbol_error", true, "velocity", "hour", 120},
		"link_error_recovery":             {"counters/link_error_recovery", false, "velocity", "minute", 5},
		"port_rcv_errors":                 {"counters/port_rcv_errors", false, "velocity", "second", 10},
		"out_of_sequence":                 {"hw_counters/out_of_sequence", false, "velocity", "second", 100},
		"local_ack_timeout_err":           {"hw_counters/local_ack_timeout_err", false, "velocity", "second", 1},
		"port_xmit_discards":              {"counters/port_xmit_discards", false, "velocity", "second", 100},
		// DESIGN.md difference 14 replaces the seed's 10000/sec latch
		// (about 0.6 Mb/s lost) with 10% of the port rate lost over a
		// minute, non-latching.
		"port_xmit_wait":    {"counters/port_xmit_wait", false, "congestion", "minute", 10},
		"roce_slow_restart": {"hw_counters/roce_slow_restart", false, "velocity", "second", 10},
		"carrier_changes":   {"/sys/class/net/{interface}/carrier_changes", false, "delta", "", 2},
	}
	got := countertable.Defaults()
	if len(got) != 14 {
		t.Errorf("Defaults() has %d rows, the seed's table has 14", len(got))
	}
	for _, d := range got {
		w, ok := want[d.Name]
		if !ok {
			t.Errorf("default %q is not in the seed's table", d.Name)
			continue
		}
		delete(want, d.Name)
		g := row{d.Path, d.IsFatal, d.ThresholdType, d.VelocityUnit, d.Threshold}
		if g != w {
			t.Errorf("%s = %+v, seed says %+v", d.Name, g, w)
		}
		if !d.Enabled {
			t.Errorf("%s disabled by default", d.Name)
		}
	}
	for name := range want {
		t.Errorf("seed row %s missing from Defaults()", name)
	}
}

// TestCounters_10_4_SeedPin_VelocityWindows: one velocityUnit of real time.
func TestCounters_10_4_SeedPin_VelocityWindows(t *testing.T) {
	for name, want := range map[string]time.Duration{
		"symbol_error":        1 * time.Second,
		"link_error_recovery": 60 * time.Second,
		"symbol_error_fatal":  3600 * time.Second,
		"link_downed":         0,
		"carrier_changes":     0,
	} {
		if got := def(name).Window(); got != want {
			t.Errorf("%s window = %v, want %v", name, got, want)
		}
	}
}

// seedEdge drives one counter from a base value to exactly its seed
// threshold over one window on one port (healthy) and to one more on
// another (breach). For a velocity counter a huge count over half a window
// must not be judged yet (no extrapolation, seed 6.7).
func seedEdge(t *testing.T, name string, window time.Duration, atLimit, above uint64, fatal bool) {
	t.Helper()
	d := def(name)
	const base = 3 // below every saturation limit, 4-bit counters included
	rig := func(port int) *rig {
		r := newRig(t)
		r.port = port
		if d.IsNetdev() {
			r.ll = topology.LinkLayerEthernet
		}
		r.none(d, base)
		return r
	}
	rig(1).at(window).none(d, base+atLimit)
	r := rig(2)
	sp := r.at(window).one(d, base+above)
	if sp.IsFatal != fatal {
		t.Fatalf("%s breach IsFatal=%v, seed says %v", name, sp.IsFatal, fatal)
	}
	if !r.breached(d) {
		t.Fatalf("%s breach not latched", name)
	}
	if d.ThresholdType == countertable.TypeVelocity {
		rig(3).at(window/2).none(d, base+above*100)
	}
}

// TestCounters_4_5_SeedPin_Thresholds: the seed's "> N" is strict: N per
// unit is healthy, N+1 per unit breaches.
func TestCounters_4_5_SeedPin_Thresholds(t *testing.T) {
	for _, tc := range []struct {
		name          string
		window        time.Duration
		atLimit, over uint64
		fatal         bool
	}{
		{"symbol_error", time.Second, 10, 11, false},                 // > 10/sec
		{"port_rcv_errors", time.Second, 10, 11, false},              // > 10/sec
		{"roce_slow_restart", time.Second, 10, 11, false},            // > 10/sec
		{"port_xmit_discards", time.Second, 100, 101, false},         // > 100/sec
		{"out_of_sequence", time.Second, 100, 101, false},            // > 100/sec
		{"local_ack_timeout_err", time.Second, 1, 2, false},          // > 1/sec
		{"link_error_recovery", time.Minute, 5, 6, false},            // > 5/min
		{"symbol_error_fatal", time.Hour, 120, 121, true},            // > 120/hour
		{"carrier_changes", time.Second, 2, 3, false},                // > 2/interval
		{"link_downed", time.Second, 0, 1, true},                     // delta > 0
		{"excessive_buffer_overrun_errors", time.Second, 0, 1, true}, // > 0
		{"local_link_integrity_errors", time.Second, 0, 1, true},     // > 0
		{"rnr_nak_retry_err", time.Second, 0, 1, true},               // > 0
	} {
		t.Run(tc.name, func(t *testing.T) {
			seedEdge(t, tc.name, tc.window, tc.atLimit, tc.over, tc.fatal)
		})
	}
}

// TestCounters_4_5_SeedPin_RateScaledToUnit: a rate is per velocityUnit,
// measured over the real elapsed time: 11 symbol errors over 1.1 s is
// 10/sec (no breach), 12 over 1.1 s is 10.9/sec (breach).
func TestCounters_4_5_SeedPin_RateScaledToUnit(t *testing.T) {
	sym := def("symbol_error")
	r := newRig(t)
	r.none(sym, 0)
	r.at(1100*time.Millisecond).none(sym, 11)
	v := r.ev.View(r.st, r.dev, r.port, []countertable.Definition{*sym})[0]
	if !v.HasRate || v.Rate < 9.999 || v.Rate > 10.001 || v.RateUnit != "/sec" {
		t.Fatalf("rate after 11 in 1.1 s = %v %s (has=%v), want 10 /sec", v.Rate, v.RateUnit, v.HasRate)
	}
	r.at(2200*time.Millisecond).one(sym, 23)

	ler := def("link_error_recovery")
	r = newRig(t)
	r.none(ler, 0)
	// 11 retrains over 2 minutes = 5.5/min: a breach only if the rate is
	// scaled to the elapsed time, not taken per window.
	r.at(2*time.Minute).one(ler, 11)
	r2 := newRig(t)
	r2.none(ler, 0)
	r2.at(2*time.Minute).none(ler, 10) // 5/min
}
