package counters

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/config/countertable"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

// TestCounters_10_2_EveryRowJudged: for every default row, a value just at
// the threshold is healthy and one more is a breach with the right check,
// severity and action.
func TestCounters_10_2_EveryRowJudged(t *testing.T) {
	for _, d := range countertable.Defaults() {
		if d.ThresholdType == countertable.TypeCongestion {
			continue // not a breach: TestCounters_DESIGN_14_Congestion*
		}
		t.Run(d.Name, func(t *testing.T) {
			d := d
			below := uint64(d.Threshold) // rate == threshold is not "> threshold"
			r := newRig(t)
			// Seed 11.1 (DESIGN.md difference 2): fatal breaches under the
			// state check, non-fatal ones under the degradation check.
			wantCheck := map[bool]string{true: "InfiniBandStateCheck", false: "InfiniBandDegradationCheck"}[d.IsFatal]
			if d.IsNetdev() {
				r.ll = topology.LinkLayerEthernet
				wantCheck = map[bool]string{true: "EthernetStateCheck", false: "EthernetDegradationCheck"}[d.IsFatal]
			}
			step := time.Second
			if d.ThresholdType == countertable.TypeVelocity {
				step = d.Window()
			}
			base := uint64(1000)
			if d.Name == "excessive_buffer_overrun_errors" || d.Name == "local_link_integrity_errors" {
				base = 3 // 4-bit counters
			}
			r.none(&d, base)
			r.at(step).none(&d, base+below)
			if r.breached(&d) {
				t.Fatal("breached at threshold")
			}
			sp := r.at(2*step).one(&d, base+below+below+1)
			if sp.Kind != event.KindCounterBreach || sp.CheckName != wantCheck || sp.IsFatal != d.IsFatal || sp.IsHealthy {
				t.Errorf("spec = %+v", sp)
			}
			ev := event.New(sp, event.Stamp{NodeName: "n", Now: r.now})
			wantAction := event.ActionNone
			if d.IsFatal {
				wantAction = event.ActionReplaceVM
			}
			if ev.RecommendedAction != wantAction {
				t.Errorf("action = %v, want %v", ev.RecommendedAction, wantAction)
			}
			if len(sp.ErrorCode) != 1 || sp.ErrorCode[0] != d.Name {
				t.Errorf("errorCode = %v", sp.ErrorCode)
			}
			if sp.Device != "mlx5_0" || sp.Port != 1 {
				t.Errorf("entities = %s %d", sp.Device, sp.Port)
			}
			if !strings.HasPrefix(sp.Message, "Port mlx5_0 port 1: "+d.Name+" - "+d.Description+" (value=") {
				t.Errorf("message = %q", sp.Message)
			}
			f := r.st.BreachFlags[r.key(&d)]
			if !f.Breached || f.CheckName != wantCheck || f.IsFatal != d.IsFatal || !f.Since.Equal(r.now) || f.Definition != d.Fingerprint() {
				t.Errorf("flag = %+v", f)
			}
		})
	}
}

// TestCounters_11_1_BreachMessage: the seed's example, exactly.
func TestCounters_11_1_BreachMessage(t *testing.T) {
	r := newRig(t)
	d := def("symbol_error")
	r.none(d, 0)
	r.at(5 * time.Second)
	sp := r.one(d, 100)
	want := "Port mlx5_0 port 1: symbol_error - PHY bit errors before FEC - physical layer degradation (value=100, delta=100, rate=20.00/sec)"
	if sp.Message != want {
		t.Errorf("message\n got %q\nwant %q", sp.Message, want)
	}
	wantMD := map[string]string{"counter": "symbol_error", "value": "100", "delta": "100", "rate": "20.00",
		"unit": "second", "threshold": "10", "thresholdType": "velocity", "window": "1s", "elapsed": "5s",
		"path": "counters/symbol_error"}
	for k, v := range wantMD {
		if sp.Metadata[k] != v {
			t.Errorf("metadata[%s] = %q, want %q", k, sp.Metadata[k], v)
		}
	}
	if _, ok := sp.Metadata["lowerBound"]; ok {
		t.Error("lowerBound set on an unsaturated counter")
	}

	// A delta counter reports its rate per second over the poll interval.
	r2 := newRig(t)
	ld := def("link_downed")
	r2.none(ld, 0)
	sp = r2.at(5*time.Second).one(ld, 1)
	if want := "Port mlx5_0 port 1: link_downed - Port Training State Machine failed - QP disconnect (value=1, delta=1, rate=0.20/sec)"; sp.Message != want {
		t.Errorf("message\n got %q\nwant %q", sp.Message, want)
	}
	// Minute and hour units print as such.
	r3 := newRig(t)
	ler := def("link_error_recovery")
	r3.none(ler, 0)
	if sp = r3.at(time.Minute).one(ler, 6); !strings.HasSuffix(sp.Message, "(value=6, delta=6, rate=6.00/min)") {
		t.Errorf("message %q", sp.Message)
	}
}

