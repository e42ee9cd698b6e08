package roce

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/checks/counters"
	"github.com/nichealth/nichealthd/checks/latch"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
	"github.com/nichealth/nichealthd/observe"
	"github.com/nichealth/nichealthd/topology"
)

// CheckName is the check's name in the panic boundary; EventCheck the
// check name its events carry: a RoCE port's non-fatal degradation.
const (
	CheckName  = event.RoCECheck
	EventCheck = event.EthernetDegradationCheck
)

// Config is what the check takes from the configuration.
type Config struct {
	// On: [roce] enabled (its rows are in the read plan).
	On         bool
	Thresholds Thresholds
}

// Check is the RoCE congestion and loss check.
type Check struct {
	cfg Config
	mem *Memory
	// ports follow the observation's ports by index (rebuilt when its
	// read plan is); rowSig maps its counter rows to signals (-1: not
	// one of ours).
	ports  []portState
	plan   uint64
	rowSig []int8
}

// portState is one port's in-process side.
type portState struct {
	dev    string
	port   int
	netdev string
	roce   bool
	key    latch.Port
	// seen: a window of this port was judged in this process.
	seen bool
	cur  [NumSignals]uint64
	// last is the last judged window (judged says there is one).
	last   Window
	judged bool
}

// NewCheck returns the check with empty memory.
func NewCheck() *Check { return &Check{mem: NewMemory()} }

func (*Check) Step() string     { return "roce" }
func (*Check) Serves() []string { return []string{CheckName} }

// Memory is what the check remembers.
func (c *Check) Memory() *Memory { return c.mem }

// Configure applies the configuration. Switched off, every class a port
// is in clears (with an event for those that raised one); new thresholds
// judge from the next window.
func (c *Check) Configure(cfg Config) []event.Spec {
	c.cfg = cfg
	if cfg.On {
		return nil
	}
	var specs []event.Spec
	for k, pm := range c.mem.Ports.All() {
		for _, cl := range Classes {
			if pm == nil || !pm.Classes.Has(cl) {
				continue
			}
			if !Informational(cl) {
				specs = append(specs, c.clearSpec(k.Device, k.Port, cl, pm.Classes[cl].Since, "the RoCE classes are no longer judged ([roce] enabled = false)"))
			}
			pm.Classes.Clear(cl)
		}
	}
	for i := range c.ports {
		c.ports[i].judged = false
	}
	return specs
}

// Resume reconciles the memory restored from the state file with the
// configuration: classes raised before [roce] was switched off while the
// daemon was down clear now, not never.
func (c *Check) Resume() []event.Spec {
	if c.cfg.On {
		return nil
	}
	return c.Configure(c.cfg)
}

// Run judges every RoCE port's window on a counter tick.
func (c *Check) Run(cy *checks.Cycle) {
	obs := cy.Obs
	if !c.cfg.On || !obs.CounterTick {
		return
	}
	if c.rowSig == nil || c.plan != obs.Plan || len(c.ports) != len(obs.Ports) || len(c.rowSig) != len(obs.Counters) {
		c.rebuild(obs)
	}
	entered := false
	for i, p := range obs.Ports {
		ps := &c.ports[i]
		if !ps.roce || len(p.Samples) == 0 {
			continue
		}
		if !entered {
			cy.Enter(CheckName)
			entered = true
		}
		var have set
		for si := range p.Samples {
			s := &p.Samples[si]
			if s.Err != nil {
				continue
			}
			for _, row := range s.Rows {
				if row < len(c.rowSig) && c.rowSig[row] >= 0 {
					ps.cur[c.rowSig[row]] = s.Value
					have.add(Signal(c.rowSig[row]))
				}
			}
		}
		if have == 0 {
			continue
		}
		c.step(cy, ps, have, obs.CounterAt, p.RateGbps)
	}
}

