package farend

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks/latch"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/mad/wire"
)

// Seed link counter detection, velocity windows (DESIGN.md section 13,
// "judged as the near end is"): the far end's counters go through the
// local counters' window rule. A per-second threshold over the real time
// between two reads, a per-minute one over at least a minute, a per-hour
// one only over a full hour of reads, sliding; never extrapolated. Each
// case is a series of reads (dt after the previous one, the switch's
// SymbolErrorCounter or LinkErrorRecoveryCounter then) and the conditions
// it must raise, "minute N: code" (N minutes after the baseline).
func TestSeed_VelocityWindows_FarEnd(t *testing.T) {
	type read struct {
		dt  time.Duration
		sym uint64
		ler uint64
	}
	every := func(n int, dt time.Duration, f func(i int) read) []read {
		var out []read
		for i := 1; i <= n; i++ {
			r := f(i)
			r.dt = dt
			out = append(out, r)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		reads []read
		want  []string
	}{
		{"3 errors in one 60 s interval raise nothing", []read{{dt: 60 * time.Second, sym: 3}}, nil},
		{"601 in one 60 s interval is over 10/s: symbol_error at once", []read{{dt: 60 * time.Second, sym: 601}},
			[]string{"minute 1: peer:symbol_error"}},
		{"600 in one 60 s interval is 10/s, not over", []read{{dt: 60 * time.Second, sym: 600}}, nil},
		{"11 in a 1 s interval", []read{{dt: time.Second, sym: 11}}, []string{"minute 0: peer:symbol_error"}},
		{"121 in the first minute of an hour: the hourly rule waits for the hour",
			append([]read{{dt: time.Minute, sym: 121}}, every(59, time.Minute, func(int) read { return read{sym: 121} })...),
			[]string{"minute 60: peer:symbol_error_fatal"}},
		{"121 spread over one hour: raised once the hour of reads exists, not before",
			every(60, time.Minute, func(i int) read { return read{sym: uint64(i) * 121 / 60} }),
			[]string{"minute 60: peer:symbol_error_fatal"}},
		{"120 in one hour is 120/hour, not over",
			every(61, time.Minute, func(i int) read { return read{sym: uint64(min(i, 60)) * 2} }), nil},
		{"130 spread evenly over two hours raise nothing",
			every(120, time.Minute, func(i int) read { return read{sym: uint64(i) * 130 / 120} }), nil},
		{"sliding: 121 straddling the first hour's end is still one hour's",
			every(120, time.Minute, func(i int) read {
				// 60 errors in minutes 31-60, 61 in minutes 61-90.
				return read{sym: uint64(max(0, min(i, 90)-30)) * 121 / 60}
			}),
			[]string{"minute 90: peer:symbol_error_fatal"}},
		{"6 link error recoveries in 60 s: over 5/min", []read{{dt: 60 * time.Second, ler: 6}}, []string{"minute 1: peer:link_error_recovery"}},
		{"6 link error recoveries in 59 s: the minute is not over, judged at the next read over 2 minutes",
			[]read{{dt: 59 * time.Second, ler: 6}, {dt: 60 * time.Second, ler: 6}}, nil},
		{"11 link error recoveries in 59 s then none: 11 over 119 s is 5.5/min",
			[]read{{dt: 59 * time.Second, ler: 11}, {dt: 60 * time.Second, ler: 11}}, []string{"minute 1: peer:link_error_recovery"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "")
			h.read(0, leaf1, nil)
			start := h.at
			var got []string
			for _, r := range tc.reads {
				for _, s := range h.read(r.dt, leaf1, func(c *wire.PortCounters) { c.SymbolErrorCounter, c.LinkErrorRecoveryCounter = r.sym, r.ler }) {
					got = append(got, fmt.Sprintf("minute %d: %s", int(h.at.Sub(start)/time.Minute), s.ErrorCode[0]))
				}
			}
			if strings.Join(got, "; ") != strings.Join(tc.want, "; ") {
				t.Fatalf("raised %q, want %q", got, tc.want)
			}
		})
	}
}