// A reboot's baselines go under the check the counter's breach is
// reported under (DESIGN.md difference 2, counter seed 11.1): the seed's
// fatal counters under InfiniBandStateCheck, the others under
// InfiniBandDegradationCheck.
func TestCounters_10_4_Step2_RebootBaseline(t *testing.T) {
	fatal := map[string]bool{"link_downed": true, "excessive_buffer_overrun_errors": true, "local_link_integrity_errors": true,
		"rnr_nak_retry_err": true, "symbol_error_fatal": true}
	r := newRig(t)
	r.reboot = true
	for _, d := range countertable.Defaults() {
		d := d
		if d.IsNetdev() {
			continue
		}
		sp := r.one(&d, 0)
		want := fmt.Sprintf("Counter %s healthy after reboot on port mlx5_0 port 1", d.Name)
		check := "InfiniBandDegradationCheck"
		if fatal[d.Name] {
			check = "InfiniBandStateCheck"
		}
		if sp.Message != want || !sp.IsHealthy || sp.IsFatal || sp.Kind != event.KindCounterBaseline ||
			sp.CheckName != check || sp.ErrorCode[0] != d.Name {
			t.Errorf("%s: baseline = %+v", d.Name, sp)
		}
		if ev := event.New(sp, event.Stamp{Now: r.now}); ev.RecommendedAction != event.ActionNone {
			t.Errorf("baseline action %v", ev.RecommendedAction)
		}
		if s := r.st.CounterSnapshots[r.key(&d)]; s.Value != 0 || !s.Timestamp.Equal(t0) {
			t.Errorf("%s: snapshot %+v", d.Name, s)
		}
	}
	// Only the first poll of each key: delta counters judge from the second.
	ld := def("link_downed")
	r.at(time.Second).none(ld, 0)
	if sp := r.at(2*time.Second).one(ld, 1); sp.Kind != event.KindCounterBreach {
		t.Fatalf("want breach, got %+v", sp)
	}
	// Velocity counters wait a full window from the baseline.
	sef := def("symbol_error_fatal")
	r.at(59*time.Minute).none(sef, 10000)
	if sp := r.at(time.Hour).one(sef, 10000); sp.Kind != event.KindCounterBreach {
		t.Fatalf("want breach, got %+v", sp)
	}
	// Ethernet ports' baselines go to the Ethernet check.
	r.ll = topology.LinkLayerEthernet
	r.dev = "mlx5_4"
	if sp := r.one(def("carrier_changes"), 7); sp.CheckName != event.EthernetDegradationCheck {
		t.Errorf("check = %s", sp.CheckName)
	}
}

// TestCounters_DESIGN5_CheckCleared is the check-scoped event the daemon
// emits first after a reboot.
func TestCounters_DESIGN5_CheckCleared(t *testing.T) {
	sp := CheckClearedSpec(event.InfiniBandDegradationCheck)
	want := "InfiniBandDegradationCheck: host rebooted (boot ID changed); all previous conditions of this check are cleared"
	if sp.Message != want || !sp.IsHealthy || sp.Kind != event.KindCheckCleared || sp.Device != "" || sp.Port != 0 {
		t.Fatalf("spec = %+v", sp)
	}
	if ev := event.New(sp, event.Stamp{Now: t0}); len(ev.EntitiesImpacted) != 0 {
		t.Fatalf("entities = %v", ev.EntitiesImpacted)
	}
}

func TestCounters_10_4_Step3a_ResetInMemory(t *testing.T) {
	r := newRig(t)
	ld := def("link_downed")
	r.none(ld, 0)
	r.at(5*time.Second).one(ld, 1)
	r.at(10*time.Second).none(ld, 1)
	sp := r.at(20*time.Second).one(ld, 0)
	want := "Counter link_downed recovered on port mlx5_0 port 1 (counter reset from 1 to 0)"
	if sp.Message != want || !sp.IsHealthy || sp.IsFatal || sp.Kind != event.KindCounterRecovered ||
		sp.CheckName != "InfiniBandStateCheck" || sp.ErrorCode[0] != "link_downed" {
		t.Fatalf("recovery = %+v", sp)
	}
	if _, ok := r.st.BreachFlags[r.key(ld)]; ok {
		t.Fatal("breach flag not cleared")
	}

	// A mid-window reset that only the in-memory last value can see: the
	// hour-long snapshot holds 0, the counter climbed to 50 and was reset
	// to 10, which is still above the snapshot.
	sef := def("symbol_error_fatal")
	r2 := newRig(t)
	r2.none(sef, 0)
	r2.at(10*time.Minute).none(sef, 50)
	_, changed := r2.at(20*time.Minute).poll(sef, 10)
	// DESIGN.md difference 11: the 10 read after the reset happened since
	// the last reading (10 min), where a new window starts from 0.
	if s := r2.st.CounterSnapshots[r2.key(sef)]; s.Value != 0 || !s.Timestamp.Equal(t0.Add(10*time.Minute)) {
		t.Fatalf("snapshot after reset = %+v", s)
	}
	if !changed {
		t.Error("reset must report a change")
	}
	// The new window runs from the last reading before the reset: 140
	// since then by +70 min is 140/hour.
	r2.at(69*time.Minute).none(sef, 140)
	if sp := r2.at(70*time.Minute).one(sef, 140); !strings.Contains(sp.Message, "delta=140, rate=140.00/hour") {
		t.Fatalf("message %q", sp.Message)
	}
}

