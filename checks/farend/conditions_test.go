package farend

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks/latch"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/mad/farend"
	"github.com/nichealth/nichealthd/mad/wire"
	"github.com/nichealth/nichealthd/observe"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

// poll runs one state poll of the local port at dt after the last
// reading, its link up or down (or its device gone from the enumeration),
// with no new far-end reading.
func (h *harness) poll(dt time.Duration, state string) []event.Spec {
	h.t.Helper()
	h.at = h.at.Add(dt)
	h.obs.Now, h.obs.StatePoll, h.obs.Enumerated = h.at, true, true
	p := h.obs.Ports
	if len(p) == 0 || p[0] == nil {
		h.t.Fatal("no local port")
	}
	port := *p[0]
	port.Observed, port.Readable = true, true
	switch state {
	case "ACTIVE":
		port.Link = sysfs.Link{State: sysfs.PortState{ID: sysfs.StateActive}, Phys: sysfs.PortState{ID: sysfs.PhysLinkUp}}
	case "DOWN":
		port.Link = sysfs.Link{State: sysfs.PortState{ID: sysfs.StateDown}, Phys: sysfs.PortState{ID: sysfs.PhysPolling}}
	}
	saved := h.obs.Ports
	if state == "gone" {
		h.obs.Ports = nil
	} else {
		h.obs.Ports = []*observe.Port{&port}
	}
	out := h.run()
	if state != "gone" {
		*saved[0] = port
	}
	h.obs.Ports = saved
	h.obs.StatePoll = false
	return out
}

func downed(n uint64) func(*wire.PortCounters) {
	return func(c *wire.PortCounters) { c.LinkDownedCounter = n }
}

// latchOrWitness checks a far-end read's events: the one latch wanted
// (latch set) or else one event, returned as the witness to look into.
func latchOrWitness(t *testing.T, specs []event.Spec, latch string) (event.Spec, bool) {
	t.Helper()
	if latch != "" {
		if len(specs) != 1 || specs[0].Kind != event.KindPeerBreach || specs[0].ErrorCode[0] != latch {
			t.Fatalf("want the %s latch, got %v", latch, codes(specs))
		}
		return event.Spec{}, false
	}
	if len(specs) != 1 {
		t.Fatalf("want one witness event, got %v", codes(specs))
	}
	return specs[0], true
}

// DESIGN.md section 13, one cable event: a peer LinkDownedCounter or
// LinkErrorRecoveryCounter increment inside a local link-down episode, a
// driver reload (the RDMA device gone from the enumeration) or a
// lost-function hold of the same port is that episode seen from the
// switch: no peer:link_downed latch, one healthy event of the local port
// carrying the witness and the episode; an increment with no local
// episode stays its own condition.
func TestDesign_13_OneCableEvent(t *testing.T) {
	for _, tc := range []struct {
		name    string
		episode []string // local state polls between the two far-end reads
		set     func(*wire.PortCounters)
		latch   string // "" : the witness, not a latch
		witness string // metadata key of the witness
	}{
		{"link DOWN then ACTIVE within an interval", []string{"ACTIVE", "DOWN", "DOWN", "ACTIVE"}, downed(1), "", "peerLinkDowned"},
		{"driver reload: the device gone two polls", []string{"ACTIVE", "gone", "gone", "ACTIVE"}, downed(1), "", "peerLinkDowned"},
		{"link retrained with the local port down", []string{"ACTIVE", "DOWN", "ACTIVE"},
			func(c *wire.PortCounters) { c.LinkErrorRecoveryCounter = 9 }, "", "peerLinkErrorRecovery"},
		{"local port steadily ACTIVE", []string{"ACTIVE", "ACTIVE", "ACTIVE", "ACTIVE"}, downed(1), "peer:link_downed", ""},
		{"local episode before the previous read", nil, downed(1), "peer:link_downed", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "")
			h.poll(time.Second, "ACTIVE")
			if tc.episode == nil {
				h.poll(time.Second, "DOWN")
				h.poll(time.Second, "ACTIVE")
			}
			h.read(time.Second, leaf1, nil)
			for _, st := range tc.episode {
				h.poll(10*time.Second, st)
			}
			specs := h.read(10*time.Second, leaf1, tc.set)
			s, isWitness := latchOrWitness(t, specs, tc.latch)
			if !isWitness {
				return
			}
			if s.Kind != event.KindPeerRecovered || !s.IsHealthy || s.Metadata["reason"] != "local-episode" || s.Metadata[tc.witness] == "" ||
				s.Metadata["episodeFrom"] == "" || s.Metadata["episodeTo"] == "" || s.Device != "mlx5_0" || s.Port != 1 ||
				!strings.Contains(s.Message, "seen from the switch: one cable event, no far-end condition") {
				t.Fatalf("witness %+v", s)
			}
			if v := h.c.View("mlx5_0", 1); len(v.Latched) != 0 || v.Witness == nil {
				t.Fatalf("view %+v", v)
			}
			// The next increment with the port steadily up is its own.
			h.poll(10*time.Second, "ACTIVE")
			if specs := h.read(50*time.Second, leaf1, func(c *wire.PortCounters) { tc.set(c); c.LinkDownedCounter++ }); len(specs) != 1 || specs[0].Kind != event.KindPeerBreach {
				t.Fatalf("a later link-down with no local episode: %v", codes(specs))
			}
		})
	}
}

