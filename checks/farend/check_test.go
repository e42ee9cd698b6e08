package farend

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/checks/latch"
	"github.com/nichealth/nichealthd/config"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/mad"
	"github.com/nichealth/nichealthd/mad/farend"
	"github.com/nichealth/nichealthd/mad/wire"
	"github.com/nichealth/nichealthd/observe"
	"github.com/nichealth/nichealthd/topology"
)

type boundary struct{}

func (boundary) Run(_ string, _ []string, fn func()) { fn() }
func (boundary) Enter(string)                        {}
func (boundary) Failed(string) bool                  { return false }

// harness runs the check over readings the test writes, as the reader
// would publish them.
type harness struct {
	t   testing.TB
	c   *Check
	cy  *checks.Cycle
	obs observe.Observation
	gen uint64
	seq uint64
	at  time.Time
	rd  *farend.PeerReading
}

var leaf1 = farend.Peer{Peer: wire.Peer{NodeGUID: "0xb83fd20300a01000", PortGUID: "0xb83fd20300a01000", NodeType: 2, NumPorts: 41, Port: 17, LID: 1,
	Description: "MF0;ibsw-leaf1:MQM8700/U1", State: 4, PhysState: 5}, Name: "ibsw-leaf1"}

func newHarness(t testing.TB, toml string) *harness {
	t.Helper()
	cfg, err := config.Parse("c.toml", []byte(toml))
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, c: NewCheck(), cy: checks.NewCycle(boundary{}), at: time.Unix(1_800_000_000, 0)}
	h.c.Configure(Config{On: cfg.FarEnd.Enabled, Rows: cfg.FarEnd.Rows, XmitWaitBytesPerTick: cfg.XmitWaitBytesPerTick})
	dev := &topology.Device{Name: "mlx5_0"}
	h.obs.Ports = []*observe.Port{{Device: dev, Port: &topology.Port{Num: 1, LinkLayer: topology.LinkLayerInfiniBand}, RateGbps: 400}}
	return h
}

// read publishes one reading of mlx5_0 port 1's peer taken dt after the
// last one, with the SymbolErrorCounter and others given, and runs the
// check on it.
func (h *harness) read(dt time.Duration, peer farend.Peer, set func(*wire.PortCounters)) []event.Spec {
	h.t.Helper()
	h.gen++
	h.seq++
	h.at = h.at.Add(dt)
	var pc wire.PortCounters
	if set != nil {
		set(&pc)
	}
	h.rd = &farend.PeerReading{Gen: h.gen, At: h.at, Helper: mad.State{Health: mad.Running},
		Ports: []farend.PeerPort{{Device: "mlx5_0", Port: 1, GUID: "0xa088c20300ab0001", Found: true, Peer: peer, Read: true, Seq: h.seq, ReadAt: h.at, Counters: pc}}}
	return h.run()
}

func (h *harness) run() []event.Spec {
	h.obs.FarEnd = h.rd
	var out []event.Spec
	h.cy.Reset(&h.obs, &out)
	h.c.Run(h.cy)
	return out
}

func sym(n uint64) func(*wire.PortCounters) {
	return func(c *wire.PortCounters) { c.SymbolErrorCounter = n }
}

func codes(specs []event.Spec) []string {
	var out []string
	for _, s := range specs {
		out = append(out, string(s.Kind)+" "+strings.Join(s.ErrorCode, ","))
	}
	return out
}

