package counters

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/config/countertable"

	"github.com/nichealth/nichealthd/event"
)

// crashRig saves the memory the way the daemon does (encoded, and written
// only when the bytes changed, after a reading that changed it) and
// crashes by decoding the last write into a new Evaluator: whatever was
// only in memory is lost, as after SIGKILL.
type crashRig struct {
	*rig
	disk   []byte
	writes int
}

func newCrashRig(t *testing.T) *crashRig {
	return &crashRig{rig: newRig(t)}
}

func (r *crashRig) read(d *countertable.Definition, v uint64) int {
	r.t.Helper()
	specs, changed := r.poll(d, v)
	if changed || len(specs) > 0 {
		r.save()
	}
	return len(specs)
}

// save writes the memory when its encoding changed, as SaveIfChanged does.
func (r *crashRig) save() {
	r.t.Helper()
	b, err := json.Marshal(r.st)
	if err != nil {
		r.t.Fatal(err)
	}
	if !bytes.Equal(b, r.disk) {
		r.disk = b
		r.writes++
	}
}

func (r *crashRig) crash() {
	r.t.Helper()
	m := NewMemory()
	if r.disk != nil {
		if err := json.Unmarshal(r.disk, m); err != nil {
			r.t.Fatal(err)
		}
	}
	if dropped := m.Validate(); len(dropped) > 0 {
		r.t.Fatalf("saved memory has invalid entries: %v", dropped)
	}
	r.st = m
	r.restart()
}

// readEvery reads v every step after the rig's clock, up to until, and
// fails on any event.
func (r *crashRig) readEvery(d *countertable.Definition, v uint64, step, until time.Duration) {
	r.t.Helper()
	for at := r.now.Sub(t0) + step; at <= until; at += step {
		r.at(at)
		if n := r.read(d, v); n != 0 {
			r.t.Fatalf("%s=%d at %v: unexpected event", d.Name, v, at)
		}
	}
}

// Seed 10.4 step 5 and 6.7 across a SIGKILL: link_error_recovery quiet
// since t0, 6 errors at t0+185 s, SIGKILL at t0+195 s. The window in
// progress started at t0+180 s; after the restart it is still judged over
// one minute (6/min > 5/min), not over the 3 min 16 s since the file was
// first written (1.84/min).
func TestCounters_10_4_MinuteWindowSurvivesSIGKILL(t *testing.T) {
	r := newCrashRig(t)
	ler := def("link_error_recovery")
	r.read(ler, 0)
	r.readEvery(ler, 0, time.Second, 184*time.Second)
	r.readEvery(ler, 6, time.Second, 195*time.Second)
	r.crash()
	r.readEvery(ler, 6, time.Second, 239*time.Second)
	sp := r.at(240*time.Second).one(ler, 6)
	if sp.Metadata["elapsed"] != "1m0s" || sp.Metadata["rate"] != "6.00" || sp.Metadata["threshold"] != "5" {
		t.Fatalf("breach after restart judged over %s at rate %s, want 1m0s and 6.00: %v",
			sp.Metadata["elapsed"], sp.Metadata["rate"], sp.Metadata)
	}
}

// The same for the hour: symbol_error_fatal quiet for 5 hours, 200 errors
// at 5h10m, SIGKILL at 5h20m. The restored window is the sixth hour, and
// 200/h > 120/h still latches the fatal breach at 6h.
func TestCounters_10_4_HourWindowSurvivesSIGKILL(t *testing.T) {
	r := newCrashRig(t)
	sef := def("symbol_error_fatal")
	r.read(sef, 0)
	r.readEvery(sef, 0, time.Minute, 5*time.Hour+9*time.Minute)
	r.readEvery(sef, 200, time.Minute, 5*time.Hour+20*time.Minute)
	r.crash()
	r.readEvery(sef, 200, time.Minute, 6*time.Hour-time.Minute)
	sp := r.at(6*time.Hour).one(sef, 200)
	if !sp.IsFatal || sp.Metadata["elapsed"] != "1h0m0s" || sp.Metadata["rate"] != "200.00" || sp.Metadata["threshold"] != "120" {
		t.Fatalf("fatal=%v elapsed=%s rate=%s, want a fatal breach over 1h0m0s at 200.00: %v",
			sp.IsFatal, sp.Metadata["elapsed"], sp.Metadata["rate"], sp.Metadata)
	}
}

// The price of crash-proof minute windows: one state write per rollover
// with the default table on a quiet port, never one per reading. Counted
// over an hour of 1 s ticks for every default counter of one IB port.
func TestCounters_10_4_Step8_QuietWritesPerHour(t *testing.T) {
	r := newCrashRig(t)
	defs := countertable.Defaults()
	for tick := 0; tick <= 3600; tick++ {
		r.at(time.Duration(tick) * time.Second)
		changed := false
		for i := range defs {
			if defs[i].AppliesTo(r.ll) {
				_, ch := r.poll(&defs[i], 7)
				changed = changed || ch
			}
		}
		if changed { // the daemon saves once per cycle
			r.save()
		}
	}
	t.Logf("state writes in one quiet hour: %d", r.writes)
	if r.writes > 62 {
		t.Fatalf("%d state writes in a quiet hour, want at most one per minute (+ the first)", r.writes)
	}
}

// A 1 s window restored after a crash is restarted, not judged over the
// time since the file was last written (which would dilute a burst) nor
// over one second (which would compress minutes of unwatched errors).
func TestCounters_6_7_ShortWindowRestartedAfterSIGKILL(t *testing.T) {
	r := newCrashRig(t)
	sym := def("symbol_error")
	r.read(sym, 100)
	r.readEvery(sym, 100, time.Second, 400*time.Second)
	r.at(400*time.Second + 500*time.Millisecond)
	r.crash()
	r.at(402*time.Second).none(sym, 150)
	if s := r.st.CounterSnapshots[r.key(sym)]; s.Value != 150 || !s.Timestamp.Equal(r.now) {
		t.Fatalf("restored 1 s window not restarted: %+v", s)
	}
	sp := r.at(403*time.Second).one(sym, 170)
	if sp.Metadata["elapsed"] != "1s" || sp.Metadata["rate"] != "20.00" {
		t.Fatalf("next window: %v", sp.Metadata)
	}
}

// Seed 10.4 step 2 on a first start (no state file on this boot): the
// baselines are the same events, but they must not claim a reboot nobody
// saw.
func TestCounters_10_4_Step2_FirstStartBaselineSaysNoPreviousState(t *testing.T) {
	r := newRig(t)
	r.ev = NewEvaluator(Options{FreshStart: true})
	r.reboot = true
	sp := r.one(def("link_downed"), 0)
	if sp.Kind != event.KindCounterBaseline || !sp.IsHealthy ||
		sp.Message != "Counter link_downed healthy on port mlx5_0 port 1 (first reading; no previous state)" ||
		sp.Metadata["reason"] != "no-previous-state" {
		t.Fatalf("first-start baseline %+v", sp)
	}
}