func TestCounters_10_4_Step3b_ResetFromSnapshotAfterRestart(t *testing.T) {
	r := newRig(t)
	ld := def("link_downed")
	r.none(ld, 4)
	r.at(time.Second).one(ld, 5)
	r.restart() // lastPollValue is gone
	sp := r.at(time.Minute).one(ld, 0)
	if want := "Counter link_downed recovered on port mlx5_0 port 1 (counter reset from 5 to 0)"; sp.Message != want {
		t.Fatalf("message %q", sp.Message)
	}
	// Reset of a counter that was not breached: no event, fresh snapshot.
	r.restart()
	r.at(2*time.Minute).none(ld, 0)
	r.restart()
	if specs, changed := r.at(3*time.Minute).poll(ld, 0); len(specs) != 0 || changed {
		t.Fatalf("specs=%v changed=%v", specs, changed)
	}
}

func TestCounters_10_4_Step4_Latched(t *testing.T) {
	r := newRig(t)
	sym := def("symbol_error")
	r.none(sym, 0)
	r.at(time.Second).one(sym, 100)
	for i := 2; i < 20; i++ {
		specs, changed := r.at(time.Duration(i)*time.Second).poll(sym, uint64(100*i))
		if len(specs) != 0 || changed {
			t.Fatalf("latched counter produced %v changed=%v", specs, changed)
		}
	}
	if !r.breached(sym) {
		t.Fatal("latch lost")
	}
	// Only a reset ends it.
	if sp := r.at(30*time.Second).one(sym, 0); sp.Kind != event.KindCounterRecovered {
		t.Fatalf("%+v", sp)
	}
}

func TestCounters_10_4_Step5_DeltaEveryPoll(t *testing.T) {
	r := newRig(t)
	r.ll = topology.LinkLayerEthernet
	cc := def("carrier_changes")
	r.none(cc, 0)
	for i := 1; i <= 5; i++ { // +2 per poll, threshold is > 2
		r.at(time.Duration(i)*time.Second).none(cc, uint64(2*i))
		if s := r.st.CounterSnapshots[r.key(cc)]; s.Value != uint64(2*i) {
			t.Fatalf("snapshot did not follow the poll: %+v", s)
		}
	}
	sp := r.at(6*time.Second).one(cc, 13)
	if sp.CheckName != event.EthernetDegradationCheck || !strings.Contains(sp.Message, "(value=13, delta=3, rate=3.00/sec)") {
		t.Fatalf("%+v", sp)
	}
	// On an IB port the netdev counter is not judged at all.
	r2 := newRig(t)
	if specs, changed := r2.poll(cc, 0); specs != nil || changed {
		t.Fatal("carrier_changes judged on an IB port")
	}
	if len(r2.st.CounterSnapshots) != 0 {
		t.Fatal("snapshot written for a counter that does not apply")
	}
}

func TestCounters_10_4_Step5_VelocityWindowHeld(t *testing.T) {
	r := newRig(t)
	sym := def("symbol_error")
	r.none(sym, 0)
	for ms := 100; ms < 1000; ms += 100 {
		// 1..9 errors: rising, so no poll takes the counter-reset path.
		r.at(time.Duration(ms)*time.Millisecond).none(sym, uint64(ms/100))
		if s := r.st.CounterSnapshots[r.key(sym)]; s.Value != 0 || !s.Timestamp.Equal(t0) {
			t.Fatalf("snapshot moved inside the window: %+v", s)
		}
	}
	// 1.1 s later: 11 errors over 1.1 s = 10/s, not > 10.
	r.at(1100*time.Millisecond).none(sym, 11)
	if s := r.st.CounterSnapshots[r.key(sym)]; s.Value != 11 || !s.Timestamp.Equal(t0.Add(1100*time.Millisecond)) {
		t.Fatalf("snapshot not advanced after the window: %+v", s)
	}
	if v := r.ev.View(r.st, r.dev, r.port, []countertable.Definition{*sym})[0]; !v.HasRate || v.Rate < 9.999 || v.Rate > 10.001 {
		t.Fatalf("rate after the window = %v (computed: %v), want 10/s: the window was not judged", v.Rate, v.HasRate)
	}
	r.at(2200*time.Millisecond).one(sym, 23)
}

