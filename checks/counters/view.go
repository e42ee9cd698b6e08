package counters

import (
	"time"

	"github.com/nichealth/nichealthd/config/countertable"
)

// CounterView is one counter of one port as D-Bus and nichealthctl show it.
type CounterView struct {
	Name           string
	Path           string
	Value          uint64 // last value read (or the persisted snapshot after a restart)
	HasValue       bool
	Rate           float64 // last computed rate, in RateUnit
	RateUnit       string  // "/sec", "/min" or "/hour"
	HasRate        bool
	RateLowerBound bool // the counter was saturated when the rate was computed
	Threshold      float64
	ThresholdType  string
	VelocityUnit   string
	Window         time.Duration
	Fatal          bool
	Breached       bool
	BreachedSince  time.Time
	// Latched is what a latched breach says while it holds (LatchedMessage:
	// what latched, when, its reading at the breach); "" when not latched,
	// and for a ber counter, whose condition is judged again every window.
	Latched   string
	Saturated bool
	// LostGbps and LostPercent estimate the bandwidth port_xmit_wait says
	// the port lost over the last counter tick, recomputed every tick
	// whatever the counter's threshold type or latch (0 for other
	// counters; LostPercent 0 when the port rate is unknown).
	LostGbps    float64
	LostPercent float64
	// Congested: the port's congestion condition is raised.
	Congested bool
}

// View describes the counters defs of one port (normally the port's plan:
// enabled definitions that apply to its link layer), in defs order.
func (e *Evaluator) View(st *Memory, device string, port int, defs []countertable.Definition) []CounterView {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]CounterView, 0, len(defs))
	for i := range defs {
		d := &defs[i]
		v := CounterView{
			Name:          d.Name,
			Path:          d.Path,
			Threshold:     d.Threshold,
			ThresholdType: d.ThresholdType,
			VelocityUnit:  d.VelocityUnit,
			Window:        d.Window(),
			Fatal:         d.IsFatal,
			RateUnit:      "/sec",
		}
		if d.ThresholdType == countertable.TypeVelocity {
			v.RateUnit = unitSuffix(d.VelocityUnit)
		}
		if d.ThresholdType == countertable.TypeBER {
			v.RateUnit = countertable.TypeBER // a bit error rate has no time unit
		}
		key := Key(device, port, d.Name)
		ent := e.mem[memKey{device, port, d.Name}]
		if ent != nil && ent.hasLast {
			v.Value, v.HasValue = ent.last, true
		}
		if st != nil {
			if snap, ok := st.CounterSnapshots[key]; ok && !v.HasValue {
				v.Value, v.HasValue = snap.Value, true
			}
			if f, ok := st.BreachFlags[key]; ok && f.Breached {
				v.Breached, v.BreachedSince = true, f.Since
				if d.ThresholdType == countertable.TypeDelta || d.ThresholdType == countertable.TypeVelocity {
					v.Latched = LatchedMessage(device, port, d, f)
				}
			}
			if _, ok := st.Saturated[Key(device, port, countertable.FileName(d.Path))]; ok {
				v.Saturated = true
			}
			if _, ok := st.Congested[key]; ok {
				v.Congested = true
			}
		}
		if ent != nil && ent.hasRate {
			v.Rate, v.HasRate, v.RateLowerBound = ent.rate, true, ent.lowerBound
		}
		if ent != nil && ent.hasLive {
			v.LostGbps, v.LostPercent = LostBandwidth(ent.livePerSec, e.bytesPerTick, ent.portGbps)
			if d.ThresholdType == countertable.TypeCongestion {
				// The live rate is what a congestion counter shows.
				v.Rate, v.HasRate = ent.livePerSec, true
			}
		}
		out = append(out, v)
	}
	return out
}