// The slides' remote errors check: 655 symbol errors on the switch port
// cabled to us within one 60 s interval (10.9/s) are a non-fatal
// condition on our port, in the slides' words naming the switch and its
// port, then the rule's: the seed's 10/second (symbol_error) judged over
// the 60 s between the reads. The 120/hour rule (symbol_error_fatal) waits
// for an hour of reads.
func TestSlides_RemoteErrorsCheck_SymbolErrors(t *testing.T) {
	h := newHarness(t, "")
	if specs := h.read(0, leaf1, sym(0)); len(specs) != 0 {
		t.Fatalf("the first reading is a baseline, got %v", codes(specs))
	}
	specs := h.read(60*time.Second, leaf1, sym(655))
	if len(specs) != 1 {
		t.Fatalf("got %v", codes(specs))
	}
	s := specs[0]
	if s.Kind != event.KindPeerBreach || s.CheckName != "InfiniBandFarEndCheck" || s.IsFatal || s.IsHealthy ||
		s.Device != "mlx5_0" || s.Port != 1 || s.ErrorCode[0] != "peer:symbol_error" ||
		!strings.HasPrefix(s.Message, "Direct-attached ibsw-leaf1 port 17: [SymbolErrorCounter == 655] symbol_error - ") ||
		s.Metadata["peerGUID"] != "0xb83fd20300a01000" || s.Metadata["peerPort"] != "17" || s.Metadata["peerName"] != "ibsw-leaf1" ||
		s.Metadata["threshold"] != "10" || s.Metadata["rate"] != "10.92" || s.Metadata["window"] != "1s" || s.Metadata["elapsed"] != "1m0s" {
		t.Fatalf("breach %+v", s)
	}
	// Latched: more errors say nothing more until an hour of reads
	// exists; then the hourly rule speaks, once.
	var fatal []string
	for m := 2; m <= 61; m++ {
		for _, s := range h.read(60*time.Second, leaf1, sym(655+uint64(m))) {
			fatal = append(fatal, fmt.Sprintf("minute %d: %s", m, s.ErrorCode[0]))
		}
	}
	if len(fatal) != 1 || fatal[0] != "minute 60: peer:symbol_error_fatal" {
		t.Fatalf("want symbol_error_fatal at minute 60 only, got %v", fatal)
	}
}

// The seed's thresholds over the elapsed time, each at its boundary:
// symbol_error 10/second, link_error_recovery 5/minute, link_downed and
// the integrity counters any increase.
func TestDesign_13_SeedThresholdsOverTheElapsedTime(t *testing.T) {
	for _, tc := range []struct {
		name   string
		dt     time.Duration
		set    func(*wire.PortCounters)
		raised string // the row that must breach ("" none)
		quiet  string // a row that must not
	}{
		{"symbol 600 in 60s is 10/s, not above", 60 * time.Second, sym(600), "", "peer:symbol_error"},
		{"symbol 11 in 1s", time.Second, sym(11), "peer:symbol_error", ""},
		{"symbol 3 in 60s: no hour of reads yet", 60 * time.Second, sym(3), "", "peer:symbol_error_fatal"},
		{"recovery 5 in 60s", 60 * time.Second, func(c *wire.PortCounters) { c.LinkErrorRecoveryCounter = 5 }, "", "peer:link_error_recovery"},
		{"recovery 6 in 60s", 60 * time.Second, func(c *wire.PortCounters) { c.LinkErrorRecoveryCounter = 6 }, "peer:link_error_recovery", ""},
		{"link downed 1", 60 * time.Second, func(c *wire.PortCounters) { c.LinkDownedCounter = 1 }, "peer:link_downed", ""},
		{"integrity 1", 60 * time.Second, func(c *wire.PortCounters) { c.LocalLinkIntegrityErrors = 1 }, "peer:local_link_integrity_errors", ""},
		{"overrun 1", 60 * time.Second, func(c *wire.PortCounters) { c.ExcessiveBufferOverrunErrors = 1 }, "peer:excessive_buffer_overrun_errors", ""},
		{"remote physical 1", 60 * time.Second, func(c *wire.PortCounters) { c.PortRcvRemotePhysicalErrors = 1 }, "peer:port_rcv_remote_physical_errors", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "")
			h.read(0, leaf1, nil)
			got := codes(h.read(tc.dt, leaf1, tc.set))
			joined := strings.Join(got, " ")
			if tc.raised != "" && !strings.Contains(joined, "peer-breach "+tc.raised) {
				t.Errorf("want %s, got %v", tc.raised, got)
			}
			if tc.quiet != "" && strings.Contains(joined, tc.quiet+" ") || tc.quiet != "" && strings.HasSuffix(joined, tc.quiet) {
				t.Errorf("%s raised: %v", tc.quiet, got)
			}
		})
	}
}