// TestCounters_6_7_NoExtrapolation: a 1 s burst of 1000 symbol errors does
// not fire the 120/hour check until an hour of real time has passed.
func TestCounters_6_7_NoExtrapolation(t *testing.T) {
	r := newRig(t)
	sef := def("symbol_error_fatal")
	r.none(sef, 0)
	r.at(time.Second).none(sef, 1000)
	for s := 10 * time.Second; s < time.Hour; s += 10 * time.Second {
		r.at(s).none(sef, 1000)
	}
	sp := r.at(time.Hour).one(sef, 1000)
	if !sp.IsFatal || !strings.HasSuffix(sp.Message, "(value=1000, delta=1000, rate=1000.00/hour)") {
		t.Fatalf("%+v", sp)
	}
}

// TestCounters_3_2_RestartResumesWindow: the hour-long window started before
// a restart ends at its original start + 1 h.
func TestCounters_3_2_RestartResumesWindow(t *testing.T) {
	r := newRig(t)
	sef := def("symbol_error_fatal")
	r.none(sef, 0)
	r.at(30*time.Minute).none(sef, 200)
	r.restart()
	r.at(31*time.Minute).none(sef, 200)
	r.at(time.Hour-time.Second).none(sef, 200)
	sp := r.at(time.Hour).one(sef, 200)
	if sp.Metadata["elapsed"] != "1h0m0s" || sp.Metadata["rate"] != "200.00" {
		t.Fatalf("metadata %v", sp.Metadata)
	}
}

func TestCounters_10_4_Step8_SaveOnlyOnChange(t *testing.T) {
	r := newRig(t)
	sym, ld := def("symbol_error"), def("link_downed")
	check := func(name string, wantChanged bool, got bool) {
		t.Helper()
		if got != wantChanged {
			t.Errorf("%s: changed = %v, want %v", name, got, wantChanged)
		}
	}
	_, c := r.poll(ld, 0)
	check("first snapshot", true, c)
	_, c = r.at(time.Second).poll(ld, 0)
	check("delta unchanged", false, c)
	if s := r.st.CounterSnapshots[r.key(ld)]; !s.Timestamp.Equal(r.now) {
		t.Error("in-memory delta snapshot timestamp should follow the poll")
	}
	_, c = r.poll(sym, 5)
	check("velocity first snapshot", true, c)
	_, c = r.at(1500*time.Millisecond).poll(sym, 6)
	check("velocity window held", false, c)
	_, c = r.at(2*time.Second).poll(sym, 6)
	check("velocity window done, value moved", true, c)
	_, c = r.at(3*time.Second).poll(sym, 6)
	check("velocity window done, value still", false, c)
	_, c = r.at(4*time.Second).poll(ld, 1)
	check("breach", true, c)
	_, c = r.at(5*time.Second).poll(ld, 1)
	check("latched", false, c)
	_, c = r.at(6*time.Second).poll(ld, 0)
	check("reset", true, c)
	_, c = r.at(7*time.Second).pollErr(ld, sysfs.ErrUnreadable)
	check("unreadable", false, c)
}

// TestCounters_6_4_AdminResetTimeline is the seed's timeline, row by row.
func TestCounters_6_4_AdminResetTimeline(t *testing.T) {
	r := newRig(t)
	ld := def("link_downed")
	r.at(0).none(ld, 0)
	sp := r.at(5*time.Second).one(ld, 1)
	if !sp.IsFatal || sp.IsHealthy || !r.breached(ld) {
		t.Fatalf("T=5s: %+v", sp)
	}
	r.at(10*time.Second).none(ld, 1)
	sp = r.at(20*time.Second).one(ld, 0)
	if !sp.IsHealthy || sp.IsFatal || r.breached(ld) {
		t.Fatalf("T=20s: %+v", sp)
	}
	r.at(25*time.Second).none(ld, 0)
}

// TestCounters_6_4_PodRestartBetweenBreachAndReset: the breach flag survives
// in the state, so the new process still emits the recovery.
func TestCounters_6_4_PodRestartBetweenBreachAndReset(t *testing.T) {
	r := newRig(t)
	ld := def("link_downed")
	r.at(0).none(ld, 0)
	r.at(5*time.Second).one(ld, 1)
	r.at(10*time.Second).none(ld, 1)
	r.restart() // between T=15s (admin reset) and T=20s
	sp := r.at(20*time.Second).one(ld, 0)
	if sp.Kind != event.KindCounterRecovered || sp.CheckName != "InfiniBandStateCheck" {
		t.Fatalf("%+v", sp)
	}
	r.at(25*time.Second).none(ld, 0)
}

// TestCounters_6_5_RebootTimeline: the daemon starts a new boot with an
// empty state; every counter gets one baseline and is then judged afresh.
func TestCounters_6_5_RebootTimeline(t *testing.T) {
	r := newRig(t)
	ld := def("link_downed")
	r.none(ld, 0)
	r.at(time.Second).one(ld, 3)
	// Host reboots: the daemon clears the state for the new boot ID.
	r.st = NewMemory()
	r.restart()
	r.reboot = true
	sp := r.at(time.Hour).one(ld, 0)
	if sp.Kind != event.KindCounterBaseline {
		t.Fatalf("%+v", sp)
	}
	r.at(time.Hour+time.Second).none(ld, 0)
	if sp := r.at(time.Hour+2*time.Second).one(ld, 1); sp.Kind != event.KindCounterBreach {
		t.Fatalf("%+v", sp)
	}
}

