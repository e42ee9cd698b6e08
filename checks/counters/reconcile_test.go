package counters

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/config/countertable"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology"
)

// latchedRig has link_downed latched and port_rcv_errors latched on mlx5_0
// port 1, and symbol_error_fatal half-way through its hour.
func latchedRig(t *testing.T) *rig {
	r := newRig(t)
	r.ev.Reconcile(r.st, countertable.Defaults())
	for _, n := range []string{"link_downed", "port_rcv_errors", "symbol_error_fatal"} {
		r.at(0).none(def(n), 0)
	}
	r.at(time.Second).one(def("link_downed"), 1)
	r.at(time.Second).one(def("port_rcv_errors"), 50000)
	r.at(30*time.Minute).none(def("symbol_error_fatal"), 60)
	return r
}

func TestCounters_6_Reload_Disabled(t *testing.T) {
	r := latchedRig(t)
	defs, err := countertable.Merge(countertable.Defaults(), []countertable.Override{{Name: new("port_rcv_errors"), Enabled: new(false)}})
	if err != nil {
		t.Fatal(err)
	}
	specs := r.ev.Reconcile(r.st, defs)
	if len(specs) != 1 {
		t.Fatalf("specs = %+v", specs)
	}
	want := "Counter port_rcv_errors on port mlx5_0 port 1 no longer monitored (disabled by configuration); breach cleared"
	if s := specs[0]; s.Message != want || !s.IsHealthy || s.Kind != event.KindCounterRecovered ||
		s.CheckName != event.InfiniBandDegradationCheck || s.Device != "mlx5_0" || s.Port != 1 {
		t.Fatalf("spec = %+v", s)
	}
	xw := Key("mlx5_0", 1, "port_rcv_errors")
	if _, ok := r.st.BreachFlags[xw]; ok {
		t.Error("flag kept")
	}
	if _, ok := r.st.CounterSnapshots[xw]; ok {
		t.Error("snapshot kept")
	}
	// Unchanged counters keep latch and window.
	if !r.breached(def("link_downed")) {
		t.Error("link_downed latch lost")
	}
	if s := r.st.CounterSnapshots[Key("mlx5_0", 1, "symbol_error_fatal")]; !s.Timestamp.Equal(t0) {
		t.Errorf("symbol_error_fatal window restarted: %+v", s)
	}
	r.at(time.Hour).one(def("symbol_error_fatal"), 200)
	// Removed entirely (a custom counter dropped from the file).
	r2 := latchedRig(t)
	var without []countertable.Definition
	for _, d := range countertable.Defaults() {
		if d.Name != "link_downed" {
			without = append(without, d)
		}
	}
	specs = r2.ev.Reconcile(r2.st, without)
	if len(specs) != 1 || !strings.Contains(specs[0].Message, "(removed from configuration)") {
		t.Fatalf("specs = %+v", specs)
	}
	// Reconciling again changes nothing.
	if specs := r2.ev.Reconcile(r2.st, without); len(specs) != 0 {
		t.Fatalf("second reconcile: %+v", specs)
	}
}

