package counters

import (
	"fmt"
	"strconv"
	"time"

	"github.com/nichealth/nichealthd/config/countertable"
)

// ber judges a counter of bits as a bit error rate over its held window:
// delta / (port rate in bits/s × elapsed seconds). Without a known port
// rate there is no denominator: the window restarts unjudged.
func ber(d *countertable.Definition, ent *memEntry, snap CounterSnapshot, now time.Time, delta uint64, gbps float64) (measure, windowState) {
	m, w := velocity(d, ent, snap, now, delta)
	if w == windowHeld || w == windowRestarted {
		return m, w
	}
	if gbps <= 0 {
		return measure{}, windowRestarted
	}
	m.rate = float64(delta) / (gbps * 1e9 * m.elapsed.Seconds())
	m.breach = m.rate > d.Threshold
	return m, w
}

// FormatBER prints a bit error rate as operators write it: 3.20e-05.
func FormatBER(v float64) string { return strconv.FormatFloat(v, 'e', 2, 64) }

// berBreach completes a ber counter's breach metadata and returns its
// message (see berMessage).
func berBreach(head string, s *Sample, delta uint64, rate float64, elapsed time.Duration, md map[string]string) string {
	md["ber"] = FormatBER(rate)
	md["rate"] = strconv.FormatFloat(rate, 'g', 4, 64)
	md["unit"] = countertable.TypeBER
	md["portRateGbps"] = strconv.FormatFloat(s.PortRateGbps, 'g', -1, 64)
	return berMessage(head, s, delta, rate, elapsed)
}

// berMessage is the breach message of a ber counter, e.g.
// "Port mlx5_0 port 1: rx_corrected_bits_phy - <description> (pre-FEC
// BER=3.20e-05 over 1m0s at 400 Gb/s, threshold 1.00e-05; value=..., delta=...)".
func berMessage(head string, s *Sample, delta uint64, rate float64, elapsed time.Duration) string {
	return fmt.Sprintf("%s (pre-FEC BER=%s over %s at %s Gb/s, threshold %s; value=%d, delta=%d)",
		head, FormatBER(rate), elapsed.Round(time.Second), strconv.FormatFloat(s.PortRateGbps, 'g', -1, 64),
		FormatBER(s.Def.Threshold), s.Value, delta)
}

// berHeld judges a breached ber counter's next windows. Unlike the seed's
// latching counters, whose increments record events that happened (a link
// went down), a bit error rate describes the link now: once a full window
// is back at or below the threshold (the corrected bits stopped piling up,
// a cable was reseated), the condition clears with a recovery event. Seed
// 6.3's latch is kept for everything else.
func (ev *evaluation) berHeld() {
	s, ent, d := &ev.s, ev.ent, ev.s.Def
	m, w := ber(d, ent, ev.snap, s.Now, s.Value-ev.snap.Value, s.PortRateGbps)
	switch w {
	case windowHeld:
		return
	case windowRestarted:
		ev.setSnap()
		return
	}
	ev.setSnap()
	ev.changed = true
	if !ent.hasRate || ent.rate != m.rate {
		ev.e.rateChanges++
	}
	ent.hasRate, ent.rate, ent.perSec, ent.portGbps = true, m.rate, m.perSec, s.PortRateGbps
	if m.breach {
		return
	}
	delete(ev.st.BreachFlags, ent.key)
	msg := fmt.Sprintf("Counter %s recovered on port %s port %d (pre-FEC BER=%s over %s, at or below %s)",
		d.Name, s.Device, s.Port, FormatBER(m.rate), m.elapsed.Round(time.Second), FormatBER(d.Threshold))
	sp := reasonRecoverySpec(d.Name, s.Device, s.Port, ev.flag, msg, "below-threshold")
	sp.Metadata["ber"] = FormatBER(m.rate)
	ev.specs = append(ev.specs, sp)
}