// rebuild follows a new read plan: which rows are ours, which ports are
// RoCE ports.
func (c *Check) rebuild(obs *observe.Observation) {
	c.plan = obs.Plan
	c.rowSig = make([]int8, len(obs.Counters))
	for i, r := range obs.Counters {
		c.rowSig[i] = -1
		if s, ok := signalOf[r.Name]; ok {
			c.rowSig[i] = int8(s)
		}
	}
	old := c.ports
	c.ports = make([]portState, len(obs.Ports))
	for i, p := range obs.Ports {
		ps := &c.ports[i]
		ps.dev, ps.port, ps.netdev = p.Device.Name, p.Port.Num, p.NetDev
		ps.roce = p.Port.LinkLayer == topology.LinkLayerEthernet
		ps.key = latch.PortOf(ps.dev, ps.port)
		for j := range old {
			if old[j].key == ps.key {
				ps.seen, ps.last, ps.judged = old[j].seen, old[j].last, old[j].judged
			}
		}
	}
}

// step moves one port's window: held until full (counters.Hold, the
// counter table's rule), then judged and started again.
func (c *Check) step(cy *checks.Cycle, ps *portState, have set, at time.Time, gbps float64) {
	pm := c.mem.Ports[ps.key]
	if pm == nil {
		if len(c.mem.Ports) >= MaxPorts {
			return
		}
		pm = &PortMemory{}
		c.mem.Ports[ps.key] = pm
	}
	if pm.Start.IsZero() || c.reset(pm, ps, have) {
		c.restart(cy, pm, ps, have, at)
		return
	}
	th := &c.cfg.Thresholds
	elapsed, st := counters.Hold(th.Window, pm.Start, at, !ps.seen)
	switch st {
	case counters.WindowHeld:
		return
	case counters.WindowRestarted:
		c.restart(cy, pm, ps, have, at)
		return
	}
	ps.seen = true
	w := &ps.last
	w.Elapsed, w.Have, w.PortGbps = elapsed, pm.Have&have, gbps
	for s := range NumSignals {
		w.Delta[s] = 0
		if w.Have.has(Signal(s)) {
			w.Delta[s] = ps.cur[s] - pm.Values[s]
		}
	}
	ps.judged = true
	pm.Start, pm.Have, pm.Values = at, have, ps.cur
	if st == counters.WindowPersisted {
		cy.Changed()
	}
	cy.ViewChanged()
	was := pm.set()
	now := Classify(w, th, was)
	if now == was {
		return
	}
	cy.Changed()
	for _, cl := range Classes {
		in, before := now.Has(cl), was.Has(cl)
		switch {
		case in && !before:
			pm.Classes.Raise(cl, Raised{Since: at, Evidence: Evidence(cl, w)})
			if !Informational(cl) {
				cy.Emit(c.raiseSpec(ps, cl, w))
			}
		case !in && before:
			since := pm.Classes[cl].Since
			pm.Classes.Clear(cl)
			if !Informational(cl) {
				cy.Emit(c.clearSpec(ps.dev, ps.port, cl, since, fmt.Sprintf("%s over %s, below half of its threshold", Evidence(cl, w), w.Elapsed.Round(time.Second))))
			}
		}
	}
}

// reset reports a counter that went back (a driver reload, an
// administrator's reset): the window restarts from the new values.
func (c *Check) reset(pm *PortMemory, ps *portState, have set) bool {
	for s := range NumSignals {
		if (pm.Have & have).has(Signal(s)) && ps.cur[s] < pm.Values[s] {
			return true
		}
	}
	return false
}

func (c *Check) restart(cy *checks.Cycle, pm *PortMemory, ps *portState, have set, at time.Time) {
	pm.Start, pm.Have, pm.Values = at, have, ps.cur
	cy.Changed()
}