func TestCounters_DESIGN_Saturation(t *testing.T) {
	r := newRig(t)
	ld := def("link_downed")
	r.none(ld, 250)
	specs, changed := r.at(time.Second).poll(ld, 255)
	if len(specs) != 2 || !changed {
		t.Fatalf("want breach + saturation, got %+v", specs)
	}
	sat := specs[1]
	want := "Port mlx5_0 port 1: link_downed is saturated at 255 (8-bit counter): visibility lost, it can no longer show new errors; clear the port counters (perfquery -x) to restore detection"
	if sat.Kind != event.KindCounterSaturated || sat.Message != want || sat.IsFatal || sat.IsHealthy ||
		sat.CheckName != event.InfiniBandDegradationCheck || len(sat.ErrorCode) != 1 || sat.ErrorCode[0] != "saturated:link_downed" {
		t.Fatalf("saturation = %+v", sat)
	}
	if specs[0].Metadata["lowerBound"] != "true" || !strings.Contains(specs[0].Message, "delta>=5, rate>=5.00/sec") {
		t.Fatalf("breach at saturation must be a lower bound: %+v", specs[0])
	}
	r.at(2*time.Second).none(ld, 255)
	r.restart()
	r.at(3*time.Second).none(ld, 255) // persisted: not re-announced
	if _, ok := r.st.Saturated["mlx5_0:1:link_downed"]; !ok {
		t.Fatal("saturation not persisted")
	}
	// Reset: the breach recovers and the counter moves again, which clears
	// the loss of visibility with the saturation's own error code.
	specs, _ = r.at(4*time.Second).poll(ld, 0)
	if len(specs) != 2 || specs[0].Kind != event.KindCounterRecovered || specs[1].Kind != event.KindCounterUnsaturated ||
		!specs[1].IsHealthy || specs[1].ErrorCode[0] != "saturated:link_downed" || specs[1].Device != "mlx5_0" || specs[1].Port != 1 {
		t.Fatalf("reset of a saturated, latched counter: %+v", specs)
	}
	if _, ok := r.st.Saturated["mlx5_0:1:link_downed"]; ok {
		t.Fatal("saturation mark not cleared on reset")
	}
	r.at(5*time.Second).none(ld, 0)

	// symbol_error and symbol_error_fatal share one file: one report, even
	// when the file is already saturated at the first reading.
	sym, sef := def("symbol_error"), def("symbol_error_fatal")
	r3 := newRig(t)
	if sp := r3.one(sym, 65535); sp.Kind != event.KindCounterSaturated || !strings.Contains(sp.Message, "symbol_error is saturated at 65535 (16-bit counter)") {
		t.Fatalf("%+v", sp)
	}
	r3.none(sef, 65535)
}

func TestCounters_DESIGN_SaturationLimits(t *testing.T) {
	for _, tc := range []struct {
		path  string
		limit uint64
		bits  int
	}{
		{"counters/symbol_error", 65535, 16}, {"counters/port_rcv_errors", 65535, 16},
		{"counters/port_xmit_discards", 65535, 16}, {"counters/port_rcv_remote_physical_errors", 65535, 16},
		{"counters/port_rcv_switch_relay_errors", 65535, 16}, {"counters/VL15_dropped", 65535, 16},
		{"counters/link_error_recovery", 255, 8}, {"counters/link_downed", 255, 8},
		{"counters/port_xmit_constraint_errors", 255, 8}, {"counters/port_rcv_constraint_errors", 255, 8},
		{"counters/local_link_integrity_errors", 15, 4}, {"counters/excessive_buffer_overrun_errors", 15, 4},
		{"counters/port_xmit_wait", 4294967295, 32},
		{"hw_counters/port_xmit_wait", 0, 0}, {"hw_counters/rnr_nak_retry_err", 0, 0},
		{"counters/port_xmit_data", 0, 0}, {"/sys/class/net/{interface}/carrier_changes", 0, 0},
	} {
		l, b, ok := SaturationLimit(tc.path)
		if l != tc.limit || b != tc.bits || ok != (tc.bits != 0) {
			t.Errorf("%s: %d %d %v", tc.path, l, b, ok)
		}
	}
	// A value above the "limit" means the driver reports a wider counter:
	// not saturated.
	r := newRig(t)
	pxd := def("port_xmit_discards")
	r.none(pxd, 70000)
	if len(r.st.Saturated) != 0 {
		t.Fatal("wider counter reported saturated")
	}
	// hw_counters never saturate.
	r.none(&countertable.Definition{Name: "x", Path: "hw_counters/port_xmit_wait", Enabled: true, ThresholdType: countertable.TypeDelta, Threshold: 1e12}, 4294967295)
	if len(r.st.Saturated) != 0 {
		t.Fatal("hw_counters reported saturated")
	}
}

