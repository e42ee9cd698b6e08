package rules

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/config"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

// Reading is one counter file's value; OK is false when the counter is
// not monitored or could not be read this cycle.
type Reading struct {
	Value uint64
	OK    bool
}

// Port is one monitored port as a poll cycle read it: its state and its
// link-down witnesses. carrier_changes is not one (DESIGN.md difference
// 19): an MTU change, an admin down/up or a NetworkManager restart bumps
// it on a healthy port, so it is a netdev event, judged by its own
// non-fatal counter row, never a link flap.
type Port struct {
	Device string
	Port   int
	// Link is the port's state as the poll read it; the zero Link when it
	// could not be read (or is deliberately not known: an uncabled port).
	Link       sysfs.Link
	LinkDowned Reading
	// LinkDownEvents is mlx5's link_down_events_phy (Ethernet ports): the
	// PHY's 64-bit count of the same link downs, which keeps counting
	// after link_downed (8 bits) is stuck at 255.
	LinkDownEvents Reading
}

// Condition is one rule's finding on a port, keyed by (Check, Device,
// Port). The daemon raises it in the health model as a port condition.
type Condition struct {
	Check   string
	Device  string
	Port    int
	Fatal   bool
	Action  event.RecommendedAction
	Message string
	Since   time.Time
}

// Change is a condition the rules raise (Raise) or clear (only Check,
// Device and Port are set).
type Change struct {
	Raise     bool
	Condition Condition
}

// Degraded is an active non-fatal condition of the health model on one of
// a port's entities (the port, a counter, a finding), as the degradation
// rule counts them: Key names the condition (its check and entity), Since
// when it was raised, so a condition that stays active counts once.
type Degraded struct {
	Key    string
	Device string
	Port   int
	Since  time.Time
}

// State is everything the rules remember; persist it with the daemon's
// state so a restart neither forgets a window nor re-counts it.
type State struct {
	BootID string                `json:"bootId"`
	Ports  map[string]*PortState `json:"ports"` // by "<device>/<port>"
}

// PortState is one port's windows.
type PortState struct {
	// Episode witnesses as last read.
	LinkDowned    uint64 `json:"linkDowned"`
	HasLinkDowned bool   `json:"hasLinkDowned"`
	// Episodes each witness saw since the baseline, and the port's total
	// (the largest of them; never decreases).
	ByLinkDowned uint64 `json:"byLinkDowned"`
	// The link_down_events_phy witness, as link_downed's.
	LinkDownEvents    uint64 `json:"linkDownEvents,omitempty"`
	HasLinkDownEvents bool   `json:"hasLinkDownEvents,omitempty"`
	ByLinkDownEvents  uint64 `json:"byLinkDownEvents,omitempty"`
	ByState           uint64 `json:"byState"`
	Total             uint64 `json:"total"`
	// LegacyByCarrier is what a state file of a build that counted
	// carrier_changes as link-downs says that witness saw; read once, to
	// take its episodes back out (restore), never written.
	LegacyByCarrier uint64 `json:"byCarrier,omitempty"`
	// Up: the port was up (sysfs.Link.Up) since the last DOWN; Known: a
	// state was read.
	Up    bool `json:"up"`
	Known bool `json:"known"`

	// FlapWindow counts the episodes within the flap window.
	FlapWindow Window `json:"flapWindow,omitempty"`
	// Episodes is the flap window as state files before FlapWindow held
	// it (one timestamp per episode); New folds it into FlapWindow.
	Episodes    []time.Time `json:"episodes,omitempty"`
	LastEpisode time.Time   `json:"lastEpisode"`
	Flapping    bool        `json:"flapping"`

	// DownSince is when the port was last seen falling into DOWN, or when
	// link_downed last moved while it was DOWN; zero while not DOWN.
	DownSince time.Time `json:"downSince"`
	Dropped   bool      `json:"dropped"`

	// NonFatal are the times of the port's non-fatal events within the
	// degradation window; Seen the raises already counted, by condition
	// key and start time.
	NonFatal  []time.Time          `json:"nonFatal"`
	Seen      map[string]time.Time `json:"seen"`
	Escalated bool                 `json:"escalated"`
}

// Engine evaluates the rules. It is not safe for concurrent use: the poll
// loop owns it.
type Engine struct {
	cfg config.Rules
	st  State
	// pending are the changes a restore decided (a flap a former build
	// raised on carrier_changes alone), returned by the next Cycle.
	pending []Change
}

