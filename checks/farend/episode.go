package farend

import (
	"path/filepath"
	"slices"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/observe"
	"github.com/nichealth/nichealthd/topology"
)

// Kinds of a local episode.
const (
	// EpisodeLinkDown: the local port was seen out of ACTIVE/LinkUp.
	EpisodeLinkDown = "link-down"
	// EpisodeDeviceGone: the local port's RDMA device was missing from
	// the enumeration (a driver reload, a lost function while its hold
	// runs, a hot plug).
	EpisodeDeviceGone = "device-gone"
	// EpisodeCounted: the local port's own link_downed or
	// link_error_recovery rose between two counter ticks while every
	// state poll saw it ACTIVE: a flap or retrain shorter than a poll.
	// Its From and To are the two ticks, not the link's own times.
	EpisodeCounted = "counted"
)

// Episode is a local port's time away from ACTIVE, as the cycle's
// observation showed it (the port check's reading, never sysfs again).
type Episode struct {
	Kind string    `json:"kind"`
	From time.Time `json:"from"`
	// To is when the port was ACTIVE again; zero while it lasts.
	To time.Time `json:"to,omitempty"`
}

// Duration is how long the episode lasted (0 while it lasts).
func (e Episode) Duration() time.Duration {
	if e.To.IsZero() {
		return 0
	}
	return e.To.Sub(e.From)
}

// overlaps reports whether the episode reaches into (from, to]: the time
// between two reads of the far end.
func (e Episode) overlaps(from, to time.Time) bool {
	if e.From.IsZero() || e.From.After(to) {
		return false
	}
	return e.To.IsZero() || !e.To.Before(from)
}

// episodes follows each local InfiniBand port's last episode. A peer's
// LinkDownedCounter or LinkErrorRecoveryCounter that rose across such an
// episode is that episode seen from the switch (DESIGN.md section 13):
// one cable event, not a second condition. Kept in memory only: an
// episode that fell while the daemon was stopped is not known, and the
// far end's increment is then its own condition, as before.
type episodes struct {
	polls uint64
	ports map[event.PortRef]*localPort
}

type localPort struct {
	seen uint64 // the state poll that last listed the port
	open bool
	last Episode
	// The local link counters as last sampled, by file name, and the
	// tick they stand for: a rise between two ticks is a counted episode.
	counted   [len(countedFiles)]uint64
	countedAt time.Time
}

// countedFiles are the local counters that move when the link itself
// goes down or retrains, as the switch's LinkDownedCounter and
// LinkErrorRecoveryCounter do for the same cable.
var countedFiles = [...]string{"link_downed", "link_error_recovery"}

// observe takes one cycle's port states (state polls) and local link
// counters (counter ticks). A steady cycle allocates nothing.
func (e *episodes) observe(obs *observe.Observation) {
	if e.ports == nil {
		e.ports = map[event.PortRef]*localPort{}
	}
	if obs.StatePoll {
		e.polls++
	}
	for _, p := range obs.Ports {
		if p.Port.LinkLayer != topology.LinkLayerInfiniBand {
			continue
		}
		k := p.Key()
		lp := e.ports[k]
		if lp == nil {
			if len(e.ports) >= MaxPorts {
				clear(e.ports)
			}
			lp = &localPort{}
			e.ports[k] = lp
		}
		lp.count(p)
		if !obs.StatePoll {
			continue
		}
		lp.seen = e.polls
		if !p.Observed || !p.Readable {
			continue // not read this poll: nothing to say of it
		}
		switch up := p.Link.Up(); {
		case !up && !lp.open:
			lp.open, lp.last = true, Episode{Kind: EpisodeLinkDown, From: obs.Now}
		case up && lp.open:
			lp.open, lp.last.To = false, obs.Now
		}
	}
	if !obs.StatePoll || !obs.Enumerated {
		return
	}
	for _, lp := range e.ports {
		if lp.seen != e.polls && !lp.open {
			lp.open, lp.last = true, Episode{Kind: EpisodeDeviceGone, From: obs.Now}
		}
	}
}

// count takes the port's link counters from a new counter tick. A flap
// shorter than a state poll leaves no state the polls could see, but the
// port's own link_downed counts it; without this the switch's count of
// the same flap was a second condition (peer:link_downed) beside the
// local one. An episode the polls saw is not replaced: it is the better
// account of the same time.
func (lp *localPort) count(p *observe.Port) {
	var at, since time.Time
	rose := false
	for i := range p.Samples {
		s := &p.Samples[i]
		if s.Err != nil {
			continue
		}
		j := slices.Index(countedFiles[:], filepath.Base(s.Path))
		if j < 0 || filepath.Base(filepath.Dir(s.Path)) != "counters" || s.At.Equal(lp.countedAt) {
			continue
		}
		if !lp.countedAt.IsZero() && s.Value > lp.counted[j] {
			rose = true
		}
		lp.counted[j] = s.Value
		at, since = s.At, s.Since
	}
	if at.IsZero() {
		return
	}
	lp.countedAt = at
	if !rose || lp.open {
		return
	}
	switch {
	case lp.last.Kind == EpisodeCounted && !lp.last.To.Before(since):
		// Rises at consecutive ticks: one span, so the first cannot
		// hide the second.
		lp.last.To = at
	case lp.last.overlaps(since, at):
	default:
		lp.last = Episode{Kind: EpisodeCounted, From: since, To: at}
	}
}

// during is the local episode of device/port that reaches into (from,
// to], if any.
func (e *episodes) during(device string, port int, from, to time.Time) (Episode, bool) {
	lp := e.ports[event.PortRef{Device: device, Port: port}]
	if lp == nil || !lp.last.overlaps(from, to) {
		return Episode{}, false
	}
	return lp.last, true
}

// rename follows a device renamed under the same PCI address.
func (e *episodes) rename(old, nw string) {
	for k, lp := range e.ports {
		if k.Device == old {
			delete(e.ports, k)
			e.ports[event.PortRef{Device: nw, Port: k.Port}] = lp
		}
	}
}