func (c *Check) threshold(class string) string {
	th := &c.cfg.Thresholds
	switch class {
	case Lossy:
		return rate(th.LossyPerSecond) + "/s"
	case RxStarved:
		return rate(th.RxStarvedPerSecond) + "/s"
	case PauseStorm:
		return fmt.Sprintf("%g storm events or %g%% of the window paused", th.PauseStormEvents, th.PauseStormPercent)
	}
	return rate(th.CongestedPerSecond) + "/s"
}

func (c *Check) raiseSpec(ps *portState, class string, w *Window) event.Spec {
	ev, reason, fix := Evidence(class, w), Reason(class, w), Fix(class, w)
	md := map[string]string{
		"class": class, "evidence": ev, "reason": reason, "fix": fix, "threshold": c.threshold(class),
		"window": w.Elapsed.Round(time.Second).String(), "netdev": ps.netdev,
		"lossPerSecond": rate(w.Loss()), "congestionPerSecond": rate(w.Congestion()),
		"outOfBufferPerSecond": rate(w.PerSec(OutOfBuffer)), "stormEvents": strconv.FormatUint(w.Storms(), 10),
	}
	if gbps, pct, p := w.LostBandwidth(); p >= 0 {
		md["pauseLostGbps"], md["pauseLostPercent"], md["pausePriority"] = rate(gbps), rate(pct), strconv.Itoa(p)
	}
	if class == PauseStorm {
		if dir, p, _ := w.stormWhere(); p >= 0 {
			md["priority"], md["direction"] = strconv.Itoa(p), DirectionName(dir)
		}
	}
	return event.Spec{
		Kind: event.KindRoCE, CheckName: EventCheck, Device: ps.dev, Port: ps.port, ErrorCode: []string{class},
		Message: fmt.Sprintf("Port %s port %d: %s - %s (%s over %s, threshold %s); %s",
			ps.dev, ps.port, class, reason, ev, w.Elapsed.Round(time.Second), c.threshold(class), fix),
		Metadata:  md,
		Condition: condition.OfCounter(ps.dev, ps.port, class),
	}
}

func (c *Check) clearSpec(dev string, port int, class string, since time.Time, why string) event.Spec {
	md := map[string]string{"class": class, "why": why}
	if !since.IsZero() {
		md["since"] = since.UTC().Format(time.RFC3339)
	}
	return event.Spec{
		Kind: event.KindRoCECleared, CheckName: EventCheck, IsHealthy: true, Device: dev, Port: port, ErrorCode: []string{class},
		Message:   fmt.Sprintf("Port %s port %d: no longer %s - %s", dev, port, class, why),
		Metadata:  md,
		Condition: condition.OfCounter(dev, port, class),
	}
}

// View is what the views show of one RoCE port: its classes, what the
// last window measured, and the bandwidth pauses cost it.
type View struct {
	// Classes are the classes the port is in (roce-congested included),
	// Evidence each one's evidence, in Classes' order.
	Classes  []string
	Evidence []string
	// Judged says a window was judged in this process: the rates below
	// are its.
	Judged      bool
	Window      time.Duration
	Congestion  float64
	Loss        float64
	OutOfBuffer float64
	RxDiscards  float64
	Storms      uint64
	// PauseLostGbps and PauseLostPercent are the rx pause time of the
	// priority paused longest (PausePriority, -1 none) as bandwidth.
	PauseLostGbps    float64
	PauseLostPercent float64
	PausePriority    int
	// Read are how many of the signals the port has.
	Read int
}