// New returns an engine with cfg (which must Validate) that resumes from
// st when st was saved on this boot, and starts empty otherwise: rule
// windows clear on reboot.
func New(cfg config.Rules, st State, bootID string) *Engine {
	if st.BootID != bootID || st.Ports == nil {
		st = State{BootID: bootID, Ports: map[string]*PortState{}}
	}
	e := &Engine{cfg: cfg, st: st}
	for _, k := range e.sortedKeys() {
		p := st.Ports[k]
		if p == nil {
			delete(st.Ports, k)
			continue
		}
		if p.bound(cfg) {
			dev, port := splitKey(k)
			e.pending = append(e.pending, Change{Condition: Condition{Check: event.FlapCheck, Device: dev, Port: port,
				Message: fmt.Sprintf("Port %s port %d: %s no longer holds: carrier_changes is a netdev event (MTU change, admin down/up, NetworkManager restart), not a link-down, and fewer than %d link-downs remain in the window",
					dev, port, event.FlapCheck, cfg.Flap.Episodes)}})
		}
	}
	return e
}

// bound brings a restored port's windows to what the engine itself would
// have kept: a state file written by an older version (one timestamp per
// episode) or edited by hand must not size the engine's memory. It
// reports whether the port's flap condition no longer holds once the
// episodes only carrier_changes witnessed are taken out (DESIGN.md
// difference 19).
func (p *PortState) bound(cfg config.Rules) (unflapped bool) {
	for _, t := range p.Episodes {
		p.FlapWindow.Add(t, 1)
	}
	p.Episodes = nil
	if len(p.FlapWindow) > 0 {
		slices.SortStableFunc(p.FlapWindow, func(a, b Bucket) int { return a.At.Compare(b.At) })
		newest := p.FlapWindow[len(p.FlapWindow)-1].At
		p.FlapWindow.Trim(newest, cfg.Flap.Window, cfg.Flap.Episodes)
	}
	// A former build took the largest of four witnesses, carrier_changes
	// among them: the link-down witnesses' total is what is left. The
	// window cannot say which witness saw each of its episodes, so it
	// keeps at most that many (the newest: a real link-down is never
	// forgotten), and a flap that no longer reaches the threshold ends.
	if real := max(p.ByLinkDowned, p.ByLinkDownEvents, p.ByState); p.Total > real || p.LegacyByCarrier > real {
		p.Total = real
		p.FlapWindow.Cap(real)
		if p.Flapping && p.FlapWindow.Count() < uint64(max(cfg.Flap.Episodes, 1)) {
			p.Flapping, unflapped = false, true
		}
	}
	p.LegacyByCarrier = 0
	p.NonFatal = newestTimes(p.NonFatal, cfg.Degradation.Events)
	if p.Seen == nil {
		p.Seen = map[string]time.Time{}
	}
	return unflapped
}

// newestTimes keeps the newest n of ts (in time order): "at least n within
// the window" depends on nothing older.
func newestTimes(ts []time.Time, n int) []time.Time {
	n = max(n, 1)
	if len(ts) <= n {
		return ts
	}
	slices.SortFunc(ts, time.Time.Compare)
	return slices.Delete(ts, 0, len(ts)-n)
}

// State returns a deep copy of the rules' memory for the state file.
func (e *Engine) State() State {
	out := State{BootID: e.st.BootID, Ports: make(map[string]*PortState, len(e.st.Ports))}
	for k, p := range e.st.Ports {
		c := *p
		c.FlapWindow = slices.Clone(p.FlapWindow)
		c.Episodes = nil
		c.NonFatal = slices.Clone(p.NonFatal)
		c.Seen = make(map[string]time.Time, len(p.Seen))
		for sk, sv := range p.Seen {
			c.Seen[sk] = sv
		}
		out.Ports[k] = &c
	}
	return out
}

// Active returns the conditions the rules hold now, to restore the health
// model after a restart.
func (e *Engine) Active(now time.Time) []Condition {
	var out []Condition
	for _, k := range e.sortedKeys() {
		p, ok := e.st.Ports[k]
		if !ok {
			continue
		}
		dev, port := splitKey(k)
		if p.Flapping {
			out = append(out, e.flapCondition(dev, port, p, now))
		}
		if p.Dropped {
			out = append(out, e.dropCondition(dev, port, p, now))
		}
		if p.Escalated {
			out = append(out, e.degradationCondition(dev, port, p, now))
		}
	}
	return out
}

// SetConfig applies a reloaded configuration. A rule switched off clears
// its conditions and forgets its windows; thresholds take effect at the
// next Cycle.
func (e *Engine) SetConfig(cfg config.Rules) []Change {
	var out []Change
	for _, k := range e.sortedKeys() {
		p, ok := e.st.Ports[k]
		if !ok {
			continue
		}
		dev, port := splitKey(k)
		if !cfg.Flap.Enabled {
			if p.Flapping {
				out = append(out, clearChange(event.FlapCheck, dev, port))
			}
			p.Flapping, p.FlapWindow = false, nil
		}
		if !cfg.Drop.Enabled {
			if p.Dropped {
				out = append(out, clearChange(event.DropCheck, dev, port))
			}
			p.Dropped = false
		}
		if !cfg.Degradation.Enabled {
			if p.Escalated {
				out = append(out, clearChange(event.DegradationCheck, dev, port))
			}
			p.Escalated, p.NonFatal = false, nil
		}
	}
	e.cfg = cfg
	return out
}

