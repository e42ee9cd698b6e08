package farend

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/nichealth/nichealthd/checks/counters"
	"github.com/nichealth/nichealthd/checks/latch"
	"github.com/nichealth/nichealthd/config/countertable"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/mad/farend"
	"github.com/nichealth/nichealthd/mad/wire"
)

// Peer churn (DESIGN.md section 13, "a peer whose GUID keeps changing"):
// UnstableAfter different peers within ChurnWindow is one non-fatal
// "peer unstable" finding; it clears once the same peer has been read for
// StableAfter. A cable moved once is a recabling (its latches clear, its
// new peer starts a baseline); three peers in an hour is no cable that
// stays put (a loose connector flapping between a switch's ports, a fabric
// renumbering), and a new baseline at each read would judge nothing.
const (
	UnstableAfter = 3
	ChurnWindow   = time.Hour
	StableAfter   = time.Hour
)

// judgePort follows one port's peer and judges its new counters.
func (c *Check) judgePort(p *farend.PeerPort, at time.Time, rateGbps float64) ([]event.Spec, bool) {
	if !p.Found {
		return nil, false
	}
	k := latch.PortOf(p.Device, p.Port)
	pm := c.mem.Ports[k]
	var specs []event.Spec
	changed := false
	if pm == nil || pm.PeerGUID != p.Peer.NodeGUID || pm.PeerPort != p.Peer.Port {
		if pm == nil && len(c.mem.Ports) >= MaxPorts {
			return nil, false
		}
		pm, specs = c.recable(p, pm, at)
		delete(c.seen, k)
		changed = true
	}
	if pm.PeerName != p.Peer.Name || pm.PeerLID != p.Peer.LID {
		pm.PeerName, pm.PeerLID, changed = p.Peer.Name, p.Peer.LID, true
	}
	if sp, ch := c.stable(p, pm, at); ch {
		specs, changed = append(specs, sp...), true
	}
	if !p.Read || c.seen[k] == p.Seq {
		return specs, changed
	}
	if len(c.seen) >= MaxPorts {
		// Renamed devices leave keys behind; forgetting them costs one
		// re-baselining of the same reading (ReadAt not after At).
		clear(c.seen)
	}
	_, known := c.seen[k]
	c.seen[k] = p.Seq
	values := p.Counters.Values()
	if pm.At.IsZero() || pm.Wide != p.Wide || !p.ReadAt.After(pm.At) {
		// The first reading of a peer (or of its other width) is its
		// baseline: what it counted before says nothing of this link now.
		pm.Values, pm.At, pm.Wide = values, p.ReadAt, p.Wide
		for _, w := range pm.Windows {
			w.Starts = w.Starts[:0]
		}
		c.startWindows(pm, values, p.ReadAt)
		specs = append(specs, c.saturation(p, pm, values)...)
		return specs, true
	}
	specs = append(specs, c.judgeRows(p, pm, values, rateGbps, !known)...)
	specs = append(specs, c.saturation(p, pm, values)...)
	pm.Values, pm.At = values, p.ReadAt
	return specs, true
}

// recable makes pm the memory of p's new peer: what the old peer counted
// was about that link, so its latches clear; the churn history and the
// peer-unstable finding stay with the port.
func (c *Check) recable(p *farend.PeerPort, old *PortMemory, at time.Time) (*PortMemory, []event.Spec) {
	np := &PortMemory{PeerGUID: p.Peer.NodeGUID, PeerPort: p.Peer.Port, StableSince: at}
	var specs []event.Spec
	if old != nil {
		why := fmt.Sprintf("the port is now cabled to %s port %d", p.Peer.Name, p.Peer.Port)
		for _, row := range slices.Sorted(maps.Keys(old.Latched)) {
			if row == UnstableRow {
				np.Latched = map[string]time.Time{row: old.Latched[row]}
				continue
			}
			specs = append(specs, c.recovered(p.Device, p.Port, old, row, "peer-changed", why))
		}
		for _, f := range slices.Sorted(maps.Keys(old.Saturated)) {
			specs = append(specs, c.unsaturated(p.Device, p.Port, old, f, why))
		}
		np.Peers = old.Peers
	}
	np.Peers = seenPeer(np.Peers, PeerSeen{GUID: p.Peer.NodeGUID, Port: p.Peer.Port, Name: p.Peer.Name, At: at}, at)
	c.mem.Ports[latch.PortOf(p.Device, p.Port)] = np
	if old != nil && len(np.Peers) >= UnstableAfter && np.Latched[UnstableRow].IsZero() {
		np.Latched = map[string]time.Time{UnstableRow: at}
		specs = append(specs, unstable(p, np.Peers, ChurnWindow))
	}
	return np, specs
}

