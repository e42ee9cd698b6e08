package rules

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/config"
	"github.com/nichealth/nichealthd/event"
)

// heapGrowth runs f and returns how much the live heap grew across it.
func heapGrowth(f func()) int64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.GC()
	runtime.ReadMemStats(&after)
	return int64(after.HeapAlloc) - int64(before.HeapAlloc)
}

func stateBytes(t *testing.T, e *Engine) int {
	t.Helper()
	b, err := json.Marshal(e.State())
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

// Issue 22 row 1: one link_downed reading of 2,000,000 (a garbled or
// wrapped counter) was taken as that many episodes, one timestamp each
// (48 MB of heap, a 46 MB state file rewritten on every save). The
// episodes are a number in a counted window: the flap rule raises, the
// heap and the state stay as small as for three episodes.
func TestBounded_1_CounterJumpIsANumberNotALoop(t *testing.T) {
	for _, c := range []struct {
		name     string
		baseline Port
		jump     Port
	}{
		{"link_downed 0 to 2e6", ib("ACTIVE", 0), ib("ACTIVE", 2_000_000)},
		{"link_down_events_phy 0 to 2e6", Port{Device: "mlx5_9", Port: 1, Link: linkOf("ACTIVE"), LinkDownEvents: Reading{0, true}},
			Port{Device: "mlx5_9", Port: 1, Link: linkOf("ACTIVE"), LinkDownEvents: Reading{2_000_000, true}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := New(config.DefaultRules(), State{}, "b")
			none(t, "baseline", e.Cycle(at(0, 0), []Port{c.baseline}, nil))
			var cs []Change
			grew := heapGrowth(func() { cs = e.Cycle(at(0, 1), []Port{c.jump}, nil) })
			only(t, cs, true, event.FlapCheck)
			if grew > 1<<20 {
				t.Fatalf("one counter reading grew the heap by %d bytes", grew)
			}
			if n := stateBytes(t, e); n > 2048 {
				t.Fatalf("rules state is %d bytes after one counter reading", n)
			}
		})
	}
}

// The largest jump a counter can show: 2^64-1 at once, then again after
// a reset to 0. Totals saturate instead of wrapping to a small number (a
// wrapped total would stop counting episodes for 2^64 more).
func TestBounded_1_SaturatingTotals(t *testing.T) {
	e := New(config.DefaultRules(), State{}, "b")
	e.Cycle(at(0, 0), []Port{ib("ACTIVE", 0)}, nil)
	only(t, e.Cycle(at(0, 1), []Port{ib("ACTIVE", math.MaxUint64)}, nil), true, event.FlapCheck)
	e.Cycle(at(0, 2), []Port{ib("ACTIVE", 0)}, nil)
	e.Cycle(at(0, 3), []Port{ib("ACTIVE", math.MaxUint64)}, nil)
	if got, _ := e.Episodes("mlx5_0", 1); got != math.MaxUint64 {
		t.Fatalf("episodes %d, want saturated at 2^64-1", got)
	}
	p := e.st.Ports["mlx5_0/1"]
	if len(p.FlapWindow) > config.DefaultRules().Flap.Episodes {
		t.Fatalf("flap window holds %d buckets", len(p.FlapWindow))
	}
}

// A state file of an earlier version holds one timestamp per episode:
// restoring two million of them keeps only what the threshold needs.
func TestBounded_1_LegacyStateFoldedOnRestore(t *testing.T) {
	ts := make([]time.Time, 200_000)
	for i := range ts {
		ts[i] = at(5, 0)
	}
	e := New(config.DefaultRules(), State{BootID: "b", Ports: map[string]*PortState{"mlx5_0/1": {Episodes: ts, Flapping: true, LastEpisode: at(5, 0)}}}, "b")
	if n := stateBytes(t, e); n > 2048 {
		t.Fatalf("restored rules state is %d bytes", n)
	}
	// Still flapping, and held by the restored episodes.
	none(t, "held", e.Cycle(at(6, 0), []Port{ib("ACTIVE", 0)}, nil))
	if got := e.st.Ports["mlx5_0/1"].FlapWindow.Count(); got < 3 {
		t.Fatalf("restored window counts %d episodes", got)
	}
}

// extremes are the values a hostile or broken counter file shows.
var extremes = []uint64{0, 1, 2, 255, 65535, 1 << 32, math.MaxUint64 - 1, math.MaxUint64}

// driveRules feeds the engine a sequence of cycles decoded from b: each
// 4-byte step picks a port, a state, a value for each witness (an
// extreme, a jump or a step backwards) and how far time moves, including
// not at all and backwards.
func driveRules(t *testing.T, b []byte, check func(e *Engine, step int)) {
	cfg := config.DefaultRules()
	e := New(cfg, State{}, "b")
	now := at(0, 0)
	vals := map[string]uint64{}
	pick := func(key string, sel byte) Reading {
		v := vals[key]
		switch sel % 5 {
		case 0:
			v = extremes[int(sel/5)%len(extremes)]
		case 1:
			v += uint64(sel) << (sel % 64)
		case 2:
			v -= uint64(sel)
		case 3:
			v++
		case 4:
			return Reading{}
		}
		vals[key] = v
		return Reading{Value: v, OK: true}
	}
	states := []string{"ACTIVE", "DOWN", "INIT", "", "ACTIVE_DEFER", "POLLING"}
	for i := 0; i+4 <= len(b) && i < 2048; i += 4 {
		s := b[i : i+4]
		dev := []string{"mlx5_0", "mlx5_1", "mlx5_2"}[s[0]%3]
		pt := Port{Device: dev, Port: 1 + int(s[0]/3)%2, Link: linkOf(states[int(s[1])%len(states)]),
			LinkDowned: pick(dev+"ld", s[2]), LinkDownEvents: pick(dev+"le", s[2]^s[3])}
		switch d := int8(s[1]) / 8; {
		case d < -12:
			now = now.Add(-time.Hour) // the clock stepped back
		default:
			now = now.Add(time.Duration(d) * time.Duration(d) * 7 * time.Second)
		}
		degraded := []Degraded{{Key: "c|" + dev, Device: dev, Port: pt.Port, Since: now.Add(-time.Duration(s[3]) * time.Second)}}
		e.Cycle(now, []Port{pt}, degraded)
		check(e, i/4)
	}
}

// FuzzRules_ExtremeCounters drives every witness with extreme values (0,
// 2^64-1, jumps, steps backwards, unreadable) and time with jumps and
// steps back: the windows never hold more than their thresholds and the
// state the daemon saves stays small, whatever the counters say.
func FuzzRules_ExtremeCounters(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 1, 5 * 7, 5 * 7, 1, 1, 0, 0, 0, 1, 35, 35})
	seed := make([]byte, 0, 512)
	for i := 0; i < 128; i++ {
		seed = binary.LittleEndian.AppendUint32(seed, uint32(i)*2654435761)
	}
	f.Add(seed)
	cfg := config.DefaultRules()
	f.Fuzz(func(t *testing.T, b []byte) {
		driveRules(t, b, func(e *Engine, step int) {
			for k, p := range e.st.Ports {
				if len(p.FlapWindow) > cfg.Flap.Episodes || len(p.NonFatal) > cfg.Degradation.Events || len(p.Seen) > 1 {
					t.Fatalf("step %d port %s: %d flap buckets, %d non-fatal times, %d seen", step, k, len(p.FlapWindow), len(p.NonFatal), len(p.Seen))
				}
			}
			if step%64 != 0 {
				return
			}
			if n := stateBytes(t, e); n > 6*1024 {
				t.Fatalf("step %d: rules state %d bytes for at most 6 ports", step, n)
			}
		})
	})
}
