package metrics

import (
	"sync"

	"github.com/nichealth/nichealthd/checks/health"
)

// A link-down episode is one loss of a port's link: the link_downed counter
// stepping (InfiniBand), carrier_changes stepping by a down+up pair (RoCE),
// or the logical state falling from ACTIVE to DOWN. One episode usually shows in more
// than one witness at once, so between two observations the port is
// credited with the largest count any single witness shows, never their
// sum: a flap counted by link_downed and by the state cycle is one episode.
//
// The count is made on the endpoint's side, from the same views each scrape
// reads, so it needs nothing from the poll loop. The counter witnesses are
// cumulative and lose nothing between scrapes; only the state witness can
// miss a down-and-up that fits between two scrapes, and it matters only
// when a port has neither counter (disabled, unreadable or saturated).
// Fleet rules take increase() of this counter, which is why it exists
// apart from nichealth_hwcounter_value (a gauge: hardware counters reset,
// saturate and can be disabled).

type portKey struct {
	device string
	port   int
}

// portEpisodes is what the tracker remembers of one port between scrapes.
type portEpisodes struct {
	total      uint64
	linkDowned uint64
	carrier    uint64
	hasLD      bool
	hasCC      bool
	// carrierChanges counts carrier changes since the baseline; an
	// episode is a down+up pair, counted at its first half: a carrier that
	// went down and is not back yet is an episode already, and its coming
	// back is not a second one.
	carrierChanges uint64
	up             bool // last known logical state was ACTIVE or ACTIVE_DEFER
	known          bool // up holds a state read at least once
	seen           uint64
}

// episodeTracker turns successive port views into a per-port episode
// total. Its methods are safe for concurrent use; the handler calls observe
// from one gather at a time anyway.
type episodeTracker struct {
	mu    sync.Mutex
	gen   uint64
	ports map[portKey]*portEpisodes
}

// observe folds one snapshot's ports into the totals and returns each port's
// total, indexed like ports. A port seen for the first time starts at 0:
// its counters' current values are a baseline, not episodes this process
// saw. A port missing from a view is forgotten, so a port that comes back
// restarts from 0, which Prometheus reads as a counter reset.
func (t *episodeTracker) observe(ports []health.Port, out []uint64) []uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ports == nil {
		t.ports = map[portKey]*portEpisodes{}
	}
	t.gen++
	out = out[:0]
	for i := range ports {
		pv := &ports[i]
		k := portKey{pv.Device, pv.Port}
		st, ok := t.ports[k]
		if !ok {
			st = &portEpisodes{}
			t.ports[k] = st
		}
		if st.seen != t.gen { // a view listing a port twice counts it once
			st.seen = t.gen
			st.step(pv, ok)
		}
		out = append(out, st.total)
	}
	for k, st := range t.ports {
		if st.seen != t.gen {
			delete(t.ports, k)
		}
	}
	return out
}

// step credits the episodes pv shows since the previous view. old is false
// for a port's first view, which only sets the baseline.
func (st *portEpisodes) step(pv *health.Port, old bool) {
	var byLD, byCC, byState uint64
	for i := range pv.Counters {
		c := &pv.Counters[i]
		switch c.Name {
		case "link_downed":
			if old && st.hasLD {
				byLD = counterDelta(st.linkDowned, c.Value)
			}
			st.linkDowned, st.hasLD = c.Value, true
		case "carrier_changes":
			if old && st.hasCC {
				before := (st.carrierChanges + 1) / 2
				st.carrierChanges += counterDelta(st.carrier, c.Value)
				byCC = (st.carrierChanges+1)/2 - before
			} else if pv.State == "DOWN" {
				// Down at the baseline: its coming back completes a pair
				// whose first half this process did not see.
				st.carrierChanges = 1
			}
			st.carrier, st.hasCC = c.Value, true
		}
	}
	// The state witness counts a fall into DOWN after the link was ACTIVE:
	// a logical INIT or ARMED with the link up (a subnet manager
	// re-sweep) is not a link loss, and a port cycling between DOWN and
	// INIT without ever coming up has dropped rather than flapped.
	switch pv.State {
	case "ACTIVE", "ACTIVE_DEFER":
		st.up, st.known = true, true
	case "DOWN":
		if old && st.known && st.up {
			byState = 1
		}
		st.up, st.known = false, true
	}
	st.total += max(byLD, byCC, byState)
}

// counterDelta is how far a hardware counter moved. A smaller value is a
// reset (an administrator's perfquery -x, a driver reload): what it reads
// now is what happened since, as the counter checks treat it (DESIGN.md
// difference 11).
func counterDelta(prev, cur uint64) uint64 {
	if cur >= prev {
		return cur - prev
	}
	return cur
}
