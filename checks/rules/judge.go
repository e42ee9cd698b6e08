package rules

import (
	"fmt"
	"slices"
	"time"

	"github.com/nichealth/nichealthd/event"
)

// flap records the cycle's n episodes and judges the flap window.
func (e *Engine) flap(now time.Time, pt *Port, p *PortState, n uint64) []Change {
	cfg := e.cfg.Flap
	if !cfg.Enabled {
		return nil
	}
	// n is a number, never a loop count: a counter that jumps by 2^64-1
	// is one bucket.
	p.FlapWindow.Add(now, n)
	if n > 0 {
		p.LastEpisode = now
	}
	p.FlapWindow.Trim(now, cfg.Window, cfg.Episodes)
	switch {
	case !p.Flapping && p.FlapWindow.Count() >= uint64(cfg.Episodes):
		p.Flapping = true
		return []Change{{Raise: true, Condition: e.flapCondition(pt.Device, pt.Port, p, now)}}
	case p.Flapping && now.Sub(p.LastEpisode) >= cfg.Stabilization:
		p.Flapping = false
		return []Change{clearChange(event.FlapCheck, pt.Device, pt.Port)}
	}
	return nil
}

// drop judges how long the port has been DOWN; n is the cycle's episodes.
func (e *Engine) drop(now time.Time, pt *Port, p *PortState, n uint64) []Change {
	switch {
	case !pt.Link.Known():
		return nil // unreadable: keep what is known
	case pt.Link.Down():
		// The fall itself is the episode of the first DOWN cycle; any
		// later one while DOWN (link_downed moving, the carrier coming
		// and going) is a recovery attempt, and the seed's drop needs
		// none in the whole period, so the period restarts.
		if p.DownSince.IsZero() || n > 0 {
			p.DownSince = now
		}
	default:
		p.DownSince = time.Time{}
		if p.Dropped {
			p.Dropped = false
			return []Change{clearChange(event.DropCheck, pt.Device, pt.Port)}
		}
		return nil
	}
	if e.cfg.Drop.Enabled && !p.Dropped && now.Sub(p.DownSince) >= e.cfg.Drop.After {
		p.Dropped = true
		return []Change{{Raise: true, Condition: e.dropCondition(pt.Device, pt.Port, p, now)}}
	}
	return nil
}

// degradation counts the non-fatal conditions newly raised on each port
// (a condition's start time identifies its raise, so a condition that
// stays active counts once) and escalates at the threshold. The rules'
// own conditions are not counted.
func (e *Engine) degradation(now time.Time, degraded []Degraded, ports map[string]bool) []Change {
	cfg := e.cfg.Degradation
	if !cfg.Enabled {
		return nil
	}
	active := map[string]map[string]bool{}
	for i := range degraded {
		d := &degraded[i]
		if d.Device == "" || d.Port == 0 || isRule(d.Key) {
			continue
		}
		k := key(d.Device, d.Port)
		p := e.st.Ports[k]
		if p == nil || !ports[k] {
			continue
		}
		if active[k] == nil {
			active[k] = map[string]bool{}
		}
		active[k][d.Key] = true
		since := d.Since
		if since.IsZero() {
			since = now
		}
		if prev, ok := p.Seen[d.Key]; ok && prev.Equal(since) {
			continue
		}
		p.Seen[d.Key] = since
		p.NonFatal = append(p.NonFatal, since)
	}
	var out []Change
	for _, k := range e.sortedKeys() {
		if !ports[k] {
			continue
		}
		p, ok := e.st.Ports[k]
		if !ok {
			continue
		}
		for ck := range p.Seen {
			if !active[k][ck] {
				delete(p.Seen, ck)
			}
		}
		p.NonFatal = slices.DeleteFunc(p.NonFatal, func(t time.Time) bool { return now.Sub(t) >= cfg.Window })
		p.NonFatal = newestTimes(p.NonFatal, cfg.Events)
		dev, port := splitKey(k)
		switch {
		case !p.Escalated && len(p.NonFatal) >= cfg.Events:
			p.Escalated = true
			out = append(out, Change{Raise: true, Condition: e.degradationCondition(dev, port, p, now)})
		case p.Escalated && len(p.NonFatal) < cfg.Events && len(active[k]) == 0:
			p.Escalated = false
			out = append(out, clearChange(event.DegradationCheck, dev, port))
		}
	}
	return out
}

func clearChange(check, dev string, port int) Change {
	return Change{Condition: Condition{Check: check, Device: dev, Port: port}}
}

// The messages follow the seed: "NIC port flapping detected" is the
// analyzer's text for RepeatedNICLinkFlap.
func (e *Engine) flapCondition(dev string, port int, p *PortState, now time.Time) Condition {
	cfg := e.cfg.Flap
	return Condition{Check: event.FlapCheck, Device: dev, Port: port, Fatal: true,
		Action: event.ActionReplaceVM, Since: now,
		Message: fmt.Sprintf("Port %s port %d: NIC port flapping detected (%d link-down episodes within %s; held until stable for %s)",
			dev, port, max(p.FlapWindow.Count(), uint64(cfg.Episodes)), cfg.Window, cfg.Stabilization)}
}

func (e *Engine) dropCondition(dev string, port int, p *PortState, now time.Time) Condition {
	since := p.DownSince
	if since.IsZero() {
		since = now
	}
	return Condition{Check: event.DropCheck, Device: dev, Port: port, Fatal: true,
		Action: event.ActionReplaceVM, Since: now,
		Message: fmt.Sprintf("Port %s port %d: port dropped (DOWN since %s, %s or more, with no link_downed change)",
			dev, port, since.UTC().Format(time.RFC3339), e.cfg.Drop.After)}
}

func (e *Engine) degradationCondition(dev string, port int, p *PortState, now time.Time) Condition {
	cfg := e.cfg.Degradation
	return Condition{Check: event.DegradationCheck, Device: dev, Port: port, Fatal: true,
		Action: event.ActionReplaceVM, Since: now,
		Message: fmt.Sprintf("Port %s port %d: repeated NIC degradation (%d non-fatal degradation events of the port within %s)",
			dev, port, max(len(p.NonFatal), cfg.Events), cfg.Window)}
}