func TestCounters_6_Reload_ThresholdChangedKeepsWindowAndLatch(t *testing.T) {
	r := latchedRig(t)
	defs, err := countertable.Merge(countertable.Defaults(), []countertable.Override{
		{Name: new("symbol_error_fatal"), Threshold: new(float64(50))},
		{Name: new("link_downed"), IsFatal: new(false)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if specs := r.ev.Reconcile(r.st, defs); len(specs) != 0 {
		t.Fatalf("specs = %+v", specs)
	}
	if !r.breached(def("link_downed")) {
		t.Fatal("latch must survive a changed definition")
	}
	if f := r.st.BreachFlags[Key("mlx5_0", 1, "link_downed")]; !f.IsFatal {
		t.Fatal("the flag records the breach as it was reported")
	}
	sef := find(defs, "symbol_error_fatal")
	r.at(59*time.Minute).none(sef, 60)
	sp := r.at(time.Hour).one(sef, 60) // 60/hour > new threshold 50, window from t0
	if sp.Metadata["elapsed"] != "1h0m0s" || sp.Metadata["threshold"] != "50" {
		t.Fatalf("%v", sp.Metadata)
	}
}

func TestCounters_6_Reload_TypeOrPathChangedRestartsSnapshot(t *testing.T) {
	r := latchedRig(t)
	defs, err := countertable.Merge(countertable.Defaults(), []countertable.Override{
		{Name: new("symbol_error_fatal"), ThresholdType: new("delta"), Threshold: new(float64(50))},
	})
	if err != nil {
		t.Fatal(err)
	}
	r.ev.Reconcile(r.st, defs)
	k := Key("mlx5_0", 1, "symbol_error_fatal")
	if _, ok := r.st.CounterSnapshots[k]; ok {
		t.Fatal("snapshot of a re-typed counter kept")
	}
	sef := find(defs, "symbol_error_fatal")
	// 60 accumulated under the hourly window must not count as one delta.
	r.at(31*time.Minute).none(sef, 100)
	r.at(32*time.Minute).none(sef, 150) // +50, not > 50
	r.at(33*time.Minute).one(sef, 201)

	// Path change, seen only in memory (no Reconcile): a fresh snapshot.
	r2 := newRig(t)
	d := *def("port_rcv_errors")
	r2.none(&d, 1000)
	d.Path = "counters/port_rcv_remote_physical_errors"
	if specs, _ := r2.at(time.Second).poll(&d, 0); len(specs) != 0 {
		t.Fatalf("path change treated as reset/breach: %+v", specs)
	}
	if s := r2.st.CounterSnapshots[r2.key(&d)]; s.Value != 0 {
		t.Fatalf("snapshot %+v", s)
	}
	// Type change, seen only in memory.
	r3 := newRig(t)
	v := *def("symbol_error_fatal")
	r3.none(&v, 0)
	r3.at(time.Minute).none(&v, 500)
	v.ThresholdType, v.Threshold, v.VelocityUnit = countertable.TypeDelta, 100, ""
	r3.at(2*time.Minute).none(&v, 600)
	r3.at(3*time.Minute).one(&v, 701)
}

func TestCounters_6_Reload_NoRepeatedRebootBaseline(t *testing.T) {
	r := newRig(t)
	r.reboot = true
	ld := def("link_downed")
	r.one(ld, 0)
	defs, _ := countertable.Merge(countertable.Defaults(), []countertable.Override{{Name: new("link_downed"), Enabled: new(false)}})
	r.ev.Reconcile(r.st, defs)
	r.ev.Reconcile(r.st, countertable.Defaults())
	r.at(time.Second).none(ld, 0)
}

func TestCounters_DBus_Acknowledge(t *testing.T) {
	r := latchedRig(t)
	r.at(2*time.Second).none(def("link_downed"), 2) // one more since the latch
	specs, err := r.ev.Acknowledge(r.st, "mlx5_0", 1, "link_downed", t0.Add(time.Minute), "uid 0")
	if err != nil {
		t.Fatal(err)
	}
	want := "Counter link_downed recovered on port mlx5_0 port 1 (breach acknowledged by uid 0)"
	if len(specs) != 1 || specs[0].Message != want || !specs[0].IsHealthy || specs[0].Kind != event.KindCounterRecovered ||
		specs[0].Metadata["acknowledgedBy"] != "uid 0" {
		t.Fatalf("specs = %+v", specs)
	}
	ld := def("link_downed")
	if r.breached(ld) {
		t.Fatal("latch kept")
	}
	if s := r.st.CounterSnapshots[r.key(ld)]; s.Value != 2 || !s.Timestamp.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("re-baseline %+v, want the last reading at the tick it was taken", s)
	}
	r.at(time.Minute+time.Second).none(ld, 2)
	r.at(time.Minute+2*time.Second).one(ld, 3) // new errors count again

	if _, err := r.ev.Acknowledge(r.st, "mlx5_0", 1, "symbol_error_fatal", t0, "uid 0"); !errors.Is(err, ErrNotLatched) {
		t.Errorf("not latched: %v", err)
	}
	if _, err := r.ev.Acknowledge(r.st, "mlx5_0", 1, "nonexistent", t0, "uid 0"); !errors.Is(err, ErrNoSuchCounter) {
		t.Errorf("unknown: %v", err)
	}
	if _, err := r.ev.Acknowledge(r.st, "mlx5_9", 1, "link_downed", t0, "uid 0"); !errors.Is(err, ErrNoSuchCounter) {
		t.Errorf("unknown port: %v", err)
	}
	// Empty counter: every latched counter of the port, in key order.
	specs, err = r.ev.Acknowledge(r.st, "mlx5_0", 1, "", t0.Add(2*time.Minute), "uid 1000")
	if err != nil || len(specs) != 2 || specs[0].ErrorCode[0] != "link_downed" || specs[1].ErrorCode[0] != "port_rcv_errors" {
		t.Fatalf("ack all: %+v %v", specs, err)
	}
	if _, err := r.ev.Acknowledge(r.st, "mlx5_0", 1, "", t0, "uid 0"); !errors.Is(err, ErrNotLatched) {
		t.Errorf("nothing latched: %v", err)
	}
	// After a restart the snapshot value is the baseline.
	r2 := latchedRig(t)
	r2.restart()
	if _, err := r2.ev.Acknowledge(r2.st, "mlx5_0", 1, "link_downed", t0.Add(time.Hour), "uid 0"); err != nil {
		t.Fatal(err)
	}
	if s := r2.st.CounterSnapshots[Key("mlx5_0", 1, "link_downed")]; s.Value != 1 {
		t.Fatalf("%+v", s)
	}
}

func TestCounters_DBus_View(t *testing.T) {
	r := latchedRig(t)
	r.rate = 400
	r.at(2*time.Second).none(def("port_rcv_errors"), 60000)
	plan := PlanFor(countertable.Defaults())
	views := r.ev.View(r.st, "mlx5_0", 1, plan)
	if len(views) != len(plan) {
		t.Fatalf("%d views", len(views))
	}
	by := map[string]CounterView{}
	for _, v := range views {
		by[v.Name] = v
	}
	ld := by["link_downed"]
	if !ld.Breached || !ld.BreachedSince.Equal(t0.Add(time.Second)) || !ld.HasValue || ld.Value != 1 || !ld.Fatal ||
		ld.ThresholdType != countertable.TypeDelta || ld.RateUnit != "/sec" || !ld.HasRate || ld.Rate != 1 {
		t.Errorf("link_downed view %+v", ld)
	}
	// Latched at 50000/sec; the next tick read 10000 more: the rate is
	// live, the latch says what it latched at.
	pr := by["port_rcv_errors"]
	if !pr.Breached || pr.Rate != 10000 || pr.LostGbps != 0 ||
		pr.Latched != "Port mlx5_0 port 1: port_rcv_errors - Malformed packets received: latched since 2025-06-15T10:00:01Z (at the breach: value=50000, delta=50000, rate=50000.00/sec)" {
		t.Errorf("port_rcv_errors view %+v (live rate; latched at the breach's)", pr)
	}
	sef := by["symbol_error_fatal"]
	if sef.HasRate || sef.Value != 60 || sef.RateUnit != "/hour" || sef.Window != time.Hour || sef.Breached {
		t.Errorf("symbol_error_fatal view %+v", sef)
	}
	if v := by["roce_slow_restart"]; v.HasValue || v.HasRate {
		t.Errorf("never read counter %+v", v)
	}
	// Saturation shows; after a restart the value comes from the snapshot.
	r.at(3*time.Second).none(def("link_error_recovery"), 0)
	r.at(4*time.Second).poll(def("link_error_recovery"), 255)
	r.restart()
	views = r.ev.View(r.st, "mlx5_0", 1, plan)
	for _, v := range views {
		if v.Name == "link_error_recovery" && (!v.Saturated || v.Value != 0) {
			t.Errorf("after restart %+v", v)
		}
	}
	// Rate of a congestion counter with a known port rate.
	r2 := newRig(t)
	r2.rate = 400
	xwd := def("port_xmit_wait")
	r2.none(xwd, 0)
	r2.at(time.Second).none(xwd, 5000)
	v := r2.ev.View(r2.st, "mlx5_0", 1, []countertable.Definition{*xwd})[0]
	if v.Rate != 5000 || !near(v.LostGbps, 5000*64/1e9) || !near(v.LostPercent, 5000*64/1e9/400*100) {
		t.Errorf("%+v", v)
	}
}

// TestCounters_ConcurrentUse: the Evaluator's own memory is safe to use from
// the poll loop and the D-Bus handlers at once (each with its state under
// the caller's lock; here, two states). Run with -race.
func TestCounters_ConcurrentUse(t *testing.T) {
	ev := NewEvaluator(Options{})
	stA, stB := newRig(t).st, newRig(t).st
	plan := PlanFor(countertable.Defaults())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 200; i++ {
			for j := range plan {
				ev.Evaluate(stA, Sample{Device: "mlx5_0", Port: 1, LinkLayer: topology.LinkLayerEthernet,
					Def: &plan[j], Value: uint64(i), Now: t0.Add(time.Duration(i) * time.Second)}, false)
			}
		}
	}()
	for i := 0; i < 200; i++ {
		ev.View(stB, "mlx5_0", 1, plan)
		ev.Acknowledge(stB, "mlx5_0", 1, "", t0, "uid 0")
		if i%50 == 0 {
			ev.Reconcile(stB, countertable.Defaults())
		}
	}
	<-done
}

// find returns the definition called name, or nil.
func find(defs []countertable.Definition, name string) *countertable.Definition {
	if i := slices.IndexFunc(defs, func(d countertable.Definition) bool { return d.Name == name }); i >= 0 {
		return &defs[i]
	}
	return nil
}