// TestCounters_5_UnreadableValues: a value that is there but not a number is
// no reading — never 0, never a reset, never an event.
func TestCounters_5_UnreadableValues(t *testing.T) {
	for _, raw := range []string{"N/A (no PMA)\n", "", "\n", "-1\n", "99999999999999999999999\n", "12abc", "0x10"} {
		t.Run(fmt.Sprintf("%q", raw), func(t *testing.T) {
			_, err := sysfs.ParseCounter([]byte(raw))
			if !errors.Is(err, sysfs.ErrUnreadable) {
				t.Fatalf("ParseCounter(%q) = %v", raw, err)
			}
			r := newRig(t)
			ld := def("link_downed")
			r.none(ld, 7)
			r.at(time.Second).one(ld, 8) // latched at 8
			for i := 2; i < 5; i++ {
				if specs, changed := r.at(time.Duration(i)*time.Second).pollErr(ld, err); specs != nil || changed {
					t.Fatalf("unreadable produced %v %v", specs, changed)
				}
			}
			if !r.breached(ld) {
				t.Fatal("an unreadable value cleared the latch")
			}
			r.at(10*time.Second).none(ld, 8) // no reset was seen
			if s := r.st.CounterSnapshots[r.key(ld)]; s.Value != 8 {
				t.Fatalf("snapshot %+v", s)
			}
			// Reboot baseline waits for the first readable value.
			r2 := newRig(t)
			r2.reboot = true
			r2.pollErr(ld, err)
			if len(r2.st.CounterSnapshots) != 0 {
				t.Fatal("unreadable value stored")
			}
			if sp := r2.one(ld, 0); sp.Kind != event.KindCounterBaseline {
				t.Fatalf("%+v", sp)
			}
		})
	}
}

// TestCounters_7_1_MissingSilentUnreadableRateLimited: a missing file is
// silent; an unreadable one is logged once per file per hour.
func TestCounters_7_1_MissingSilentUnreadableRateLimited(t *testing.T) {
	var buf bytes.Buffer
	r := newRig(t)
	r.ev = NewEvaluator(Options{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	sym, sef, ld := def("symbol_error"), def("symbol_error_fatal"), def("link_downed")
	missing := fmt.Errorf("read /h/ports/1/counters/link_downed: %w", fs.ErrNotExist)
	for i := 0; i < 100; i++ {
		r.at(time.Duration(i)*time.Second).pollErr(ld, missing)
	}
	if buf.Len() != 0 {
		t.Fatalf("missing file logged: %s", buf.String())
	}
	na := fmt.Errorf("%w: %q", sysfs.ErrUnreadable, "N/A (no PMA)")
	for i := 0; i < 100; i++ {
		r.at(time.Duration(i)*time.Second).pollErr(sym, na)
		r.pollErr(sef, na) // same file
	}
	if n := strings.Count(buf.String(), "\n"); n != 1 {
		t.Fatalf("want 1 log line per file per hour, got %d:\n%s", n, buf.String())
	}
	for _, s := range []string{"device=mlx5_0", "port=1", "counter=symbol_error", "file=counters/symbol_error", "N/A (no PMA)", "enabled = false"} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("log lacks %q: %s", s, buf.String())
		}
	}
	r.at(time.Hour+time.Second).pollErr(sym, na)
	if n := strings.Count(buf.String(), "\n"); n != 2 {
		t.Fatalf("want a second line after an hour, got %d", n)
	}
}

// TestCounters_Congestion_XmitWait follows xmit-wait-congestion.txt: lost
// bytes = ticks × (tick+1) with tick == 7 on Quantum-class parts.
func TestCounters_Congestion_XmitWait(t *testing.T) {
	for _, tc := range []struct {
		ticks, bpt, port float64
		gbps, pct        float64
	}{
		{192187500, 8, 400, 12.3, 3.075},
		{1e9 / 64, 8, 100, 1, 1},
		{10000, 8, 0, 0.00064, 0},
		{1e6, 32 * 4, 200, 1.024, 0.512},
		{0, 8, 400, 0, 0},
	} {
		g, p := LostBandwidth(tc.ticks, tc.bpt, tc.port)
		if !near(g, tc.gbps) || !near(p, tc.pct) {
			t.Errorf("LostBandwidth(%v,%v,%v) = %v, %v; want %v, %v", tc.ticks, tc.bpt, tc.port, g, p, tc.gbps, tc.pct)
		}
	}
	// A latching velocity row on port_xmit_wait (an operator's override)
	// still says what it lost, in the breach message.
	r := newRig(t)
	r.rate = 400
	xw := def("port_xmit_wait")
	xw.ThresholdType, xw.Threshold, xw.VelocityUnit = countertable.TypeVelocity, 10000, countertable.UnitSecond
	r.none(xw, 1000)
	sp := r.at(time.Second).one(xw, 1000+192187500)
	if !strings.HasSuffix(sp.Message, "(value=192188500, delta=192187500, rate=192187500.00/sec), est. lost bandwidth 12.3 Gb/s (3.1% of 400 Gb/s)") {
		t.Fatalf("message %q", sp.Message)
	}
	if sp.Metadata["lostGbps"] != "12.3" || sp.Metadata["lostPercent"] != "3.1" {
		t.Fatalf("metadata %v", sp.Metadata)
	}
	// Unknown port rate; a Switch-IB-style 32 bytes per tick.
	r2 := newRig(t)
	r2.ev = NewEvaluator(Options{XmitWaitBytesPerTick: 32})
	r2.none(xw, 0)
	sp = r2.at(2*time.Second).one(xw, 2*31250000) // 31.25 M ticks/s × 32 B × 8 = 8 Gb/s
	if !strings.HasSuffix(sp.Message, ", est. lost bandwidth 8.0 Gb/s (port rate unknown)") {
		t.Fatalf("message %q", sp.Message)
	}
	if _, ok := sp.Metadata["lostPercent"]; ok {
		t.Error("lostPercent without a port rate")
	}
}

