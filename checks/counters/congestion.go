package counters

import (
	"fmt"
	"strconv"
	"time"

	"github.com/nichealth/nichealthd/config/countertable"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
)

// DefaultXmitWaitBytesPerTick is what one port_xmit_wait tick stands for on
// Quantum-class hardware: the counter increments every 8 bytes per port
// regardless of width (PortSamplesControl tick == 7, lost bytes = ticks ×
// (tick+1)). Switch-IB-class parts count 32 bytes per lane instead; set
// xmitWaitBytesPerTick to 32 × lanes there.
const DefaultXmitWaitBytesPerTick = 8

// CongestionErrorCode is the error code of the congestion condition and
// of its clear.
const CongestionErrorCode = "congestion"

// LostBandwidth turns a port_xmit_wait rate into the bandwidth the port
// could not send: ticks/s × bytes per tick × 8 bits, in Gb/s, and that as a
// percentage of the port's rate. percent is 0 when the port rate is
// unknown (portGbps <= 0).
func LostBandwidth(ticksPerSec, bytesPerTick, portGbps float64) (gbps, percent float64) {
	if ticksPerSec <= 0 || bytesPerTick <= 0 {
		return 0, 0
	}
	gbps = ticksPerSec * bytesPerTick * 8 / 1e9
	if portGbps > 0 {
		percent = gbps / portGbps * 100
	}
	return gbps, percent
}

// live records the bandwidth port_xmit_wait says the port lost over the
// last tick, whatever its threshold type and latch: the view shows it
// moving (DESIGN.md difference 14), not frozen at the value of the window
// that raised a condition.
func (e *Evaluator) live(s *Sample, ent *memEntry) {
	if !countertable.IsXmitWait(s.Def) {
		return
	}
	if !ent.hasLast || s.Value < ent.last || !s.Now.After(ent.lastAt) {
		return
	}
	perSec := float64(s.Value-ent.last) / s.Now.Sub(ent.lastAt).Seconds()
	if !ent.hasLive || ent.livePerSec != perSec || ent.portGbps != s.PortRateGbps {
		e.rateChanges++
	}
	ent.hasLive, ent.livePerSec, ent.portGbps = true, perSec, s.PortRateGbps
}

// congestion judges a congestion counter over its window (step 5 for
// TypeCongestion): the share of the port rate lost to backpressure above
// the threshold raises a non-fatal condition, below half of it a full
// window later clears it. Not a latch: it describes the fabric now. A port
// whose rate is unknown is not judged (there is no share to compute).
func (e *Evaluator) congestion(st *Memory, s *Sample, ent *memEntry, snap CounterSnapshot) (*event.Spec, bool) {
	d := s.Def
	next := CounterSnapshot{Value: s.Value, Timestamp: s.Now}
	changed := s.Value != snap.Value
	m, w := velocity(d, ent, snap, s.Now, s.Value-snap.Value)
	switch w {
	case windowHeld:
		return nil, false
	case windowRestarted:
		st.CounterSnapshots[ent.key] = next
		return nil, changed
	case windowPersisted:
		changed = true
	}
	st.CounterSnapshots[ent.key] = next
	if !ent.hasRate || ent.rate != m.perSec {
		e.rateChanges++
	}
	ent.hasRate, ent.rate, ent.perSec, ent.portGbps = true, m.perSec, m.perSec, s.PortRateGbps
	if s.PortRateGbps <= 0 {
		return nil, changed
	}
	gbps, pct := LostBandwidth(m.perSec, e.bytesPerTick, s.PortRateGbps)
	since, congested := st.Congested[ent.key]
	switch {
	case !congested && pct > d.Threshold:
		st.Congested[ent.key] = s.Now
		st.raisedUnder(ent.key, event.DegradationCheckFor(s.LinkLayer))
		sp := e.congestionSpec(s, gbps, pct, m.elapsed, true)
		return &sp, true
	case congested && pct < d.Threshold/2:
		sp := e.congestionSpec(s, gbps, pct, m.elapsed, false)
		sp.CheckName = st.checkOf(ent.key)
		delete(st.Congested, ent.key)
		st.raisedUnder(ent.key, "")
		sp.Metadata["congestedSince"] = since.UTC().Format(time.RFC3339)
		return &sp, true
	}
	return nil, changed
}

func (e *Evaluator) congestionSpec(s *Sample, gbps, pct float64, elapsed time.Duration, raise bool) event.Spec {
	d := s.Def
	rate := strconv.FormatFloat(s.PortRateGbps, 'g', -1, 64)
	sp := event.Spec{
		Kind: event.KindCongestion, CheckName: event.DegradationCheckFor(s.LinkLayer),
		ErrorCode: []string{CongestionErrorCode}, Device: s.Device, Port: s.Port,
		Message: fmt.Sprintf("Port %s port %d: congested - %s lost an estimated %.1f Gb/s (%.1f%% of %s Gb/s) waiting for transmit credits over %s, above %s%%: look for congestion on the fabric (the switch port, the peer), not on this node",
			s.Device, s.Port, d.Name, gbps, pct, rate, elapsed.Round(time.Second), strconv.FormatFloat(d.Threshold, 'g', -1, 64)),
		Metadata: map[string]string{
			"counter": d.Name, "lostGbps": strconv.FormatFloat(gbps, 'f', 1, 64), "lostPercent": strconv.FormatFloat(pct, 'f', 1, 64),
			"portRateGbps": rate, "threshold": strconv.FormatFloat(d.Threshold, 'g', -1, 64), "window": d.Window().String(),
			"bytesPerTick": strconv.FormatFloat(e.bytesPerTick, 'g', -1, 64),
		},
		Condition: condition.OfCounter(s.Device, s.Port, CongestionErrorCode),
	}
	if !raise {
		sp.Kind, sp.IsHealthy = event.KindCongestionCleared, true
		sp.Message = fmt.Sprintf("Port %s port %d: no longer congested - %s lost %.1f Gb/s (%.1f%% of %s Gb/s) over %s, below half of %s%%",
			s.Device, s.Port, d.Name, gbps, pct, rate, elapsed.Round(time.Second), strconv.FormatFloat(d.Threshold, 'g', -1, 64))
	}
	return sp
}