// As in the slides, the fabric's traffic counters are not judged on the
// far end unless switched on: PortRcvErrors, PortXmitDiscards,
// PortXmitWait, VL15Dropped, PortRcvSwitchRelayErrors.
func TestDesign_13_SuppressedCountersOffByDefaultAndSwitchable(t *testing.T) {
	traffic := func(c *wire.PortCounters) {
		c.PortRcvErrors, c.PortXmitDiscards, c.PortXmitWait, c.VL15Dropped, c.PortRcvSwitchRelayErrors = 60000, 60000, 4000000000, 9, 9
	}
	h := newHarness(t, "")
	h.read(0, leaf1, nil)
	if specs := h.read(time.Second, leaf1, traffic); len(specs) != 0 {
		t.Fatalf("suppressed counters judged: %v", codes(specs))
	}
	h = newHarness(t, "[farEnd.counters]\nPortXmitDiscards = true\nVL15Dropped = true\nPortXmitWait = true\n")
	// PortXmitWait is judged as the local port_xmit_wait is, as the share
	// of the link lost over at least a minute: 4e9 ticks of 8 bytes in a
	// minute are 43% of a 10 Gb/s link.
	h.obs.Ports[0].RateGbps = 10
	h.read(0, leaf1, nil)
	got := strings.Join(codes(h.read(time.Minute, leaf1, traffic)), " ")
	for _, w := range []string{"peer:port_xmit_discards", "peer:VL15_dropped", "peer:port_xmit_wait"} {
		if !strings.Contains(got, w) {
			t.Errorf("%s not raised once switched on: %s", w, got)
		}
	}
	if strings.Contains(got, "peer:port_rcv_errors") {
		t.Errorf("PortRcvErrors judged while off: %s", got)
	}
}

// DESIGN.md difference 14's rule on the far end: a field at its width's
// maximum is its own non-fatal visibility-lost condition, cleared when it
// moves below; a 64-bit reading never saturates.
func TestDesign_13_SaturatedFieldIsVisibilityLost(t *testing.T) {
	h := newHarness(t, "")
	h.read(0, leaf1, nil)
	specs := h.read(60*time.Second, leaf1, func(c *wire.PortCounters) { c.LinkDownedCounter = 255 })
	got := strings.Join(codes(specs), " ")
	if !strings.Contains(got, "peer-saturated peer-saturated:LinkDownedCounter") || !strings.Contains(got, "peer-breach peer:link_downed") {
		t.Fatalf("got %s", got)
	}
	for _, s := range specs {
		if s.Kind == event.KindPeerSaturated && (!strings.Contains(s.Message, "8-bit") || s.IsFatal) {
			t.Fatalf("%+v", s)
		}
	}
	if specs := h.read(60*time.Second, leaf1, func(c *wire.PortCounters) { c.LinkDownedCounter = 255 }); len(specs) != 0 {
		t.Fatalf("saturation said twice: %v", codes(specs))
	}
	// Cleared on the fabric side: both conditions end.
	got = strings.Join(codes(h.read(60*time.Second, leaf1, nil)), " ")
	if !strings.Contains(got, "peer-unsaturated peer-saturated:LinkDownedCounter") || !strings.Contains(got, "peer-recovered peer:link_downed") {
		t.Fatalf("after the fabric cleared the counters: %s", got)
	}
}

// Difference 13: every clear carries its condition's error code; an
// acknowledgement clears the latch and says who; a recabled port follows
// its new peer, clearing what the old one counted.
func TestDesign_13_AcknowledgedAndRecabled(t *testing.T) {
	h := newHarness(t, "")
	h.read(0, leaf1, nil)
	h.read(60*time.Second, leaf1, sym(655))
	if _, err := h.c.Acknowledge("mlx5_0", 1, "peer:symbol_error_fatal", "uid 0"); !errors.Is(err, ErrNotLatched) {
		t.Fatalf("ack of a row not latched: %v", err)
	}
	specs, err := h.c.Acknowledge("mlx5_0", 1, "peer:symbol_error", "uid 0")
	if err != nil || len(specs) != 1 || !specs[0].IsHealthy || specs[0].ErrorCode[0] != "peer:symbol_error" || !strings.Contains(specs[0].Message, "acknowledged by uid 0") {
		t.Fatalf("%v %v", codes(specs), err)
	}
	if specs := h.read(60*time.Second, leaf1, sym(655)); len(specs) != 0 {
		t.Fatalf("after the ack the last reading is the baseline: %v", codes(specs))
	}
	h.read(60*time.Second, leaf1, sym(1400))
	leaf2 := leaf1
	leaf2.NodeGUID, leaf2.Name, leaf2.Port = "0xb83fd20300a02000", "ibsw-leaf2", 17
	specs = h.read(60*time.Second, leaf2, sym(7000))
	if len(specs) != 1 || specs[0].Kind != event.KindPeerRecovered || specs[0].Metadata["reason"] != "peer-changed" || !strings.Contains(specs[0].Message, "ibsw-leaf2 port 17") {
		t.Fatalf("recabled: %v", specs)
	}
	if pm := h.c.Memory().Ports[latch.PortOf("mlx5_0", 1)]; pm.PeerGUID != "0xb83fd20300a02000" || pm.Values[0] != 7000 {
		t.Fatalf("the new peer's first reading is its baseline: %+v", pm)
	}
	if _, err := h.c.Acknowledge("mlx5_0", 1, "symbol_error", "uid 0"); !errors.Is(err, ErrUnknown) {
		t.Fatalf("a local counter's name: %v", err)
	}
}