// PortView describes one port; ok is false for a port the check does not
// judge (not RoCE, or off).
func (c *Check) PortView(dev string, port int) (View, bool) {
	if !c.cfg.On {
		return View{}, false
	}
	i := slices.IndexFunc(c.ports, func(ps portState) bool { return ps.dev == dev && ps.port == port })
	if i < 0 || !c.ports[i].roce {
		return View{}, false
	}
	ps := &c.ports[i]
	v := View{PausePriority: -1}
	if pm := c.mem.Ports[ps.key]; pm != nil {
		v.Read = popcount(pm.Have)
		for _, cl := range Classes {
			if r, in := pm.Classes[cl]; in {
				ev := r.Evidence
				if ps.judged {
					ev = Evidence(cl, &ps.last)
				}
				v.Classes, v.Evidence = append(v.Classes, cl), append(v.Evidence, ev)
			}
		}
	}
	if ps.judged {
		w := &ps.last
		v.Judged, v.Window = true, w.Elapsed
		v.Congestion, v.Loss, v.OutOfBuffer, v.RxDiscards, v.Storms = w.Congestion(), w.Loss(), w.PerSec(OutOfBuffer), w.PerSec(RxDiscardsPhy), w.Storms()
		v.PauseLostGbps, v.PauseLostPercent, v.PausePriority = w.LostBandwidth()
	}
	return v, true
}

func popcount(s set) int {
	n := 0
	for ; s != 0; s &= s - 1 {
		n++
	}
	return n
}

// Rename moves what the check remembers of a device to its new name.
func (c *Check) Rename(old, nw string) {
	c.mem.Ports.Rekey(func(k latch.Port) (latch.Port, bool) { return k.Renamed(old, nw) })
	c.rowSig = nil
}

// Section is the check's section of the state file.
func (c *Check) Section() string { return Section }

// Restore starts the memory from the state file's section.
func (c *Check) Restore(raw []byte) []string {
	return checks.RestoreSection(Section, raw, MemoryVersion, c.mem, func() { *c.mem = *NewMemory() }, c.mem.Validate)
}

// Marshal is the section to save.
func (c *Check) Marshal() ([]byte, error) { return json.Marshal(c.mem) }

// Replay applies one of the check's events to the memory (the outbox is
// written before the state).
func (c *Check) Replay(e *event.Event) {
	if e.CheckName != EventCheck {
		return
	}
	switch e.Kind {
	case event.KindCheckCleared:
		for _, pm := range c.mem.Ports {
			if pm == nil {
				continue
			}
			for cl := range pm.Classes {
				if !Informational(cl) {
					delete(pm.Classes, cl)
				}
			}
		}
		return
	case event.KindRoCE, event.KindRoCECleared:
	default:
		return
	}
	dev, port := e.Condition.Entity.Device, e.Condition.Entity.Port
	if dev == "" || len(e.ErrorCode) != 1 || bit(e.ErrorCode[0]) == 0 {
		return
	}
	k := latch.PortOf(dev, port)
	pm := c.mem.Ports[k]
	if pm == nil {
		if len(c.mem.Ports) >= MaxPorts {
			return
		}
		pm = &PortMemory{}
		c.mem.Ports[k] = pm
	}
	cl := e.ErrorCode[0]
	if e.Kind == event.KindRoCECleared {
		pm.Classes.Clear(cl)
		return
	}
	if !pm.Classes.Has(cl) {
		pm.Classes.Raise(cl, Raised{Since: e.GeneratedTimestamp, Evidence: e.Metadata["evidence"]})
	}
}

// Restate says, as events, the classes the memory holds raised (a state
// file written before the health model).
func (c *Check) Restate() []checks.Restated {
	var out []checks.Restated
	for k, pm := range c.mem.Ports.All() {
		if !k.Valid() || pm == nil {
			continue
		}
		dev, port := k.Device, k.Port
		for _, cl := range Classes {
			r, in := pm.Classes[cl]
			if !in || Informational(cl) {
				continue
			}
			out = append(out, checks.Restated{Since: r.Since, Spec: event.Spec{Kind: event.KindRoCE, CheckName: EventCheck,
				Device: dev, Port: port, ErrorCode: []string{cl}, Metadata: map[string]string{"class": cl, "evidence": r.Evidence},
				Message:   fmt.Sprintf("Port %s port %d: %s (%s)", dev, port, cl, r.Evidence),
				Condition: condition.OfCounter(dev, port, cl)}})
		}
	}
	return out
}