// Cycle folds one poll cycle into the windows: ports are the monitored
// ports as read at now, degraded the health model's active non-fatal
// conditions (the rules' own excluded). It
// returns the rule conditions raised and cleared, ports in order. A port
// missing from ports is forgotten, and its rule conditions are cleared.
func (e *Engine) Cycle(now time.Time, ports []Port, degraded []Degraded) []Change {
	out := e.pending
	e.pending = nil
	seen := make(map[string]bool, len(ports))
	for i := range ports {
		pt := &ports[i]
		k := key(pt.Device, pt.Port)
		if seen[k] {
			continue
		}
		seen[k] = true
		p, old := e.st.Ports[k]
		if !old {
			p = &PortState{Seen: map[string]time.Time{}}
			e.st.Ports[k] = p
		}
		n := p.episodes(pt, old)
		out = append(out, e.flap(now, pt, p, n)...)
		out = append(out, e.drop(now, pt, p, n)...)
	}
	out = append(out, e.degradation(now, degraded, seen)...)
	for _, k := range e.sortedKeys() {
		if seen[k] {
			continue
		}
		p, ok := e.st.Ports[k]
		if !ok {
			continue
		}
		dev, port := splitKey(k)
		for _, c := range []struct {
			on    bool
			check string
		}{{p.Flapping, event.FlapCheck}, {p.Dropped, event.DropCheck}, {p.Escalated, event.DegradationCheck}} {
			if c.on {
				out = append(out, clearChange(c.check, dev, port))
			}
		}
		delete(e.st.Ports, k)
	}
	return out
}

// episodes counts the link-down episodes pt shows since the previous
// cycle. Each witness (link_downed steps, link_down_events_phy steps,
// falls from ACTIVE to DOWN; never carrier_changes, DESIGN.md difference
// 19) keeps its own running count since the baseline, and the port's
// total is the largest of them: one episode seen by several witnesses
// counts once, also when they see it in different cycles (the counters
// are sampled on a 1 s tick, the state on every poll, so a fall into
// DOWN usually reaches the state witness a poll before link_downed
// steps). A counter that went down was reset: its value is what happened
// since.
func (p *PortState) episodes(pt *Port, old bool) uint64 {
	if pt.LinkDowned.OK {
		if old && p.HasLinkDowned {
			p.ByLinkDowned = addSat(p.ByLinkDowned, delta(p.LinkDowned, pt.LinkDowned.Value))
		}
		p.LinkDowned, p.HasLinkDowned = pt.LinkDowned.Value, true
	}
	if pt.LinkDownEvents.OK {
		if old && p.HasLinkDownEvents {
			p.ByLinkDownEvents = addSat(p.ByLinkDownEvents, delta(p.LinkDownEvents, pt.LinkDownEvents.Value))
		}
		p.LinkDownEvents, p.HasLinkDownEvents = pt.LinkDownEvents.Value, true
	}
	switch {
	case pt.Link.Up():
		p.Up, p.Known = true, true
	case pt.Link.Down():
		if old && p.Known && p.Up {
			p.ByState = addSat(p.ByState, 1)
		}
		p.Up, p.Known = false, true
	}
	total := max(p.ByLinkDowned, p.ByLinkDownEvents, p.ByState)
	n := total - min(total, p.Total)
	p.Total = max(total, p.Total)
	return n
}

// Episodes is the number of link-down episodes of a port since the rules
// first saw it in this boot (0, false for a port they do not know): the
// counter /metrics serves, counted by the same rule the flap rule applies.
func (e *Engine) Episodes(device string, port int) (uint64, bool) {
	p, ok := e.st.Ports[key(device, port)]
	if !ok {
		return 0, false
	}
	return p.Total, true
}

func delta(prev, cur uint64) uint64 {
	if cur >= prev {
		return cur - prev
	}
	return cur
}

// isRule reports whether a condition key is one of the rules' own: a
// key starts with its check name.
func isRule(key string) bool {
	for _, c := range []string{event.FlapCheck, event.DropCheck, event.DegradationCheck} {
		if key == c || strings.HasPrefix(key, c+" ") || strings.HasPrefix(key, c+"|") {
			return true
		}
	}
	return false
}

func key(dev string, port int) string { return dev + "/" + strconv.Itoa(port) }

func splitKey(k string) (string, int) {
	for i := len(k) - 1; i >= 0; i-- {
		if k[i] == '/' {
			n, _ := strconv.Atoi(k[i+1:])
			return k[:i], n
		}
	}
	return k, 0
}

func (e *Engine) sortedKeys() []string {
	ks := make([]string, 0, len(e.st.Ports))
	for k := range e.st.Ports {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b string) int {
		da, pa := splitKey(a)
		db, pb := splitKey(b)
		if c := strings.Compare(da, db); c != 0 {
			return c
		}
		return pa - pb
	})
	return ks
}