// DESIGN.md section 13: a saturated peer field is one acknowledgeable
// visibility-lost condition per counter whose fix names the switch port
// and perfquery -R. An acknowledgement clears it; it is raised again only
// once the field has been seen to move (cleared on the fabric side) and
// saturates again, not at the next read.
func TestDesign_13_SaturatedFieldAcknowledged(t *testing.T) {
	h := newHarness(t, "")
	h.read(0, leaf1, nil)
	full := func(c *wire.PortCounters) { c.SymbolErrorCounter = 65535 }
	specs := h.read(time.Minute, leaf1, full)
	var sat *event.Spec
	for i := range specs {
		if specs[i].Kind == event.KindPeerSaturated {
			if sat != nil {
				t.Fatalf("two saturations of one field: %v", codes(specs))
			}
			sat = &specs[i]
		}
	}
	if sat == nil || sat.ErrorCode[0] != "peer-saturated:SymbolErrorCounter" || sat.IsFatal ||
		!strings.HasPrefix(sat.Message, "Direct-attached ibsw-leaf1 port 17: [SymbolErrorCounter == 65535] saturated (16-bit field)") ||
		!strings.Contains(sat.Message, "perfquery -R 1 17") || !strings.Contains(sat.Message, "switch ibsw-leaf1 port 17") ||
		strings.Contains(sat.Message, "|") {
		t.Fatalf("saturation %+v", sat)
	}
	if !IsCode("peer-saturated:SymbolErrorCounter") || IsCode("peer-saturated:Bogus") || IsCode("saturated:symbol_error") {
		t.Fatal("IsCode")
	}
	if v := h.c.View("mlx5_0", 1); strings.Join(v.Codes, " ") != "peer:symbol_error peer-saturated:SymbolErrorCounter" {
		t.Fatalf("view codes %v", v.Codes)
	}
	acks, err := h.c.Acknowledge("mlx5_0", 1, "peer-saturated:SymbolErrorCounter", "uid 0")
	if err != nil || len(acks) != 1 || acks[0].Kind != event.KindPeerUnsaturated || !acks[0].IsHealthy ||
		acks[0].Metadata["acknowledgedBy"] != "uid 0" || acks[0].ErrorCode[0] != "peer-saturated:SymbolErrorCounter" {
		t.Fatalf("ack %v %v", codes(acks), err)
	}
	if _, err := h.c.Acknowledge("mlx5_0", 1, "peer-saturated:SymbolErrorCounter", "uid 0"); !errors.Is(err, ErrNotLatched) {
		t.Fatalf("second ack: %v", err)
	}
	// A restart keeps the acknowledgement (the section, or the outbox's
	// replay when the state was not saved).
	raw, _ := h.c.Marshal()
	c2 := NewCheck()
	c2.Restore(raw)
	ev := event.New(acks[0], event.Stamp{NodeName: "n", Now: h.at})
	c3 := NewCheck()
	c3.Restore(raw)
	c3.mem.Ports[latch.PortOf("mlx5_0", 1)].SaturationAcked = nil
	c3.Replay(&ev)
	for _, c := range []*Check{c2, c3} {
		if _, ok := c.mem.Ports[latch.PortOf("mlx5_0", 1)].SaturationAcked["SymbolErrorCounter"]; !ok {
			t.Fatal("the acknowledgement did not survive a restart")
		}
	}
	if specs := h.read(time.Minute, leaf1, full); len(specs) != 0 {
		t.Fatalf("still saturated after the ack: %v", codes(specs))
	}
	// Cleared on the fabric side, it moves: nothing to say (it was
	// acknowledged); saturating again raises it again.
	if got := strings.Join(codes(h.read(time.Minute, leaf1, sym(3))), " "); strings.Contains(got, "saturated") {
		t.Fatalf("cleared: %s", got)
	}
	specs = h.read(time.Minute, leaf1, full)
	if got := strings.Join(codes(specs), " "); !strings.Contains(got, "peer-saturated peer-saturated:SymbolErrorCounter") {
		t.Fatalf("saturated again: %s", got)
	}
}

