package daemon

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/systemd/notify"
	"github.com/nichealth/nichealthd/topology/sim"
)

// boundedExtremes are what a broken or hostile counter shows.
var boundedExtremes = []uint64{0, 1, 255, 65535, 1 << 32, 1<<63 + 12345, math.MaxUint64 - 1, math.MaxUint64}

// Issue 22 scope: every quantity from outside is bounded before it sizes
// anything. Every counter of every monitored port (files and driver
// statistics) is driven through extreme values, jumps and steps backwards
// while time jumps and steps back, through the whole daemon: the checks,
// the counter evaluator, the rules, the model, the outbox and the state
// file. The live heap and the state file stay where they were after the
// first rounds.
func TestBounded_1_ExtremeCountersKeepMemoryAndStateBounded(t *testing.T) {
	h, err := sim.Build(t.TempDir(), "dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfgPath := writeConfig(t, h, dir, "")
	state := filepath.Join(dir, "state", "state.json")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	// The driver statistics come from the simulator's files (simSeams),
	// so the ethtool: counters are driven too.
	d, err := New(Options{ConfigPath: cfgPath, StateFile: state, Log: log, Seams: simSeams(h)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.run.Close(); d.ob.Close() })
	d.nt = notify.New(log)
	d.wd = notify.NewProgressWatchdog(d.nt, notify.WatchdogOptions{StallAfter: time.Hour, Logger: log})

	type knob struct {
		set func(v uint64) error
		v   uint64
	}
	var knobs []*knob
	rows := d.run.Observer().Counters()
	for _, p := range d.run.Observer().Ports() {
		for _, s := range p.Samples {
			if !strings.HasPrefix(s.Path, "ethtool:") {
				path := s.Path
				knobs = append(knobs, &knob{set: func(v uint64) error { return os.WriteFile(path, []byte(strconv.FormatUint(v, 10)+"\n"), 0o644) }})
				continue
			}
			for _, row := range s.Rows {
				netdev, stat := p.NetDev, rows[row].Path.Stat()
				knobs = append(knobs, &knob{set: func(v uint64) error { return h.SetPHYStat(netdev, stat, v) }})
			}
		}
	}
	if len(knobs) < 150 {
		t.Fatalf("only %d counters to drive", len(knobs))
	}
	rng := rand.New(rand.NewPCG(22, 1))
	now := time.Now()
	var baseHeap uint64
	var baseState int64
	const rounds, settle = 240, 60
	for i := 0; i < rounds; i++ {
		for _, k := range knobs {
			switch rng.IntN(6) {
			case 0, 1:
				k.v = boundedExtremes[rng.IntN(len(boundedExtremes))]
			case 2:
				k.v += rng.Uint64() >> rng.IntN(64) // a jump, wrapping at 2^64
			case 3:
				k.v -= uint64(rng.IntN(1000)) // backwards: a reset, or garbage
			default:
				continue
			}
			if err := k.set(k.v); err != nil {
				t.Fatal(err)
			}
		}
		switch rng.IntN(20) {
		case 0:
			now = now.Add(-time.Minute) // the clock stepped back
		case 1:
			now = now.Add(2 * time.Hour)
		default:
			now = now.Add(time.Second)
		}
		d.poll(now)
		if i == settle {
			baseHeap = liveHeap()
			baseState = fileSize(t, state)
		}
	}
	grew := int64(liveHeap()) - int64(baseHeap)
	st := fileSize(t, state)
	t.Logf("%d counters, %d rounds: heap grew %d bytes after round %d; state file %d bytes (%d then)", len(knobs), rounds, grew, settle, st, baseState)
	if grew > 8<<20 {
		t.Fatalf("the live heap grew by %d bytes between round %d and %d", grew, settle, rounds)
	}
	if st > 2*baseState+64<<10 {
		t.Fatalf("the state file grew from %d to %d bytes", baseState, st)
	}
}

func fileSize(t *testing.T, p string) int64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// Issue 22 scope ("nothing unbounded"): events the outbox refuses are held
// in memory, and an outage of any length must not grow them without
// bound. Past maxHeld, superseded events of the same check and entity are
// folded into the newest, which keeps every entity's latest word, in
// order.
func TestBounded_2_HeldEventsFoldedAtTheirBound(t *testing.T) {
	h, err := sim.Build(t.TempDir(), "minimal")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	d, err := New(Options{ConfigPath: writeConfig(t, h, dir, ""), StateFile: filepath.Join(dir, "state", "state.json"),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.run.Close(); d.ob.Close() })
	now := time.Now()
	last := map[string]string{}
	for i := 0; i < 3*maxHeld; i++ {
		dev := []string{"mlx5_0", "mlx5_1", "mlx5_2"}[i%3]
		msg := fmt.Sprintf("Port %s port 1: flap %d", dev, i)
		d.holdLocked([]event.Spec{{Kind: event.KindPortNonFatal, CheckName: event.InfiniBandStateCheck, Device: dev, Port: 1, Message: msg}}, now)
		last[dev] = msg
		now = now.Add(time.Millisecond)
	}
	if n := len(d.held.evs); n > maxHeld {
		t.Fatalf("%d events held, bound %d", n, maxHeld)
	}
	if d.held.folded == 0 {
		t.Fatal("nothing folded")
	}
	got := map[string]string{}
	for i := 1; i < len(d.held.evs); i++ {
		if !d.held.evs[i].GeneratedTimestamp.After(d.held.evs[i-1].GeneratedTimestamp) {
			t.Fatal("held events out of order")
		}
	}
	for _, e := range d.held.evs {
		got[e.Device()] = e.Message
	}
	for dev, msg := range last {
		if got[dev] != msg {
			t.Fatalf("%s's latest word %q, held %q", dev, msg, got[dev])
		}
	}
}
