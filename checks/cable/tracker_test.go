package cable

import (
	"testing"
	"time"

	"github.com/nichealth/nichealthd/mad/farend"
	"github.com/nichealth/nichealthd/mad/wire"
	"github.com/nichealth/nichealthd/observe"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

var (
	active = sysfs.Link{State: sysfs.PortState{ID: sysfs.StateActive, Name: "ACTIVE"}, Phys: sysfs.PortState{ID: sysfs.PhysLinkUp, Name: "LinkUp"}}
	down   = sysfs.Link{State: sysfs.PortState{ID: sysfs.StateDown, Name: "DOWN"}, Phys: sysfs.PortState{ID: 3, Name: "Disabled"}}
)

// trackerObs is one IB port with symbol_error (and symbol_error_fatal on
// the same file) and port_xmit_wait sampled.
func trackerObs() *observe.Observation {
	dev := &topology.Device{Name: "mlx5_0"}
	p := &observe.Port{Device: dev, Port: &topology.Port{Num: 1, LinkLayer: topology.LinkLayerInfiniBand}, Observed: true, Link: active,
		Samples: []observe.Sample{{Path: "counters/symbol_error", Rows: []int{0, 1}}, {Path: "counters/port_xmit_wait", Rows: []int{2}}}}
	return &observe.Observation{Plan: 1, StatePoll: true, CounterTick: true, Ports: []*observe.Port{p},
		Counters: []observe.Counter{{Name: "symbol_error"}, {Name: "symbol_error_fatal"}, {Name: "port_xmit_wait"}}}
}

func tick(o *observe.Observation, now time.Time, symbol, xmitWait uint64) {
	o.Now = now
	s := o.Ports[0].Samples
	s[0].Value, s[0].At = symbol, now
	s[1].Value, s[1].At = xmitWait, now
}

func farEndReading(seq uint64, at time.Time, symbol uint64) *farend.PeerReading {
	pr := farend.PeerPort{Device: "mlx5_0", Port: 1, Found: true, Read: true, Seq: seq, ReadAt: at}
	pr.Peer.PortGUID = "0x0002c90300000001"
	pr.Counters = wire.PortCounters{SymbolErrorCounter: symbol}
	return &farend.PeerReading{Gen: seq, Ports: []farend.PeerPort{pr}}
}

// TestCable_15_TrackerWindow: a counter that rose counts as errors for the
// window after its last rise, then the port is clean again; a counter
// outside the error set (port_xmit_wait) never counts.
func TestCable_15_TrackerWindow(t *testing.T) {
	tr := NewTracker()
	tr.Configure(Config{Window: time.Minute, Transport: Transport{Timeout: 20, Retries: 7}})
	o := trackerObs()
	t0 := time.Unix(1_700_000_000, 0)
	o.FarEnd = farEndReading(1, t0, 0)
	tick(o, t0, 100, 0)
	tr.Observe(o)
	if v := tr.Verdict("mlx5_0", 1); v.Said() {
		t.Fatalf("baseline says %v", v.EvidenceText())
	}
	tick(o, t0.Add(time.Second), 100, 5000)
	tr.Observe(o)
	if v := tr.Verdict("mlx5_0", 1); v.Said() {
		t.Fatalf("port_xmit_wait is no cable error: %v", v.EvidenceText())
	}
	tick(o, t0.Add(2*time.Second), 112, 5000)
	if !tr.Observe(o) {
		t.Fatal("a verdict that moved is not reported")
	}
	v := tr.Verdict("mlx5_0", 1)
	if v.Direction != ToHost || v.EvidenceText() != "host symbol_error +12 in 1m0s" {
		t.Fatalf("after a rise: %v %q", v.Direction, v.EvidenceText())
	}
	tick(o, t0.Add(30*time.Second), 112, 5000)
	tr.Observe(o)
	if v := tr.Verdict("mlx5_0", 1); v.Direction != ToHost {
		t.Fatalf("within the window: %v", v.Direction)
	}
	// The switch port's counter rises on the next far-end read: both.
	o.FarEnd = farEndReading(2, t0.Add(31*time.Second), 7)
	tick(o, t0.Add(31*time.Second), 112, 5000)
	tr.Observe(o)
	if v := tr.Verdict("mlx5_0", 1); v.Direction != Both || v.Suspect != Cable {
		t.Fatalf("both ends: %v %v (%s)", v.Direction, v.Suspect, v.EvidenceText())
	}
	tick(o, t0.Add(62*time.Second+time.Millisecond), 112, 5000)
	tr.Observe(o)
	if v := tr.Verdict("mlx5_0", 1); v.Direction != FromHost {
		t.Fatalf("ours past the window, the switch's within: %v (%s)", v.Direction, v.EvidenceText())
	}
	tick(o, t0.Add(92*time.Second), 112, 5000)
	tr.Observe(o)
	if v := tr.Verdict("mlx5_0", 1); v.Said() {
		t.Fatalf("past both windows: %v (%s)", v.Direction, v.EvidenceText())
	}
	// A reset is a new baseline, not errors.
	tick(o, t0.Add(93*time.Second), 3, 5000)
	tr.Observe(o)
	if v := tr.Verdict("mlx5_0", 1); v.Said() {
		t.Fatalf("a counter reset reads as errors: %s", v.EvidenceText())
	}
	// After the reset the counter counts from its new baseline.
	tick(o, t0.Add(94*time.Second), 5, 5000)
	tr.Observe(o)
	if v := tr.Verdict("mlx5_0", 1); v.EvidenceText() != "host symbol_error +2 in 1m0s" {
		t.Fatalf("a rise after a reset: %q", v.EvidenceText())
	}
	// A recabled port's new peer brings its own counters: higher than the
	// old peer's is no rise.
	moved := farEndReading(3, t0.Add(95*time.Second), 5000)
	moved.Ports[0].Peer.PortGUID = "0x0002c90300000002"
	o.FarEnd = moved
	tick(o, t0.Add(95*time.Second), 5, 5000)
	tr.Observe(o)
	if v := tr.Verdict("mlx5_0", 1); v.Direction != ToHost {
		t.Fatalf("a new peer's counters read as errors: %v %q", v.Direction, v.EvidenceText())
	}
	o.FarEnd = farEndReading(4, t0.Add(96*time.Second), 5001)
	o.FarEnd.Ports[0].Peer.PortGUID = "0x0002c90300000002"
	tr.Observe(o)
	if v := tr.Verdict("mlx5_0", 1); v.Direction != Both {
		t.Fatalf("the new peer's own rise: %v %q", v.Direction, v.EvidenceText())
	}
	// A replan (another NIC gone) keeps the port's run of errors.
	tick(o, t0.Add(97*time.Second), 9, 5000)
	tr.Observe(o)
	o.Plan++
	tick(o, t0.Add(98*time.Second), 9, 5000)
	tr.Observe(o)
	if v := tr.Verdict("mlx5_0", 1); v.NHostRise() != 6 {
		t.Fatalf("after a replan: %q", v.EvidenceText())
	}
	if a := testing.AllocsPerRun(50, func() { tr.Observe(o) }); a != 0 {
		t.Fatalf("a steady Observe allocates %.0f objects", a)
	}
}

// TestCable_15_TrackerFarEndMissing: with the far end off, the IB port's
// verdict says the switch half is missing.
func TestCable_15_TrackerFarEndMissing(t *testing.T) {
	tr := NewTracker()
	o := trackerObs()
	t0 := time.Unix(1_700_000_000, 0)
	tick(o, t0, 1, 0)
	tr.Observe(o)
	if v := tr.Verdict("mlx5_0", 1); v.Missing != FarEndOff {
		t.Fatalf("missing = %v, want FarEndOff", v.Missing)
	}
	o.FarEnd = &farend.PeerReading{Unavailable: "no umad device"}
	tr.Observe(o)
	if v := tr.Verdict("mlx5_0", 1); v.Missing != FarEndUnavailable || v.MissingWhy != "no umad device" {
		t.Fatalf("missing = %v %q", v.Missing, v.MissingWhy)
	}
}

// TestCable_15_DowntimeAgainstBudget: an episode is measured from the
// first poll that sees the port leave ACTIVE to the first that sees it
// back, and is told once.
func TestCable_15_DowntimeAgainstBudget(t *testing.T) {
	tr := NewTracker()
	o := trackerObs()
	t0 := time.Unix(1_700_000_000, 0)
	step := func(at time.Duration, l sysfs.Link) {
		o.Ports[0].Link = l
		tick(o, t0.Add(at), 0, 0)
		tr.Observe(o)
	}
	step(0, active)
	step(time.Second, down)
	step(2*time.Second+200*time.Millisecond, active)
	ep, ok := tr.TakeEpisode("mlx5_0", 1)
	if !ok || ep.DownFor != 1200*time.Millisecond || ep.Sentence() != "down 1.2 s: within the 34 s RDMA retry budget" {
		t.Fatalf("episode %v %v %q", ok, ep.DownFor, ep.Sentence())
	}
	if _, again := tr.TakeEpisode("mlx5_0", 1); again {
		t.Fatal("an episode is told twice")
	}
	step(3*time.Second, down)
	step(43*time.Second, active)
	if ep, _ := tr.TakeEpisode("mlx5_0", 1); ep.Within() || ep.Sentence() != "down 40 s: longer than the 34 s RDMA retry budget" {
		t.Fatalf("long episode: %q", ep.Sentence())
	}
	// A port first seen down has no start: nothing is measured.
	tr2 := NewTracker()
	o.Ports[0].Link = down
	tr2.Observe(o)
	o.Ports[0].Link = active
	tr2.Observe(o)
	if _, ok := tr2.TakeEpisode("mlx5_0", 1); ok {
		t.Fatal("an episode without a start is measured")
	}
}

// NHostRise is the rise of the verdict's first host counter (0 none).
func (v *Verdict) NHostRise() uint64 {
	for _, e := range v.Evidence() {
		if e.Kind == KindCounter && e.Side == Host {
			return e.Rise
		}
	}
	return 0
}
