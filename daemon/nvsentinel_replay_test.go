package daemon

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/internal/nodecondition"
	"github.com/nichealth/nichealthd/systemd/notify"
	"github.com/nichealth/nichealthd/topology/sim"
)

// The fatal conditions NVSentinel would hold after replaying the daemon's
// event stream must equal the daemon's own (DESIGN.md difference 13). The
// rule NVSentinel applies is ported in internal/nodecondition from NVIDIA/
// NVSentinel platform-connectors/pkg/connectors/kubernetes/
// process_node_events.go (aggregateEventMessages,
// removeImpactedEntitiesMessagesScoped, constructHealthEventMessage).

// replayRig drives a real Daemon on a simulated node with a synthetic
// clock (its polls are called directly, no Run loop), and replays every
// event it commits, one at a time in outbox order, into the NVSentinel
// rule and into a health model of its own.
type replayRig struct {
	t     *testing.T
	h     *sim.Host
	dir   string
	cfg   string
	d     *Daemon
	now   time.Time
	seq   uint64
	step  string
	nvs   *nodecondition.Node
	model *health.Model
	byID  map[string]event.Event
	count map[event.Kind]int
}

func newReplayRig(t *testing.T) *replayRig {
	t.Helper()
	h, err := sim.Build(t.TempDir(), "dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := writeConfig(t, h, dir, `cardAnomalyHold = "2s"
readTimeout = "100ms"
parkReprobeInterval = "250ms"
[dbus]
enabled = false`)
	r := &replayRig{t: t, h: h, dir: dir, cfg: cfg, now: time.Unix(1_800_000_000, 0), nvs: nodecondition.New(),
		model: health.NewModel(), byID: map[string]event.Event{}, count: map[event.Kind]int{}}
	r.open()
	return r
}

// open starts a daemon over the rig's state directory (no sinks: the
// rig reads the outbox itself).
func (r *replayRig) open() {
	r.t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	// The errno table of a parked file is the simulator's (simSeams).
	d, err := New(Options{ConfigPath: r.cfg, StateFile: filepath.Join(r.dir, "state.json"), Log: log, Seams: simSeams(r.h)})
	if err != nil {
		r.t.Fatal(err)
	}
	d.nt = notify.New(log)
	d.wd = notify.NewProgressWatchdog(d.nt, notify.WatchdogOptions{StallAfter: time.Hour, Logger: log})
	r.d = d
	r.t.Cleanup(r.close)
}

func (r *replayRig) close() {
	if r.d == nil {
		return
	}
	r.d.run.Close()
	r.d.ob.Close()
	r.d = nil
}

// run polls every tick of synthetic time for dur, replaying after each.
func (r *replayRig) run(dur, tick time.Duration) {
	r.t.Helper()
	for end := r.now.Add(dur); r.now.Before(end); {
		r.now = r.now.Add(tick)
		r.d.poll(r.now)
		r.replay()
	}
}

// until polls every 250 ms of synthetic time, also letting real time pass
// (the reader's deadlines and re-probes are real time), until an event
// matching f has been replayed.
func (r *replayRig) until(what string, f func(e event.Event) bool) {
	r.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	start := r.seq
	for time.Now().Before(deadline) {
		r.run(250*time.Millisecond, 250*time.Millisecond)
		recs, err := r.d.ob.ReadAfter(start, 100000)
		if err != nil {
			r.t.Fatal(err)
		}
		for _, rec := range recs {
			if f(rec.Event) {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.t.Fatalf("%s: no event %s", r.step, what)
}

func (r *replayRig) do(step string, err error) {
	r.t.Helper()
	r.step = step
	if err != nil {
		r.t.Fatalf("%s: %v", step, err)
	}
}

// ack is D-Bus AcknowledgeReset at the rig's time.
func (r *replayRig) ack(dev, counter string) {
	r.t.Helper()
	r.step = fmt.Sprintf("acknowledge %s port 1 %q", dev, counter)
	r.d.mu.Lock()
	specs, err := r.d.acknowledge(dev, 1, counter, r.now, "uid 0")
	if err == nil {
		r.d.holdLocked(specs, r.now)
		r.d.commitLocked(true)
	}
	r.d.mu.Unlock()
	if err != nil {
		r.t.Fatalf("%s: %v", r.step, err)
	}
	r.replay()
}

// replay folds the events committed since the last call into the
// NVSentinel rule (one event per batch, as a connector with batching off
// sends them) and the rig's model, comparing the two after each event and
// the rig's model with the daemon's own at the end.
func (r *replayRig) replay() {
	r.t.Helper()
	// The daemon's model takes an event when it is detected, the outbox
	// when its write returns: compared once the write in flight did.
	settle(r.d)
	recs, err := r.d.ob.ReadAfter(r.seq, 100000)
	if err != nil {
		r.t.Fatal(err)
	}
	for _, rec := range recs {
		e := rec.Event
		r.seq = rec.Seq
		r.byID[e.ID] = e
		r.count[e.Kind]++
		r.nvs.Apply(nvsEvent(e))
		r.model.Apply(&e)
		r.agree(fmt.Sprintf("after event %d (%s %s fatal=%v healthy=%v %q)", rec.Seq, e.Kind, e.CheckName, e.IsFatal, e.IsHealthy, e.Message))
	}
	r.d.mu.Lock()
	daemon := fatalKeys(r.d.model.Conditions())
	r.d.mu.Unlock()
	if mine := fatalKeys(r.model.Conditions()); !slices.Equal(daemon, mine) {
		r.t.Fatalf("%s: the daemon's fatal conditions %q, the replayed stream's %q", r.step, daemon, mine)
	}
}

// agree compares, check by check, NVSentinel's node-condition messages
// with the messages of the model's fatal conditions' raising events.
func (r *replayRig) agree(when string) {
	r.t.Helper()
	want := map[string][]string{}
	for _, c := range r.model.Conditions() {
		if c.Severity != health.Fatal {
			continue
		}
		ev, ok := r.byID[c.EventID]
		if !ok {
			r.t.Fatalf("%s, %s: condition %s has no raising event in the stream", r.step, when, c.Key().Entity)
		}
		want[c.Check] = append(want[c.Check], nodecondition.Message(nvsEvent(ev)))
	}
	checks := r.nvs.Checks()
	for c := range want {
		if !slices.Contains(checks, c) {
			checks = append(checks, c)
		}
	}
	for _, c := range checks {
		w := want[c]
		slices.Sort(w)
		if got := r.nvs.Messages(c); !slices.Equal(got, w) {
			r.t.Fatalf("%s, %s: NVSentinel holds for %s:\n  %s\nthe daemon's fatal conditions are:\n  %s",
				r.step, when, c, strings.Join(got, "\n  "), strings.Join(w, "\n  "))
		}
	}
}

func fatalKeys(cs []health.Condition) []string {
	var out []string
	for _, c := range cs {
		if c.Severity == health.Fatal {
			out = append(out, c.Check+" "+c.Entity.String())
		}
	}
	slices.Sort(out)
	return out
}

func nvsEvent(e event.Event) nodecondition.Event {
	out := nodecondition.Event{CheckName: e.CheckName, IsFatal: e.IsFatal, IsHealthy: e.IsHealthy, Message: e.Message,
		RecommendedAction: e.RecommendedAction.String(), ErrorCode: e.ErrorCode, Timestamp: e.GeneratedTimestamp,
		StoreOnly: e.ProcessingStrategy == event.StrategyStoreOnly || e.ProcessingStrategy == event.StrategyStoreAndAnalyse}
	for _, en := range e.EntitiesImpacted {
		out.Entities = append(out.Entities, nodecondition.Entity{Type: en.Type, Value: en.Value})
	}
	return out
}

// last is the newest event replayed that f matches (the zero event when
// none).
func (r *replayRig) last(f func(e event.Event) bool) event.Event {
	r.t.Helper()
	recs, err := r.d.ob.ReadAfter(0, 1<<20)
	if err != nil {
		r.t.Fatal(err)
	}
	var out event.Event
	for _, rec := range recs {
		if rec.Seq <= r.seq && f(rec.Event) {
			out = rec.Event
		}
	}
	return out
}

// nvsHolds reports whether NVSentinel's condition for check holds a
// message containing s.
func (r *replayRig) nvsHolds(check, s string) bool {
	for _, m := range r.nvs.Messages(check) {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

func kindOn(dev string, k event.Kind) func(e event.Event) bool {
	return func(e event.Event) bool { return e.Kind == k && (dev == "" || e.Device() == dev) }
}

// TestConditions_DESIGN_13_NVSentinelAgreesWithTheDaemon replays a long
// scenario's event stream through NVSentinel's node-condition rule and
// requires, after every event, that the fatal conditions NVSentinel would
// hold equal the daemon's: findings, stuck reads, parked files, one-counter
// and all-counter acknowledgements, resets on a latched port (with
// link-downs since), a latched fatal counter whose port flaps and is then
// acknowledged (both under the state check), card anomalies (raised, re-raised, cleared by the
// port's own fatal), a no-subnet-manager condition, the flap and drop
// rules, a disappearance, saturation, congestion and a reboot.
func TestConditions_DESIGN_13_NVSentinelAgreesWithTheDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("a long scenario")
	}
	r := newReplayRig(t)
	h := r.h
	tick := 250 * time.Millisecond
	r.do("first polls", nil)
	r.run(2*time.Second, tick)

	r.do("link_downed on mlx5_1: a latched fatal breach", h.AddCounter("mlx5_1", 1, "counters/link_downed", 1))
	r.run(2*time.Second, tick)
	r.do("a symbol_error burst on the latched port", h.AddCounter("mlx5_1", 1, "counters/symbol_error", 5000))
	r.run(2*time.Second, tick)
	r.ack("mlx5_1", "symbol_error")
	r.run(time.Second, tick)

	r.do("a sanity finding on the latched port (rate below its peers)", h.SetRate("mlx5_1", 1, "200 Gb/sec (4X HDR)"))
	r.until("rate-below-peers", kindOn("mlx5_1", event.KindLinkSanity))
	r.do("the finding resolves", h.SetRate("mlx5_1", 1, "400 Gb/sec (4X NDR)"))
	r.until("link-sanity-ok", kindOn("mlx5_1", event.KindLinkSanityOK))

	r.do("a hung read on the latched port", h.MakeFIFO("mlx5_1", 1, "counters/port_rcv_errors"))
	r.until("read-stuck", kindOn("mlx5_1", event.KindReadStuck))
	fifo, err := h.PortPath("mlx5_1", 1, "counters/port_rcv_errors")
	if err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	r.do("the hung read returns", h.UnmakeFIFO("mlx5_1", 1, "counters/port_rcv_errors"))
	w.Write([]byte("0\n"))
	w.Close()
	r.until("read-recovered", kindOn("mlx5_1", event.KindReadRecovered))

	r.do("a parked file on the latched port", h.FailFile("mlx5_1", 1, "counters/port_xmit_discards", "EINVAL"))
	r.until("read-parked", kindOn("mlx5_1", event.KindReadParked))
	r.do("the parked file reads again", h.FailFile("mlx5_1", 1, "counters/port_xmit_discards", "off"))
	r.until("read-resumed", kindOn("mlx5_1", event.KindReadResumed))

	r.do("more link-downs on the latched port (no event)", h.SetCounter("mlx5_1", 1, "counters/link_downed", 5))
	r.run(2*time.Second, tick)
	r.do("an admin reset with 2 link-downs since: recovery, then a new breach", h.SetCounter("mlx5_1", 1, "counters/link_downed", 2))
	r.run(2*time.Second, tick)
	r.do("a reset to 0", h.ResetCounters("mlx5_1", 1))
	r.run(2*time.Second, tick)
	r.do("two latches on mlx5_1", h.AddCounter("mlx5_1", 1, "counters/link_downed", 1))
	r.do("two latches on mlx5_1", h.AddCounter("mlx5_1", 1, "counters/excessive_buffer_overrun_errors", 1))
	r.run(2*time.Second, tick)
	r.ack("mlx5_1", "")
	r.run(time.Second, tick)

	r.do("mlx5_2 stuck in INIT past the hold: card anomaly", h.SetPortState("mlx5_2", 1, "INIT", "LinkUp"))
	r.run(4*time.Second, tick)
	r.do("mlx5_2 falls DOWN: its own fatal replaces the card's", h.SetPortState("mlx5_2", 1, "DOWN", "Disabled"))
	r.run(2*time.Second, tick)
	r.do("mlx5_2 back", h.SetPortState("mlx5_2", 1, "ACTIVE", "LinkUp"))
	r.run(2*time.Second, tick)

	r.do("storage mlx5_9 (RoCE) stuck in INIT past the hold", h.SetPortState("mlx5_9", 1, "INIT", "LinkUp"))
	r.run(4*time.Second, tick)
	r.do("storage mlx5_8 stuck too: the card is raised again with both", h.SetPortState("mlx5_8", 1, "INIT", "LinkUp"))
	r.run(4*time.Second, tick)
	r.do("storage ports back", h.SetPortState("mlx5_8", 1, "ACTIVE", "LinkUp"))
	r.do("storage ports back", h.SetPortState("mlx5_9", 1, "ACTIVE", "LinkUp"))
	r.run(2*time.Second, tick)

	// Seed 11.1 puts a fatal counter breach under the state check, beside
	// the port's own condition: the port's flap and its clear must leave
	// the latched breach in NVSentinel, and the acknowledgement must clear
	// the breach alone (DESIGN.md differences 2 and 13).
	r.do("a latched link_downed on mlx5_3", h.AddCounter("mlx5_3", 1, "counters/link_downed", 1))
	r.run(2*time.Second, tick)
	if b := r.last(kindOn("mlx5_3", event.KindCounterBreach)); b.CheckName != event.InfiniBandStateCheck || !b.IsFatal {
		t.Fatalf("the latched link_downed %+v, want it fatal under %s", b, event.InfiniBandStateCheck)
	}
	r.do("mlx5_3 flaps while latched: DOWN", h.SetPortState("mlx5_3", 1, "DOWN", "Disabled"))
	r.do("mlx5_3 flaps while latched: link_downed counts it", h.AddCounter("mlx5_3", 1, "counters/link_downed", 1))
	r.run(2*time.Second, tick)
	r.do("mlx5_3 back ACTIVE: its port clear keeps the latch", h.SetPortState("mlx5_3", 1, "ACTIVE", "LinkUp"))
	r.run(2*time.Second, tick)
	if !r.nvsHolds(event.InfiniBandStateCheck, "ErrorCode:link_downed NIC:mlx5_3 NICPort:1 ") {
		t.Fatalf("%s: NVSentinel dropped the latched link_downed with the port's clear: %q", r.step, r.nvs.Messages(event.InfiniBandStateCheck))
	}
	r.ack("mlx5_3", "link_downed")
	r.run(time.Second, tick)
	if r.nvsHolds(event.InfiniBandStateCheck, "NIC:mlx5_3 ") {
		t.Fatalf("%s: NVSentinel still holds %q", r.step, r.nvs.Messages(event.InfiniBandStateCheck))
	}

	r.do("cable pull on mlx5_3: one fatal condition", h.SetPortState("mlx5_3", 1, "DOWN", "Disabled"))
	r.run(4*time.Second, tick)
	r.do("mlx5_3 back", h.SetPortState("mlx5_3", 1, "ACTIVE", "LinkUp"))
	r.run(2*time.Second, tick)

	for i := 0; i < 3; i++ {
		r.do(fmt.Sprintf("mlx5_4 flaps (%d)", i+1), h.SetPortState("mlx5_4", 1, "DOWN", "Disabled"))
		r.do("link_downed counts it", h.AddCounter("mlx5_4", 1, "counters/link_downed", 1))
		r.run(time.Second, tick)
		r.do("mlx5_4 up", h.SetPortState("mlx5_4", 1, "ACTIVE", "LinkUp"))
		r.run(time.Second, tick)
	}
	r.ack("mlx5_4", "link_downed")
	r.do("mlx5_4 stable past the flap rule's stabilization", nil)
	r.run(31*time.Minute, 5*time.Second)

	r.do("mlx5_5 DOWN for the drop rule's 4 minutes", h.SetPortState("mlx5_5", 1, "DOWN", "Disabled"))
	r.run(5*time.Minute, 5*time.Second)
	r.do("mlx5_5 back", h.SetPortState("mlx5_5", 1, "ACTIVE", "LinkUp"))
	r.run(2*time.Second, tick)

	r.do("mlx5_6 falls off the bus", h.RemoveDevice("mlx5_6"))
	r.run(2*time.Second, tick)
	r.do("mlx5_6 back", h.RestoreDevice("mlx5_6"))
	r.run(2*time.Second, tick)

	r.do("a latched link_downed on mlx5_7", h.AddCounter("mlx5_7", 1, "counters/link_downed", 1))
	r.run(2*time.Second, tick)
	r.do("its link_downed saturates: visibility lost", h.SetCounter("mlx5_7", 1, "counters/link_downed", 255))
	r.run(2*time.Second, tick)
	r.do("counters cleared: recovery and visibility back", h.ResetCounters("mlx5_7", 1))
	r.run(2*time.Second, tick)

	r.do("a latched link_downed on mlx5_0", h.AddCounter("mlx5_0", 1, "counters/link_downed", 1))
	r.run(2*time.Second, tick)
	r.do("mlx5_0 trains at 10 Gb/s (a sanity finding)", h.SetRate("mlx5_0", 1, "10 Gb/sec (4X SDR)"))
	r.run(time.Second, tick)
	// 20% of 10 Gb/s lost for a minute, then none for a minute.
	const ticksPerSec = 2e9 / 64
	for i := 0; i < 2*60*4; i++ {
		if i < 60*4 {
			r.do("mlx5_0 congested", h.AddCounter("mlx5_0", 1, "counters/port_xmit_wait", uint64(ticksPerSec/4)))
		} else {
			r.do("mlx5_0 congestion gone", nil)
		}
		r.run(tick, tick)
	}
	r.run(5*time.Second, tick)
	r.do("mlx5_0 back at full rate", h.SetRate("mlx5_0", 1, "400 Gb/sec (4X NDR)"))
	r.run(2*time.Second, tick)

	// Two fatal AER conditions whose entities overlap: the NIC function
	// names mlx5_0's port, the switch port above it names the same one.
	above, err := h.AERAbove("mlx5_0")
	if err != nil {
		t.Fatal(err)
	}
	d0, _ := h.Device("mlx5_0")
	r.do("a fatal AER error on the switch port above mlx5_0", h.AddAER(above, "fatal", "MalfTLP", 1))
	r.do("and on mlx5_0's own function", h.AddAER(d0.PCIAddress, "fatal", "MalfTLP", 1))
	r.run(12*time.Second, tick)
	r.do("the function's AER counters reset (a device reset): only its condition clears", h.ResetAER(d0.PCIAddress))
	r.run(12*time.Second, tick)
	r.ack("mlx5_0", AERAckCounter)
	r.run(6*time.Second, tick)

	r.do("every IB compute port waits for a subnet manager", nil)
	for i := 0; i < 8; i++ {
		dev := fmt.Sprintf("mlx5_%d", i)
		r.do("no subnet manager", h.SetPortState(dev, 1, "INIT", "LinkUp"))
		r.do("no subnet manager", h.WriteRaw(dev, 1, "sm_lid", "0x0\n"))
	}
	r.run(4*time.Second, tick)
	for i := 0; i < 8; i++ {
		dev := fmt.Sprintf("mlx5_%d", i)
		r.do("a subnet manager comes up", h.SetPortState(dev, 1, "ACTIVE", "LinkUp"))
		r.do("a subnet manager comes up", h.WriteRaw(dev, 1, "sm_lid", "0x1\n"))
	}
	r.run(2*time.Second, tick)

	r.do("a latched breach left before a reboot", h.AddCounter("mlx5_2", 1, "counters/link_downed", 1))
	r.run(2*time.Second, tick)
	r.do("the host reboots", nil)
	r.close()
	if _, err := h.NewBootID(); err != nil {
		t.Fatal(err)
	}
	h.ResetCounters("mlx5_2", 1)
	r.open()
	r.run(2*time.Second, tick)

	// The scenario went through what it claims.
	for _, k := range []event.Kind{event.KindCounterBreach, event.KindCounterRecovered, event.KindLinkSanity, event.KindLinkSanityOK,
		event.KindReadStuck, event.KindReadRecovered, event.KindReadParked, event.KindReadResumed, event.KindCardAnomaly,
		event.KindCardRecovered, event.KindPortFatal, event.KindRuleRaised, event.KindRuleCleared, event.KindDeviceDisappeared,
		event.KindDeviceReappeared, event.KindCounterSaturated, event.KindCounterUnsaturated, event.KindCongestion,
		event.KindCongestionCleared, event.KindNoSubnetManager, event.KindSubnetManagerFound, event.KindCheckCleared,
		event.KindPCIeAER, event.KindPCIeAERRecovered} {
		if r.count[k] == 0 {
			t.Errorf("the scenario produced no %s event", k)
		}
	}
	if r.count[event.KindCardAnomaly] < 3 {
		t.Errorf("%d card anomalies, want the compute one and the storage one raised twice", r.count[event.KindCardAnomaly])
	}
}