// A helper that crashed or hung is one node-level monitoring condition
// until it answers again; a host without umad or the libraries raises
// nothing (the reader says it once).
func TestDesign_13_HelperLostIsAMonitoringCondition(t *testing.T) {
	h := newHarness(t, "")
	h.gen++
	h.rd = &farend.PeerReading{Gen: h.gen, Helper: mad.State{Health: mad.Unavailable, Reason: "no umad"}, Unavailable: "no umad"}
	if specs := h.run(); len(specs) != 0 {
		t.Fatalf("unavailable raised %v", codes(specs))
	}
	h.gen++
	h.rd = &farend.PeerReading{Gen: h.gen, Helper: mad.State{Health: mad.Restarting, Reason: "nichealth-mad peer of port GUID 0x…: did not answer by its deadline; killed"}}
	specs := h.run()
	if len(specs) != 1 || specs[0].Kind != event.KindFarEndLost || specs[0].IsFatal || !strings.Contains(specs[0].Message, "killed") {
		t.Fatalf("lost: %+v", specs)
	}
	h.gen++
	h.rd = &farend.PeerReading{Gen: h.gen, Helper: mad.State{Health: mad.Restarting}}
	if specs := h.run(); len(specs) != 0 {
		t.Fatalf("lost said twice: %v", codes(specs))
	}
	h.gen++
	h.rd = &farend.PeerReading{Gen: h.gen, Helper: mad.State{Health: mad.Running, Starts: 2}}
	if specs := h.run(); len(specs) != 1 || specs[0].Kind != event.KindFarEndRestored || specs[0].ErrorCode[0] != "far-end-lost" {
		t.Fatalf("restored: %v", specs)
	}
}

// The memory survives a restart (its section) and a crash between the
// outbox and the state (replay), and rejects what it could not have
// written.
func TestMemory_RestoreReplayValidate(t *testing.T) {
	h := newHarness(t, "")
	h.read(0, leaf1, nil)
	specs := h.read(60*time.Second, leaf1, sym(655))
	raw, err := h.c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	c2 := NewCheck()
	if dropped := c2.Restore(raw); len(dropped) != 0 {
		t.Fatal(dropped)
	}
	if v := c2.View("mlx5_0", 1); len(v.Latched) != 1 || v.Latched[0] != "symbol_error" {
		t.Fatalf("restored view %+v", v)
	}
	c3 := NewCheck()
	ev := event.New(specs[0], event.Stamp{NodeName: "n", Now: time.Now()})
	c3.Replay(&ev)
	if v := c3.View("mlx5_0", 1); len(v.Latched) != 1 {
		t.Fatalf("replayed view %+v", v)
	}
	bad, _ := json.Marshal(map[string]any{"version": 1, "ports": map[string]any{
		"mlx5_0":   map[string]any{"peerGUID": "0x1", "peerPort": 1},
		"mlx5_0/2": map[string]any{"peerGUID": "nope", "peerPort": 1},
		"mlx5_0/3": map[string]any{"peerGUID": "0xb83fd20300a01000", "peerPort": 3, "saturated": map[string]any{"Bogus": "2026-01-01T00:00:00Z"}},
	}})
	c4 := NewCheck()
	if dropped := c4.Restore(bad); len(dropped) != 3 {
		t.Fatalf("dropped %v", dropped)
	}
}