// TestCounters_DESIGN_14_CongestionIsAnObservation: port_xmit_wait's lost
// bandwidth is recomputed every tick and shown live; above 10% of the
// port rate over a minute it raises a non-fatal congestion condition, which
// is not a latch: the figures keep moving, and it clears once a whole
// window is below half of the threshold (hysteresis).
func TestCounters_DESIGN_14_CongestionIsAnObservation(t *testing.T) {
	r := newRig(t)
	r.rate = 10 // Gb/s: a minute of congestion stays below the 32-bit limit
	xw := def("port_xmit_wait")
	if xw.ThresholdType != countertable.TypeCongestion || xw.Threshold != 10 || xw.Window() != time.Minute {
		t.Fatalf("default row %+v, want congestion above 10%% over a minute", xw)
	}
	const perPct = 1e9 / 64 / 10 // ticks/s for 1% of 10 Gb/s at 8 bytes a tick
	v := uint64(0)
	sec := 0
	view := func() CounterView {
		return r.ev.View(r.st, "mlx5_0", 1, []countertable.Definition{*xw})[0]
	}
	// run advances whole seconds at pct% lost and returns the events.
	run := func(seconds int, pct float64) []event.Spec {
		t.Helper()
		var out []event.Spec
		for i := 0; i < seconds; i++ {
			sec++
			v += uint64(pct * perPct)
			specs, _ := r.at(time.Duration(sec)*time.Second).poll(xw, v)
			out = append(out, specs...)
			if got := view().LostPercent; r.rate > 0 && !near2(got, pct) {
				t.Fatalf("second %d: live lost share %.3f%%, want %.1f%%", sec, got, pct)
			}
		}
		return out
	}
	r.none(xw, v)
	if ss := run(59, 20); len(ss) != 0 {
		t.Fatalf("raised before the window was full: %+v", ss)
	}
	ss := run(1, 20)
	if len(ss) != 1 || ss[0].Kind != event.KindCongestion || ss[0].IsFatal || ss[0].IsHealthy || ss[0].ErrorCode[0] != "congestion" ||
		!strings.Contains(ss[0].Message, "lost an estimated 2.0 Gb/s (20.0% of 10 Gb/s)") || ss[0].Action != nil {
		t.Fatalf("congestion raise: %+v", ss)
	}
	if r.breached(xw) || !view().Congested {
		t.Fatalf("congestion is not a latch: breached %v, view %+v", r.breached(xw), view())
	}
	// Raised: the lost bandwidth keeps moving, tick by tick.
	if ss := run(30, 35); len(ss) != 0 {
		t.Fatalf("re-raised: %+v", ss)
	}
	if g := view().LostGbps; !near2(g, 3.5) {
		t.Fatalf("live lost Gb/s %v after the raise, want 3.5", g)
	}
	// Between half the threshold and the threshold: still congested.
	if ss := run(90, 6); len(ss) != 0 {
		t.Fatalf("cleared above half the threshold: %+v", ss)
	}
	ss = run(60, 4)
	if len(ss) != 1 || ss[0].Kind != event.KindCongestionCleared || !ss[0].IsHealthy || ss[0].ErrorCode[0] != "congestion" ||
		ss[0].CheckName != event.InfiniBandDegradationCheck {
		t.Fatalf("congestion clear: %+v", ss)
	}
	if view().Congested {
		t.Fatal("still congested after the clear")
	}
	// Unknown port rate: no share, no condition.
	r.rate = 0
	if ss := run(120, 50); len(ss) != 0 {
		t.Fatalf("judged without a port rate: %+v", ss)
	}
}

func near2(a, b float64) bool { d := a - b; return d < 0.01 && d > -0.01 }

func near(a, b float64) bool { d := a - b; return d < 1e-9 && d > -1e-9 }

