package roce

import (
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/observe"
	"github.com/nichealth/nichealthd/topology"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// defaults are [roce]'s defaults, written out: a change to them must be
// seen here.
var defaults = Thresholds{Window: time.Minute, CongestedPerSecond: 1000, LossyPerSecond: 10, RxStarvedPerSecond: 10,
	PauseStormEvents: 0, PauseStormPercent: 50}

type noBoundary struct{}

func (noBoundary) Run(_ string, _ []string, fn func()) { fn() }
func (noBoundary) Enter(string)                        {}
func (noBoundary) Failed(string) bool                  { return false }

// rig drives the check over one RoCE port (mlx5_2 port 1, eth2, 400 Gb/s)
// with a fake clock: vals are the port's counters, present the ones its
// driver has.
type rig struct {
	t       *testing.T
	c       *Check
	obs     observe.Observation
	cy      *checks.Cycle
	out     []event.Spec
	now     time.Time
	vals    [NumSignals]uint64
	present set
	changed bool
}

func newRig(t *testing.T, th Thresholds) *rig {
	r := &rig{t: t, c: NewCheck(), now: t0, present: 1<<NumSignals - 1}
	r.c.Configure(Config{On: true, Thresholds: th})
	r.cy = checks.NewCycle(noBoundary{})
	dev := &topology.Device{Name: "mlx5_2"}
	port := &topology.Port{Num: 1, LinkLayer: topology.LinkLayerEthernet}
	r.obs.Counters = append([]observe.Counter{{Name: "link_downed", Path: "counters/link_downed"}}, Rows()...)
	r.obs.Ports = []*observe.Port{{Device: dev, Port: port, NetDev: "eth2", RateGbps: 400}}
	r.obs.Plan = 1
	return r
}

// tick advances the clock by d and runs one counter tick.
func (r *rig) tick(d time.Duration) []event.Spec {
	r.t.Helper()
	r.now = r.now.Add(d)
	p := r.obs.Ports[0]
	p.Samples = p.Samples[:0]
	for i := range NumSignals {
		if r.present.has(Signal(i)) {
			p.Samples = append(p.Samples, observe.Sample{Path: string(Signal(i).Path()), Rows: []int{i + 1}, Value: r.vals[i], At: r.now})
		}
	}
	r.obs.CounterTick, r.obs.CounterAt, r.obs.Now = true, r.now, r.now
	r.out = r.out[:0]
	r.cy.Reset(&r.obs, &r.out)
	r.c.Run(r.cy)
	r.changed = r.cy.HasChanged()
	return r.out
}

// run adds per[s] to each signal every second for d, ticking each second,
// and returns every event.
func (r *rig) run(d time.Duration, per map[Signal]uint64) []event.Spec {
	r.t.Helper()
	var all []event.Spec
	for range int(d / time.Second) {
		for s, n := range per {
			r.vals[s] += n
		}
		all = append(all, r.tick(time.Second)...)
	}
	return all
}

func (r *rig) classes() []string {
	v, ok := r.c.PortView("mlx5_2", 1)
	if !ok {
		r.t.Fatal("mlx5_2 port 1 has no RoCE view")
	}
	return v.Classes
}

func codes(specs []event.Spec) []string {
	var out []string
	for _, s := range specs {
		c := string(s.Kind) + ":"
		if len(s.ErrorCode) > 0 {
			c += s.ErrorCode[0]
		}
		out = append(out, c)
	}
	return out
}
