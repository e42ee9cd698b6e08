package farend

import (
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
}

// observe takes one cycle's port states; only state polls move it. A
// steady cycle allocates nothing.
func (e *episodes) observe(obs *observe.Observation) {
	if !obs.StatePoll {
		return
	}
	if e.ports == nil {
		e.ports = map[event.PortRef]*localPort{}
	}
	e.polls++
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
	if !obs.Enumerated {
		return
	}
	for _, lp := range e.ports {
		if lp.seen != e.polls && !lp.open {
			lp.open, lp.last = true, Episode{Kind: EpisodeDeviceGone, From: obs.Now}
		}
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