// DESIGN.md section 13, peer churn: three peers within an hour are one
// non-fatal "peer unstable" finding naming the GUIDs and ports seen
// (bounded), latched across the changes, not a finding per read; it
// clears once the same peer has been read for an hour.
func TestDesign_13_PeerUnstable(t *testing.T) {
	h := newHarness(t, "")
	peer := func(i int) farend.Peer {
		p := leaf1
		p.NodeGUID = "0xb83fd20300a0100" + string(rune('0'+i))
		p.Port = 10 + i
		p.Name = "ibsw-leaf" + string(rune('0'+i))
		return p
	}
	h.read(0, peer(1), nil)
	if specs := h.read(10*time.Minute, peer(2), nil); len(specs) != 0 {
		t.Fatalf("one recabling is not churn: %v", codes(specs))
	}
	specs := h.read(10*time.Minute, peer(3), nil)
	if len(specs) != 1 || specs[0].Kind != event.KindPeerBreach || specs[0].ErrorCode[0] != "peer:unstable" || specs[0].IsFatal {
		t.Fatalf("third peer in 20 minutes: %v", codes(specs))
	}
	for _, w := range []string{"peer unstable", "0xb83fd20300a01001 port 11 (ibsw-leaf1)", "0xb83fd20300a01002 port 12", "0xb83fd20300a01003 port 13"} {
		if !strings.Contains(specs[0].Message, w) {
			t.Fatalf("message lacks %q: %s", w, specs[0].Message)
		}
	}
	// It keeps changing: said once, memory bounded.
	for i := range 40 {
		if specs := h.read(time.Minute, peer(1+i%5), nil); len(specs) != 0 {
			t.Fatalf("read %d: %v", i, codes(specs))
		}
		if n := len(h.c.Memory().Ports[latch.PortOf("mlx5_0", 1)].Peers); n > MaxPeersSeen {
			t.Fatalf("%d peers remembered", n)
		}
	}
	// The same peer for an hour: cleared.
	var cleared []string
	for i := range 61 {
		for _, s := range h.read(time.Minute, peer(4), nil) {
			cleared = append(cleared, codes([]event.Spec{s})[0])
			if i != 60 || !s.IsHealthy || s.Metadata["reason"] != "peer-stable" {
				t.Fatalf("minute %d: %+v", i, s)
			}
		}
	}
	if len(cleared) != 1 {
		t.Fatalf("cleared %v", cleared)
	}
}

// localTicks feeds mlx5_0 port 1's own link_downed and link_error_recovery
// to the check as counter ticks (cycles that are no state poll).
type localTicks struct {
	h    *harness
	last time.Time
}

func (lt *localTicks) tick(dt time.Duration, downed, recovery uint64) []event.Spec {
	lt.h.t.Helper()
	lt.h.at = lt.h.at.Add(dt)
	if lt.last.IsZero() {
		// Counter ticks ran before the check first saw one (the far
		// end switched on by a reload).
		lt.last = lt.h.at.Add(-10 * time.Second)
	}
	dir := "/sys/class/infiniband/mlx5_0/ports/1/counters/"
	lt.h.obs.Ports[0].Samples = []observe.Sample{
		{Path: dir + "symbol_error", Value: 99, At: lt.h.at, Since: lt.last},
		{Path: dir + "link_downed", Value: downed, At: lt.h.at, Since: lt.last},
		{Path: dir + "link_error_recovery", Value: recovery, At: lt.h.at, Since: lt.last},
	}
	lt.last = lt.h.at
	lt.h.obs.Now = lt.h.at
	return lt.h.run()
}