// seenPeer records s as the latest peer: the peers read in the last
// ChurnWindow, in the order the port was cabled to them (a cable that
// flaps between two switch ports counts each move), oldest first, at
// most MaxPeersSeen.
func seenPeer(list []PeerSeen, s PeerSeen, now time.Time) []PeerSeen {
	out := make([]PeerSeen, 0, len(list)+1)
	for _, e := range list {
		if now.Sub(e.At) < ChurnWindow {
			out = append(out, e)
		}
	}
	out = append(out, s)
	if len(out) > MaxPeersSeen {
		out = out[len(out)-MaxPeersSeen:]
	}
	return out
}

// stable clears the peer-unstable finding once the same peer has been
// read for StableAfter, and keeps the current peer's entry fresh.
func (c *Check) stable(p *farend.PeerPort, pm *PortMemory, at time.Time) ([]event.Spec, bool) {
	if n := len(pm.Peers); n > 0 && at.Sub(pm.Peers[n-1].At) >= ChurnWindow/peerRefreshParts {
		pm.Peers[n-1].At = at
	}
	since := pm.Latched[UnstableRow]
	if since.IsZero() || pm.StableSince.IsZero() || at.Sub(pm.StableSince) < StableAfter {
		return nil, false
	}
	sp := c.recovered(p.Device, p.Port, pm, UnstableRow, "peer-stable",
		fmt.Sprintf("the same peer (%s port %d) has been read for %s", p.Peer.Name, p.Peer.Port, at.Sub(pm.StableSince).Round(time.Second)))
	delete(pm.Latched, UnstableRow)
	pm.Peers = pm.Peers[len(pm.Peers)-1:]
	return []event.Spec{sp}, true
}

// peerRefreshParts is how often (in parts of ChurnWindow) the current
// peer's last-read time is moved on: often enough that it never ages out
// of the churn history while it is read.
const peerRefreshParts = 12

// startWindows starts every velocity row's window at a baseline reading.
func (c *Check) startWindows(pm *PortMemory, values [wire.NumFields]uint64, at time.Time) {
	for i := range c.cfg.Rows {
		r := &c.cfg.Rows[i]
		if windowed(&r.Def) {
			pm.window(r.Def.Name).Restart(at, values[fieldIndex(r)])
		}
	}
}

// window is row's window, made on first use.
func (pm *PortMemory) window(row string) *counters.Slide {
	if pm.Windows == nil {
		pm.Windows = map[string]*counters.Slide{}
	}
	w := pm.Windows[row]
	if w == nil {
		w = &counters.Slide{}
		pm.Windows[row] = w
	}
	return w
}

// witnessFields are the far-end counters a local link-down episode moves:
// the switch sees the same link go down and retrain.
func witnessField(field string) bool {
	return field == "LinkDownedCounter" || field == "LinkErrorRecoveryCounter"
}

// judgeRows judges each row of a new reading against the last one.
//
// first says this is the first reading of the port in this process: as
// the local evaluator does with a short window restored from the state
// file, a window shorter than counters.PersistWindowFrom starts again
// there instead of being judged over the daemon's downtime, which would
// dilute a burst; a minute or an hour resumes, judged over the time it
// really covered.
func (c *Check) judgeRows(p *farend.PeerPort, pm *PortMemory, values [wire.NumFields]uint64, rateGbps float64, first bool) []event.Spec {
	var specs []event.Spec
	elapsed := p.ReadAt.Sub(pm.At)
	for i := range c.cfg.Rows {
		r := &c.cfg.Rows[i]
		row := r.Def.Name
		ix := fieldIndex(r)
		cur, prev := values[ix], pm.Values[ix]
		_, latched := pm.Latched[row]
		if cur < prev {
			// Cleared on the fabric side: a latch ends with it, and the
			// window starts over.
			if latched {
				specs = append(specs, c.recovered(p.Device, p.Port, pm, row, "reset",
					fmt.Sprintf("the switch's %s went back from %d to %d (cleared on the fabric side)", r.Field, prev, cur)))
				delete(pm.Latched, row)
			}
			c.restartWindow(pm, r, p.ReadAt, cur)
			continue
		}
		if latched && r.Def.ThresholdType != countertable.TypeCongestion {
			// Latched (seed 10.4 step 4): nothing is judged; the window
			// starts again when the latch ends.
			c.restartWindow(pm, r, p.ReadAt, cur)
			continue
		}
		if witnessField(r.Field) && cur > prev {
			if ep, ok := c.local.during(p.Device, p.Port, pm.At, p.ReadAt); ok {
				// One cable event: the local episode seen from the switch.
				specs = append(specs, witness(p, r, cur, prev, ep))
				pm.Witness = &Witness{Field: r.Field, Delta: cur - prev, At: p.ReadAt, Episode: ep}
				c.restartWindow(pm, r, p.ReadAt, cur)
				continue
			}
		}
		if first && r.Def.ThresholdType == countertable.TypeVelocity && r.Def.Window() < counters.PersistWindowFrom {
			c.restartWindow(pm, r, p.ReadAt, cur)
			continue
		}
		j := c.judgeRow(pm, r, cur, prev, p.ReadAt, elapsed, rateGbps)
		if latched {
			// Congestion is no latch (DESIGN.md difference 14, the local
			// rule): it describes the fabric now, and clears below half
			// of its threshold over a full window.
			if j.full && j.rate < r.Def.Threshold/2 {
				specs = append(specs, c.recovered(p.Device, p.Port, pm, row, "below-half",
					fmt.Sprintf("the switch port lost %.1f%% of the link to backpressure over %s, below half of %s%%",
						j.rate, j.elapsed.Round(time.Second), strconv.FormatFloat(r.Def.Threshold, 'g', -1, 64))))
				delete(pm.Latched, row)
			}
			continue
		}
		if !j.breach {
			continue
		}
		if pm.Latched == nil {
			pm.Latched = map[string]time.Time{}
		}
		pm.Latched[row] = p.ReadAt
		specs = append(specs, c.breach(p, r, cur, prev, j))
	}
	return specs
}