// The windows survive a restart as the local ones do: persisted in the
// check's section, the hour in progress is resumed, not restarted (a
// restart at minute 30 does not push the hourly rule to minute 90), and
// judged over the time it really covered.
func TestSeed_VelocityWindows_FarEndSurviveRestart(t *testing.T) {
	h := newHarness(t, "")
	h.read(0, leaf1, nil)
	for i := 1; i <= 30; i++ {
		h.read(time.Minute, leaf1, sym(uint64(i)*121/60))
	}
	raw, err := h.c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"windows"`) {
		t.Fatalf("no window in the saved section: %s", raw)
	}
	h2 := newHarness(t, "")
	h2.at, h2.seq, h2.gen = h.at, h.seq, h.gen
	if dropped := h2.c.Restore(raw); len(dropped) != 0 {
		t.Fatal(dropped)
	}
	var got []string
	for i := 31; i <= 60; i++ {
		for _, s := range h2.read(time.Minute, leaf1, sym(uint64(i)*121/60)) {
			got = append(got, fmt.Sprintf("minute %d: %s", i, s.ErrorCode[0]))
		}
	}
	if strings.Join(got, "; ") != "minute 60: peer:symbol_error_fatal" {
		t.Fatalf("after a restart at minute 30: %q", got)
	}
	w := h2.c.Memory().Ports[latch.PortOf("mlx5_0", 1)].Windows["symbol_error_fatal"]
	if w == nil || len(w.Starts) > 2*12+2 {
		t.Fatalf("window %+v", w)
	}
}

// Words: each far-end condition names its rule and window as a local
// breach does, so the per-second and the per-hour rule of the same field
// never read alike; both keep the slides' prefix.
func TestDesign_13_EachConditionNamesItsRule(t *testing.T) {
	h := newHarness(t, "")
	h.read(0, leaf1, nil)
	msgs := map[string]string{}
	for i := 1; i <= 60; i++ {
		for _, s := range h.read(time.Minute, leaf1, sym(uint64(i)*700)) {
			msgs[s.ErrorCode[0]] = s.Message
		}
	}
	sec, hour := msgs["peer:symbol_error"], msgs["peer:symbol_error_fatal"]
	if !strings.HasPrefix(sec, "Direct-attached ibsw-leaf1 port 17: [SymbolErrorCounter == 700] symbol_error - ") ||
		!strings.Contains(sec, "rule > 10/sec, judged over 1m0s of reads") || !strings.Contains(sec, "rate=11.67/sec") {
		t.Fatalf("per-second: %q", sec)
	}
	if !strings.HasPrefix(hour, "Direct-attached ibsw-leaf1 port 17: [SymbolErrorCounter == 42000] symbol_error_fatal - ") ||
		!strings.Contains(hour, "rule > 120/hour, judged over 1h0m0s of reads") || !strings.Contains(hour, "rate=42000.00/hour") {
		t.Fatalf("per-hour: %q", hour)
	}
	// Restated latches keep their peer: codes and their rule's words.
	var restated []string
	for _, r := range h.c.Restate() {
		restated = append(restated, r.Spec.ErrorCode[0]+" "+r.Spec.Message)
		if r.Spec.Kind != event.KindPeerBreach || r.Spec.CheckName != CheckName {
			t.Fatalf("%+v", r.Spec)
		}
	}
	joined := strings.Join(restated, "\n")
	if len(restated) != 2 || !strings.Contains(joined, "peer:symbol_error Direct-attached ibsw-leaf1 port 17: symbol_error - ") ||
		!strings.Contains(joined, "peer:symbol_error_fatal Direct-attached ibsw-leaf1 port 17: symbol_error_fatal - ") ||
		!strings.Contains(joined, "(rule > 120/hour)") {
		t.Fatalf("restated:\n%s", joined)
	}
}

// A reload that changes a row's rule starts its window again (what it
// held was measured for the old rule); one that keeps it keeps the window.
func TestSeed_VelocityWindows_FarEndReloadRestartsAChangedRule(t *testing.T) {
	h := newHarness(t, "")
	h.read(0, leaf1, nil)
	for i := 1; i <= 30; i++ {
		h.read(time.Minute, leaf1, sym(uint64(i)))
	}
	cfg := h.c.cfg
	h.c.Configure(cfg)
	pm := h.c.Memory().Ports[latch.PortOf("mlx5_0", 1)]
	if w := pm.Windows["symbol_error_fatal"]; w == nil || len(w.Starts) < 2 {
		t.Fatalf("the same rule lost its window: %+v", w)
	}
	rows := append(cfg.Rows[:0:0], cfg.Rows...)
	for i := range rows {
		if rows[i].Def.Name == "symbol_error_fatal" {
			rows[i].Def.Threshold = 60
		}
	}
	cfg.Rows = rows
	h.c.Configure(cfg)
	if _, ok := pm.Windows["symbol_error_fatal"]; ok {
		t.Fatal("a changed rule kept its window")
	}
	if _, ok := pm.Windows["symbol_error"]; !ok {
		t.Fatal("an unchanged rule lost its window")
	}
}

// After a restart, a per-second window starts again at the first read
// instead of averaging the downtime into a rate (the local evaluator's
// rule for short windows restored from the state file); the next read is
// judged as usual.
func TestSeed_VelocityWindows_FarEndShortWindowRestartsAfterARestart(t *testing.T) {
	h := newHarness(t, "")
	h.read(0, leaf1, nil)
	for range 10 {
		h.read(time.Minute, leaf1, nil)
	}
	raw, err := h.c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	h2 := newHarness(t, "")
	h2.at, h2.seq, h2.gen = h.at, h.seq, h.gen
	if dropped := h2.c.Restore(raw); len(dropped) != 0 {
		t.Fatal(dropped)
	}
	if specs := h2.read(5*time.Minute, leaf1, sym(5000)); len(specs) != 0 {
		t.Fatalf("the first read after a restart judged a per-second window over the downtime: %v", codes(specs))
	}
	if got := codes(h2.read(time.Minute, leaf1, sym(5601))); strings.Join(got, " ") != "peer-breach peer:symbol_error" {
		t.Fatalf("601 in the next minute: %v", got)
	}
}

// A NIC renamed under its PCI address (udev, rdma dev set) moves its far
// end's memory to the new name; every other port's windows go on: 700
// symbol errors in the minute that straddles another device's rename are
// still over 10/sec.
func TestSeed_VelocityWindows_FarEndOtherDeviceRenamed(t *testing.T) {
	h := newHarness(t, "")
	h.read(0, leaf1, nil)
	h.read(time.Minute, leaf1, nil)
	h.c.Rename("mlx5_9", "mlx5_10")
	if got := codes(h.read(time.Minute, leaf1, sym(700))); strings.Join(got, " ") != "peer-breach peer:symbol_error" {
		t.Fatalf("700 in the minute of another device's rename: %v", got)
	}
	h.c.Rename("mlx5_0", "mlx5_4")
	if pm := h.c.Memory().Ports[latch.PortOf("mlx5_4", 1)]; pm == nil || pm.Latched["symbol_error"].IsZero() {
		t.Fatalf("the renamed port's memory: %+v", h.c.Memory().Ports)
	}
}