// DESIGN.md section 13, one cable event, for a flap or retrain shorter
// than a state poll: every poll saw the port ACTIVE, but its own
// link_downed (or link_error_recovery) rose between two counter ticks.
// That local count is the cable event; the switch's count of the same
// flap is its witness, not a second condition (peer:link_downed). The
// witness names no length: only the two ticks bound the flap.
func TestDesign_13_OneCableEvent_FlapShorterThanAPoll(t *testing.T) {
	for _, tc := range []struct {
		name string
		// the local counters at the tick before and the tick after the
		// previous far-end read (first), and at the tick before the next
		// read (second); startAfterRead: the first tick is after the read.
		before, after [2]uint64
		base          *[2]uint64 // a tick before "before"
		firstTickLate bool
		set           func(*wire.PortCounters)
		latch         string
		witness       string
	}{
		{name: "link_downed +1, LinkDownedCounter +1", before: [2]uint64{4, 0}, after: [2]uint64{5, 0}, set: downed(1), witness: "peerLinkDowned"},
		{name: "link_error_recovery +1, LinkErrorRecoveryCounter +1", before: [2]uint64{4, 7}, after: [2]uint64{4, 8},
			set: func(c *wire.PortCounters) { c.LinkErrorRecoveryCounter = 1 }, witness: "peerLinkErrorRecovery"},
		// A flap counted before the previous read and another after it:
		// the first does not hide the second.
		{name: "link_downed +1 at two ticks in a row", base: &[2]uint64{3, 0}, before: [2]uint64{4, 0}, after: [2]uint64{5, 0}, set: downed(1), witness: "peerLinkDowned"},
		{name: "local counters steady", before: [2]uint64{4, 7}, after: [2]uint64{4, 7}, set: downed(1), latch: "peer:link_downed"},
		{name: "local counters went back (cleared)", before: [2]uint64{4, 7}, after: [2]uint64{0, 0}, set: downed(1), latch: "peer:link_downed"},
		// The check's first tick has nothing to compare with: a count
		// from before it started (or before a reload switched the far
		// end on) is no episode.
		{name: "first tick only", before: [2]uint64{5, 0}, after: [2]uint64{5, 0}, firstTickLate: true, set: downed(1), latch: "peer:link_downed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "")
			lt := &localTicks{h: h}
			h.poll(time.Second, "ACTIVE")
			if tc.base != nil {
				lt.tick(time.Second, tc.base[0], tc.base[1])
			}
			if !tc.firstTickLate {
				lt.tick(time.Second, tc.before[0], tc.before[1])
			}
			h.read(time.Second, leaf1, nil)
			h.poll(10*time.Second, "ACTIVE")
			lt.tick(10*time.Second, tc.after[0], tc.after[1])
			h.poll(10*time.Second, "ACTIVE")
			specs := h.read(30*time.Second, leaf1, tc.set)
			s, isWitness := latchOrWitness(t, specs, tc.latch)
			if !isWitness {
				return
			}
			if s.Kind != event.KindPeerRecovered || !s.IsHealthy || s.Metadata["reason"] != "local-episode" || s.Metadata[tc.witness] != "+1" ||
				s.Metadata["episodeKind"] != EpisodeCounted || s.Metadata["episodeFrom"] == "" || s.Metadata["episodeTo"] == "" ||
				s.Metadata["episodeDuration"] != "" || !strings.Contains(s.Message, "shorter than a state poll") {
				t.Fatalf("witness %+v", s)
			}
			// The flap is counted once: the next increment with the
			// local counters steady is the switch's own.
			lt.tick(10*time.Second, tc.after[0], tc.after[1])
			if specs := h.read(50*time.Second, leaf1, func(c *wire.PortCounters) { tc.set(c); c.LinkDownedCounter++; c.LinkErrorRecoveryCounter++ }); len(specs) == 0 || specs[0].Kind != event.KindPeerBreach {
				t.Fatalf("a later increment with the local counters steady: %v", codes(specs))
			}
		})
	}
}