func (c *Check) restartWindow(pm *PortMemory, r *countertable.FarEndRow, at time.Time, v uint64) {
	if windowed(&r.Def) {
		pm.window(r.Def.Name).Restart(at, v)
	}
}

// windowed reports whether a row is judged over a window (a Slide): a
// velocity row, and a congestion row (its share of the link over its
// window, at least a minute, as the local port_xmit_wait's).
func windowed(d *countertable.Definition) bool {
	return d.ThresholdType == countertable.TypeVelocity || d.ThresholdType == countertable.TypeCongestion
}

// judgeRow applies a row's rule: a velocity row by its window, the same
// rule as the local counters' (counters.Slide: per second over the real
// time between two reads, per minute over at least a minute, per hour
// only over a full hour of reads; never extrapolated); a delta row to the
// increase between two reads; a congestion row as the share of the
// link's rate lost to backpressure over its window (the local rule:
// never over less than its unit, so one 10 s spike at a 10 s [farEnd]
// interval is not a congested minute).
func (c *Check) judgeRow(pm *PortMemory, r *countertable.FarEndRow, cur, prev uint64, at time.Time, elapsed time.Duration, rateGbps float64) judged {
	d := &r.Def
	switch d.ThresholdType {
	case countertable.TypeVelocity:
		v := pm.window(d.Name).Judge(d.Window(), d.Threshold, at, cur)
		return judged{full: v.Judged, delta: v.Delta, elapsed: v.Elapsed, rate: v.Rate, unit: d.VelocityUnit, breach: v.Judged && v.Breach}
	case countertable.TypeDelta:
		return judged{delta: cur - prev, elapsed: elapsed, rate: float64(cur-prev) / elapsed.Seconds(), unit: countertable.UnitSecond,
			breach: float64(cur-prev) > d.Threshold}
	case countertable.TypeCongestion:
		v := pm.window(d.Name).Judge(d.Window(), d.Threshold, at, cur)
		if !v.Judged || rateGbps <= 0 {
			// A port whose rate is unknown is not judged: there is no
			// share to compute.
			return judged{}
		}
		_, pct := counters.LostBandwidth(v.PerSec, c.cfg.XmitWaitBytesPerTick, rateGbps)
		return judged{full: true, delta: v.Delta, elapsed: v.Elapsed, rate: pct, unit: "percent", breach: pct > d.Threshold}
	}
	return judged{}
}

// saturation raises a field stuck at its width's maximum, and clears it
// when it moves below: a saturated counter cannot show new errors. An
// acknowledged saturation is not raised again until the field is seen to
// move (read below its maximum: cleared on the fabric side) and saturate
// again: the operator has taken note that this switch port is blind, and
// saying it again at every read would undo the acknowledgement.
func (c *Check) saturation(p *farend.PeerPort, pm *PortMemory, values [wire.NumFields]uint64) []event.Spec {
	var specs []event.Spec
	var done [wire.NumFields]bool
	for i := range c.cfg.Rows {
		r := &c.cfg.Rows[i]
		ix := fieldIndex(r)
		if done[ix] {
			continue
		}
		done[ix] = true
		f := wire.Fields[ix]
		_, sat := pm.Saturated[r.Field]
		_, acked := pm.SaturationAcked[r.Field]
		full := !p.Wide && values[ix] >= f.Max()
		switch {
		case full && !sat && !acked:
			if pm.Saturated == nil {
				pm.Saturated = map[string]time.Time{}
			}
			pm.Saturated[r.Field] = p.ReadAt
			specs = append(specs, saturated(p, r.Field, values[ix], f))
		case !full && sat:
			specs = append(specs, c.unsaturated(p.Device, p.Port, pm, r.Field, fmt.Sprintf("%s reads %d", r.Field, values[ix])))
			delete(pm.Saturated, r.Field)
		case !full && acked:
			delete(pm.SaturationAcked, r.Field)
		}
	}
	return specs
}

// fieldIndex is r's field's slot in a reading's values: the wire owns the
// order; every row names a wire field (countertable.ValidateFarEnd and
// TestFarEndFields_AreWireFields).
func fieldIndex(r *countertable.FarEndRow) int { return wire.FieldIndex(r.Field) }