// A steady cycle (the same reading) does nothing and allocates nothing.
func TestCheck_SteadyCycleAllocatesNothing(t *testing.T) {
	h := newHarness(t, "")
	h.read(0, leaf1, nil)
	h.read(60*time.Second, leaf1, sym(1))
	out := make([]event.Spec, 0, 4)
	if n := testing.AllocsPerRun(100, func() {
		out = out[:0]
		h.cy.Reset(&h.obs, &out)
		h.c.Run(h.cy)
	}); n != 0 {
		t.Fatalf("%v allocations per steady cycle", n)
	}
}

// BenchmarkJudge_8Ports is the far-end check judging a new reading of a
// DGX H100's 8 InfiniBand ports (once a [farEnd] interval), every
// default row of each: the steady case (no breach).
func BenchmarkJudge_8Ports(b *testing.B) {
	h := newHarness(b, "")
	rd := &farend.PeerReading{Helper: mad.State{Health: mad.Running}}
	for i := range 8 {
		peer := leaf1
		peer.Port = 1 + i
		rd.Ports = append(rd.Ports, farend.PeerPort{Device: "mlx5_" + strconv.Itoa(i), Port: 1, Found: true, Peer: peer, Read: true, ReadAt: h.at})
	}
	h.rd = rd
	b.ReportAllocs()
	for b.Loop() {
		rd.Gen++
		for i := range rd.Ports {
			rd.Ports[i].Seq, rd.Ports[i].ReadAt = rd.Gen, rd.Ports[i].ReadAt.Add(time.Minute)
		}
		h.run()
	}
}

// The memory's bound holds while running: readings of ten times as many
// ports as it keeps leave it at its bound, and the ports it keeps are
// still judged.
func TestMemory_BoundedWhileRunning(t *testing.T) {
	h := newHarness(t, "")
	for round := range 2 {
		h.gen++
		rd := &farend.PeerReading{Gen: h.gen, Helper: mad.State{Health: mad.Running}}
		for i := range 10 * MaxPorts {
			rd.Ports = append(rd.Ports, farend.PeerPort{Device: "mlx5_" + strconv.Itoa(i), Port: 1, Found: true, Peer: leaf1, Read: true,
				Seq: uint64(round + 1), ReadAt: h.at.Add(time.Duration(round) * time.Minute),
				Counters: wire.PortCounters{LinkDownedCounter: uint64(round)}})
		}
		h.rd = rd
		specs := h.run()
		if n := len(h.c.Memory().Ports); n > MaxPorts {
			t.Fatalf("round %d: %d ports remembered, bound %d", round, n, MaxPorts)
		}
		if n := len(h.c.seen); n > MaxPorts {
			t.Fatalf("round %d: %d readings remembered, bound %d", round, n, MaxPorts)
		}
		if round == 1 && len(specs) == 0 {
			t.Fatal("the remembered ports were not judged")
		}
	}
}

// A reload that switches a field off, or the far end as a whole, clears
// what it raised, each with its error code (difference 13).
func TestDesign_13_ReloadClearsWhatIsNoLongerJudged(t *testing.T) {
	h := newHarness(t, "")
	h.read(0, leaf1, nil)
	h.read(60*time.Second, leaf1, func(c *wire.PortCounters) { c.LinkDownedCounter, c.SymbolErrorCounter = 255, 655 })
	cfg, err := config.Parse("c.toml", []byte("[farEnd.counters]\nLinkDownedCounter = false\n"))
	if err != nil {
		t.Fatal(err)
	}
	specs := h.c.Configure(Config{On: true, Rows: cfg.FarEnd.Rows})
	got := strings.Join(codes(specs), " ")
	if got != "peer-recovered peer:link_downed peer-unsaturated peer-saturated:LinkDownedCounter" {
		t.Fatalf("switching LinkDownedCounter off said %q", got)
	}
	specs = h.c.Configure(Config{On: false})
	got = strings.Join(codes(specs), " ")
	if got != "peer-recovered peer:symbol_error" {
		t.Fatalf("switching the far end off said %q", got)
	}
	for _, s := range specs {
		if !s.IsHealthy || s.Metadata["reason"] != "no-longer-judged" {
			t.Fatalf("%+v", s)
		}
	}
}

