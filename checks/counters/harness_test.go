package counters

import (
	"testing"
	"time"

	"github.com/nichealth/nichealthd/config/countertable"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology"
)

var t0 = time.Date(2025, 6, 15, 10, 0, 0, 0, time.UTC)

// rig drives one Evaluator over one state, one port, with a fake clock.
type rig struct {
	t      *testing.T
	ev     *Evaluator
	st     *Memory
	dev    string
	port   int
	ll     string
	now    time.Time
	reboot bool
	rate   float64
}

func newRig(t *testing.T) *rig {
	return &rig{t: t, ev: NewEvaluator(Options{}), st: NewMemory(),
		dev: "mlx5_0", port: 1, ll: topology.LinkLayerInfiniBand, now: t0}
}

// restart simulates a daemon restart: a new Evaluator over the same state.
func (r *rig) restart() { r.ev = NewEvaluator(Options{}) }

func (r *rig) at(d time.Duration) *rig { r.now = t0.Add(d); return r }

func (r *rig) poll(d *countertable.Definition, v uint64) ([]event.Spec, bool) {
	r.t.Helper()
	return r.ev.Evaluate(r.st, Sample{Device: r.dev, Port: r.port, LinkLayer: r.ll, Def: d,
		Value: v, PortRateGbps: r.rate, Now: r.now}, r.reboot)
}

func (r *rig) pollErr(d *countertable.Definition, err error) ([]event.Spec, bool) {
	r.t.Helper()
	return r.ev.Evaluate(r.st, Sample{Device: r.dev, Port: r.port, LinkLayer: r.ll, Def: d,
		Err: err, Now: r.now}, r.reboot)
}

// none polls and fails on any event.
func (r *rig) none(d *countertable.Definition, v uint64) {
	r.t.Helper()
	if specs, _ := r.poll(d, v); len(specs) != 0 {
		r.t.Fatalf("%s=%d at %v: unexpected events %+v", d.Name, v, r.now.Sub(t0), specs)
	}
}

// one polls and returns the single event, failing otherwise.
func (r *rig) one(d *countertable.Definition, v uint64) event.Spec {
	r.t.Helper()
	specs, _ := r.poll(d, v)
	if len(specs) != 1 {
		r.t.Fatalf("%s=%d at %v: want 1 event, got %+v", d.Name, v, r.now.Sub(t0), specs)
	}
	return specs[0]
}

func (r *rig) key(d *countertable.Definition) string { return Key(r.dev, r.port, d.Name) }

func (r *rig) breached(d *countertable.Definition) bool { return r.st.BreachFlags[r.key(d)].Breached }

func def(name string) *countertable.Definition {
	for _, d := range countertable.Defaults() {
		if d.Name == name {
			return &d
		}
	}
	panic("no default " + name)
}