// TestCounters_ClockSteppedBack: a wall clock stepped behind a held snapshot
// restarts the window instead of freezing it.
func TestCounters_ClockSteppedBack(t *testing.T) {
	r := newRig(t)
	sef := def("symbol_error_fatal")
	r.at(time.Hour).none(sef, 0)
	r.at(0).none(sef, 10)
	if s := r.st.CounterSnapshots[r.key(sef)]; !s.Timestamp.Equal(t0) || s.Value != 10 {
		t.Fatalf("snapshot %+v", s)
	}
	r.at(time.Hour).one(sef, 200)
}

func TestCounters_NilAndDisabled(t *testing.T) {
	ev := NewEvaluator(Options{})
	st := NewMemory()
	if specs, ch := ev.Evaluate(st, Sample{Device: "d", Port: 1, Now: t0}, false); specs != nil || ch {
		t.Fatal("nil definition judged")
	}
	d := *def("link_downed")
	if specs, ch := ev.Evaluate(nil, Sample{Device: "d", Port: 1, Def: &d, Now: t0}, false); specs != nil || ch {
		t.Fatal("nil state judged")
	}
	d.Enabled = false
	if specs, ch := ev.Evaluate(st, Sample{Device: "d", Port: 1, Def: &d, Now: t0}, false); specs != nil || ch {
		t.Fatal("disabled definition judged")
	}
	// A state decoded from a file with missing maps still works.
	d.Enabled = true
	if _, ch := ev.Evaluate(&Memory{}, Sample{Device: "d", Port: 1, Def: &d, Now: t0}, false); !ch {
		t.Fatal("state without maps not initialised")
	}
}

// TestCounters_6_2_ResetIsJudgedAsTheDelta: after a reset the value read
// is what happened since (DESIGN.md difference 11, seed 6.2 over 10.4 step
// 3): the recovery of a latched breach, then that value judged as the
// delta, so link-downs between an admin's reset and the next poll are not
// absorbed.
func TestCounters_6_2_ResetIsJudgedAsTheDelta(t *testing.T) {
	ld := def("link_downed")
	r := newRig(t)
	r.none(ld, 0)
	r.at(time.Second).one(ld, 1)
	r.at(2*time.Second).none(ld, 5) // latched: more link-downs say nothing
	specs, _ := r.at(3*time.Second).poll(ld, 2)
	if len(specs) != 2 || specs[0].Kind != event.KindCounterRecovered || specs[1].Kind != event.KindCounterBreach ||
		specs[1].Metadata["delta"] != "2" || !specs[1].IsFatal {
		t.Fatalf("link_downed 5 -> 2 on a latched port: %+v", specs)
	}
	if !r.breached(ld) {
		t.Fatal("the link-downs after the reset are not latched")
	}
	// Not latched (acknowledged): the reset's value is still a breach.
	if _, err := r.ev.Acknowledge(r.st, "mlx5_0", 1, "link_downed", t0.Add(4*time.Second), "uid 0"); err != nil {
		t.Fatal(err)
	}
	if sp := r.at(5*time.Second).one(ld, 1); sp.Kind != event.KindCounterBreach || sp.Metadata["delta"] != "1" {
		t.Fatalf("reset 2 -> 1 after an acknowledgement: %+v", sp)
	}
	// A reset to 0 is no breach: recovery only.
	if sp := r.at(6*time.Second).one(ld, 0); sp.Kind != event.KindCounterRecovered {
		t.Fatalf("reset to 0: %+v", sp)
	}
	// A velocity counter: 15 symbol errors read in the tick after a reset
	// from 100 are 15/s.
	sym := def("symbol_error")
	r2 := newRig(t)
	r2.none(sym, 90)
	r2.at(time.Second).none(sym, 100)
	if sp := r2.at(2*time.Second).one(sym, 15); sp.Kind != event.KindCounterBreach || !strings.Contains(sp.Message, "delta=15, rate=15.00/sec") {
		t.Fatalf("symbol_error 100 -> 15: %+v", sp)
	}
}

// TestCounters_6_2_DeviceBackIsAFreshBaseline: a device that disappeared
// and came back (driver reload, hot plug) starts from a fresh baseline:
// its link went down with the reload, which is not a fault; a latch ends
// if its counters restarted (DESIGN.md difference 11).
func TestCounters_6_2_DeviceBackIsAFreshBaseline(t *testing.T) {
	ld := def("link_downed")
	r := newRig(t)
	r.none(ld, 0)
	r.at(time.Second).one(ld, 1)
	r.ev.Rebaseline("mlx5_0")
	if sp := r.at(2*time.Second).one(ld, 0); sp.Kind != event.KindCounterRecovered {
		t.Fatalf("latched counter restarted by a reload: %+v", sp)
	}
	r.at(3*time.Second).none(ld, 0)
	r.ev.Rebaseline("mlx5_0")
	r.at(4*time.Second).none(ld, 1) // the reload's own link-down: a baseline
	r.at(5*time.Second).one(ld, 2)  // then judged as usual
}
