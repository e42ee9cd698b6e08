package counters

import (
	"testing"
	"time"

	"github.com/nichealth/nichealthd/config/countertable"
	"github.com/nichealth/nichealthd/event"
)

func viewOf(t *testing.T, r *rig, name string) CounterView {
	t.Helper()
	for _, v := range r.ev.View(r.st, r.dev, r.port, PlanFor(countertable.Defaults())) {
		if v.Name == name {
			return v
		}
	}
	t.Fatalf("no view of %s", name)
	return CounterView{}
}

// Issue 31 row 6: a burst of 5000 symbol errors latches symbol_error at
// 5000/sec; a minute later the views said 5000/sec still. The rate is
// live whatever the latch: the next quiet tick is 0/sec, a later burst
// shows its own rate (and emits nothing: the latch holds), and what
// latched (value and rate at the breach, and when) is the latch's own
// message.
func TestCounters_Issue31_6_LatchedVelocityRateIsLive(t *testing.T) {
	r := newRig(t)
	se := def("symbol_error")
	r.none(se, 0)
	b := r.at(time.Second).one(se, 5000)
	if b.Kind != event.KindCounterBreach || b.Metadata["reading"] != "value=5000, delta=5000, rate=5000.00/sec" {
		t.Fatalf("breach %+v", b)
	}
	if v := viewOf(t, r, "symbol_error"); v.Rate != 5000 || !v.Breached {
		t.Fatalf("at the breach: %+v", v)
	}
	for s := 2; s <= 73; s++ {
		r.at(time.Duration(s)*time.Second).none(se, 5000)
	}
	v := viewOf(t, r, "symbol_error")
	if !v.HasRate || v.Rate != 0 || !v.Breached {
		t.Fatalf("73 s after the burst: rate %v (has %v), breached %v; want a live 0/sec, still latched", v.Rate, v.HasRate, v.Breached)
	}
	if want := "Port mlx5_0 port 1: symbol_error - PHY bit errors before FEC - physical layer degradation: latched since 2025-06-15T10:00:01Z (at the breach: value=5000, delta=5000, rate=5000.00/sec)"; v.Latched != want {
		t.Fatalf("latched message %q, want %q", v.Latched, want)
	}
	r.at(74*time.Second).none(se, 5030) // latched: no event
	if v := viewOf(t, r, "symbol_error"); v.Rate != 30 {
		t.Fatalf("a second burst while latched shows %v/sec, want 30", v.Rate)
	}
	if _, err := r.ev.Acknowledge(r.st, "mlx5_0", 1, "symbol_error", t0.Add(75*time.Second), "uid 0"); err != nil {
		t.Fatal(err)
	}
	if v := viewOf(t, r, "symbol_error"); v.Breached || v.Latched != "" {
		t.Fatalf("after the acknowledgement %+v", v)
	}
}

// A latched minute counter's rate is measured over full minutes, as an
// unlatched one's is: the breach's rate until a minute of its own has
// passed, never extrapolated from part of one.
func TestCounters_Issue31_6_LatchedMinuteRateOverFullWindows(t *testing.T) {
	r := newRig(t)
	ler := def("link_error_recovery")
	r.none(ler, 0)
	r.at(time.Minute).one(ler, 12)
	r.at(90*time.Second).none(ler, 13)
	if v := viewOf(t, r, "link_error_recovery"); v.Rate != 12 {
		t.Fatalf("half a minute after the breach: %v/min, want the breach's 12 (no window of its own yet)", v.Rate)
	}
	r.at(2*time.Minute).none(ler, 14)
	if v := viewOf(t, r, "link_error_recovery"); v.Rate != 2 || v.RateUnit != "/min" {
		t.Fatalf("a minute after the breach: %v%s, want 2/min", v.Rate, v.RateUnit)
	}
}

// A latched delta counter (link_downed) that does not move is skipped by
// the check (Quiet): its rate over the last tick is 0, not the step's.
// Moving again while latched, it shows the new step's rate and emits
// nothing.
func TestCounters_Issue31_6_LatchedDeltaRateIsLive(t *testing.T) {
	r := newRig(t)
	ld := def("link_downed")
	r.none(ld, 0)
	r.at(time.Second).one(ld, 1)
	if v := viewOf(t, r, "link_downed"); v.Rate != 1 {
		t.Fatalf("at the breach %v/sec", v.Rate)
	}
	before := r.ev.RateChanges()
	r.ev.Quiet("mlx5_0", 1, "link_downed")
	if v := viewOf(t, r, "link_downed"); v.Rate != 0 || !v.HasRate || r.ev.RateChanges() == before {
		t.Fatalf("a quiet tick: %+v, rate changes %d→%d", v, before, r.ev.RateChanges())
	}
	r.at(3*time.Second).none(ld, 5)
	if v := viewOf(t, r, "link_downed"); v.Rate != 2 || !v.Breached {
		t.Fatalf("4 more link-downs over 2 s while latched: %+v", v)
	}
	if want := "Port mlx5_0 port 1: link_downed - Port Training State Machine failed - QP disconnect: latched since 2025-06-15T10:00:01Z (at the breach: value=1, delta=1, rate=1.00/sec)"; viewOf(t, r, "link_downed").Latched != want {
		t.Fatalf("latched message %q", viewOf(t, r, "link_downed").Latched)
	}
}

// What latched survives a restart (it is the latch's, in the state file)
// and a replay of the breach event onto a state that missed it.
func TestCounters_Issue31_6_LatchedReadingSurvivesRestartAndReplay(t *testing.T) {
	r := newRig(t)
	se := def("symbol_error")
	r.none(se, 0)
	b := r.at(time.Second).one(se, 5000)
	r.restart()
	if v := viewOf(t, r, "symbol_error"); v.Latched == "" || v.HasRate {
		t.Fatalf("after a restart %+v: want the latch's message and no rate until one is measured", v)
	}
	m := NewMemory()
	e := event.New(b, event.Stamp{NodeName: "n", Now: t0.Add(time.Second)})
	m.Replay(&e, countertable.Defaults())
	if fl := m.BreachFlags[Key("mlx5_0", 1, "symbol_error")]; fl.Reading != "value=5000, delta=5000, rate=5000.00/sec" {
		t.Fatalf("replayed flag %+v", fl)
	}
}

// A latch's reading from a hand-edited state file that no evaluator wrote
// (too long, control characters) costs the reading, never the latch.
func TestCounters_Issue31_6_BadReadingDropped(t *testing.T) {
	m := NewMemory()
	k := Key("mlx5_0", 1, "link_downed")
	m.BreachFlags[k] = BreachFlag{Breached: true, IsFatal: true, Since: t0, Reading: "value=1\x1b[2J"}
	m.BreachFlags[Key("mlx5_0", 1, "symbol_error")] = BreachFlag{Breached: true, Since: t0, Reading: "value=5000, delta=5000, rate=5000.00/sec"}
	dropped := m.Validate()
	if len(dropped) != 1 || m.BreachFlags[k].Reading != "" || !m.BreachFlags[k].Breached ||
		m.BreachFlags[Key("mlx5_0", 1, "symbol_error")].Reading == "" {
		t.Fatalf("dropped %v, flags %+v", dropped, m.BreachFlags)
	}
}