// A start reconciles the restored memory with the configuration as a
// reload does (DESIGN.md section 13): a field switched off while the
// daemon was stopped clears its latch and saturation; one still judged
// keeps them.
func TestDesign_13_ResumeClearsWhatIsNoLongerJudged(t *testing.T) {
	h := newHarness(t, "")
	h.read(0, leaf1, nil)
	h.read(60*time.Second, leaf1, func(c *wire.PortCounters) { c.LinkDownedCounter, c.SymbolErrorCounter = 255, 655 })
	raw, err := h.c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	h2 := newHarness(t, "[farEnd.counters]\nLinkDownedCounter = false\n")
	if dropped := h2.c.Restore(raw); len(dropped) != 0 {
		t.Fatal(dropped)
	}
	if got := strings.Join(codes(h2.c.Resume()), " "); got != "peer-recovered peer:link_downed peer-unsaturated peer-saturated:LinkDownedCounter" {
		t.Fatalf("resume said %q", got)
	}
	if v := h2.c.View("mlx5_0", 1); strings.Join(v.Codes, " ") != "peer:symbol_error" {
		t.Fatalf("view after resume %v", v.Codes)
	}
	// The far end switched off as a whole (its rows still resolved).
	c3 := NewCheck()
	c3.Configure(Config{On: false, Rows: h.c.cfg.Rows})
	c3.Restore(raw)
	if got := strings.Join(codes(c3.Resume()), " "); got != "peer-recovered peer:link_downed peer-recovered peer:symbol_error peer-unsaturated peer-saturated:LinkDownedCounter" {
		t.Fatalf("resume with the far end off said %q", got)
	}
}

// A hostile or corrupt state file (DESIGN.md section 13's memory): a
// latch no build could have raised (an unknown row, control characters,
// thousands of them) is dropped and listed, never restated as a
// condition nothing would ever clear; an unprintable peer name never
// reaches a message.
func TestMemory_HostileLatchesAndNames(t *testing.T) {
	lat := map[string]string{"symbol_error": "2026-01-01T00:00:00Z", "unstable": "2026-01-01T00:00:00Z"}
	for i := range 5000 {
		lat[fmt.Sprintf("row\x1b[2J%d", i)] = "2026-01-01T00:00:00Z"
	}
	bad, _ := json.Marshal(map[string]any{"version": 1, "ports": map[string]any{
		"mlx5_0/1": map[string]any{"peerGUID": "0xb83fd20300a01000", "peerPort": 17, "peerName": "leaf\x1b]0;owned\x07", "latched": lat,
			"peers": []map[string]any{{"guid": "0xb83fd20300a01000", "port": 17, "name": "x\x1by", "at": "2026-01-01T00:00:00Z"}}},
	}})
	c := NewCheck()
	dropped := c.Restore(bad)
	if len(dropped) != 5002 {
		t.Fatalf("dropped %d entries, want the 5000 latches and 2 names", len(dropped))
	}
	if v := c.View("mlx5_0", 1); strings.Join(v.Codes, " ") != "peer:symbol_error peer:unstable" {
		t.Fatalf("view %v", v.Codes)
	}
	for _, r := range c.Restate() {
		if strings.ContainsAny(r.Spec.Message, "\x1b\x07") {
			t.Fatalf("restated %q", r.Spec.Message)
		}
	}
}

// The local episodes' bound holds while running too, on counter ticks as
// on state polls: ten times as many local IB ports as it keeps, each with
// its link counters, leave it at its bound.
func TestMemory_LocalEpisodesBoundedWhileRunning(t *testing.T) {
	h := newHarness(t, "")
	for _, statePoll := range []bool{false, true} {
		h.at = h.at.Add(time.Second)
		h.obs.Now, h.obs.StatePoll, h.obs.Enumerated = h.at, statePoll, statePoll
		h.obs.Ports = nil
		for i := range 10 * MaxPorts {
			dev := &topology.Device{Name: "mlx5_" + strconv.Itoa(i)}
			h.obs.Ports = append(h.obs.Ports, &observe.Port{Device: dev, Port: &topology.Port{Num: 1, LinkLayer: topology.LinkLayerInfiniBand},
				Observed: true, Readable: true,
				Samples: []observe.Sample{{Path: "/sys/class/infiniband/" + dev.Name + "/ports/1/counters/link_downed", Value: uint64(i), At: h.at, Since: h.at.Add(-time.Second)}}})
		}
		h.run()
		if n := len(h.c.local.ports); n > MaxPorts {
			t.Fatalf("state poll %v: %d local ports followed, bound %d", statePoll, n, MaxPorts)
		}
	}
}
