package farend

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks/latch"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/mad"
	"github.com/nichealth/nichealthd/mad/farend"
	"github.com/nichealth/nichealthd/mad/wire"
)

// readAs is read with the reading's width given (PortCountersExtended's
// 64-bit error counters when wide).
func (h *harness) readAs(dt time.Duration, peer farend.Peer, wide bool, set func(*wire.PortCounters)) []event.Spec {
	h.t.Helper()
	h.gen++
	h.seq++
	h.at = h.at.Add(dt)
	var pc wire.PortCounters
	if set != nil {
		set(&pc)
	}
	h.rd = &farend.PeerReading{Gen: h.gen, At: h.at, Helper: mad.State{Health: mad.Running},
		Ports: []farend.PeerPort{{Device: "mlx5_0", Port: 1, GUID: "0xa088c20300ab0001", Found: true, Peer: peer, Read: true, Seq: h.seq, ReadAt: h.at, Counters: pc, Wide: wide}}}
	return h.run()
}

// restart round-trips the check through its state file section, as a
// daemon restart does (the reader's sequence starts again).
func (h *harness) restart() {
	h.t.Helper()
	raw, err := h.c.Marshal()
	if err != nil {
		h.t.Fatal(err)
	}
	cfg := h.c.cfg
	h.c = NewCheck()
	h.c.Configure(cfg)
	if dropped := h.c.Restore(raw); len(dropped) != 0 {
		h.t.Fatal(dropped)
	}
	h.c.Resume()
	h.seq = 0
}

// Seed link counter detection, velocity windows and counter reset
// handling (6.3), on the far end (DESIGN.md section 13) under what a
// fleet does to a daemon: the wall clock stepped back or jumping
// (NTP, a suspend, a daemon restarted across a step), reads skipped
// (the helper restarting), the read interval reloaded from 60 s to 10 s
// and back, a restart in the middle of an hour, a counter cleared on
// the fabric side inside a window, a field wrapping or stuck at its
// width (8, 16 bits; 64 for PortCountersExtended), the width changing,
// the port recabled in the middle of a window. Each read is "dt value"
// of SymbolErrorCounter (or of the field the case names), "restart",
// "wide" (the next reads are 64-bit), or "peer2" (recabled); want is
// every condition raised, "read N: code".
func TestSeed_VelocityWindows_FarEndUnderAFleet(t *testing.T) {
	type op struct {
		dt    time.Duration
		v     uint64
		what  string // "", "restart", "wide", "narrow", "peer2"
		field string // "" SymbolErrorCounter
	}
	spread := func(n int, dt time.Duration, from, to uint64) []op {
		out := make([]op, 0, n)
		for i := 1; i <= n; i++ {
			out = append(out, op{dt: dt, v: from + (to-from)*uint64(i)/uint64(n)})
		}
		return out
	}
	cat := func(parts ...[]op) []op {
		var out []op
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	do := func(what string) []op { return []op{{what: what}} }
	m := time.Minute
	for _, tc := range []struct {
		name string
		ops  []op
		want []string
	}{
		{"the clock stepped back 10 min mid-hour at 60/hour: nothing, the hour starts again",
			cat(spread(30, m, 0, 30), []op{{dt: -10 * m, v: 31}}, spread(90, m, 31, 121)), nil},
		{"the clock stepped back 10 min mid-hour at 180/hour: raised an hour of reads after the step",
			cat(spread(30, m, 0, 90), []op{{dt: -10 * m, v: 93}}, spread(60, m, 93, 273)), []string{"read 91: peer:symbol_error_fatal"}},
		{"a suspend of 8 hours with 100 errors: 12.5/hour, 0.003/sec, nothing",
			cat(spread(5, m, 0, 0), []op{{dt: 8 * time.Hour, v: 100}}, spread(5, m, 100, 100)), nil},
		{"reads skipped for 10 min (helper restart) at 121/hour: raised at the hour",
			cat(spread(20, m, 0, 40), []op{{dt: 10 * m, v: 61}}, spread(30, m, 61, 121)), []string{"read 51: peer:symbol_error_fatal"}},
		{"interval 60 s, then 10 s, then 60 s, 130 over two hours: nothing",
			cat(spread(30, m, 0, 32), spread(180, 10*time.Second, 32, 65), spread(60, m, 65, 130)), nil},
		{"interval 10 s then 60 s, 121 in the first hour: raised at the hour",
			cat(spread(120, 10*time.Second, 0, 41), spread(40, m, 41, 121)), []string{"read 160: peer:symbol_error_fatal"}},
		{"a restart 30 min into an hour at 10 s reads: the hour resumes, raised at the hour",
			cat(spread(180, 10*time.Second, 0, 61), do("restart"), spread(180, 10*time.Second, 61, 121)), []string{"read 360: peer:symbol_error_fatal"}},
		{"cleared on the fabric side 30 min into an hour with 100 counted: the window starts again",
			cat(spread(30, m, 0, 100), []op{{dt: m, v: 0}}, spread(29, m, 0, 21), spread(60, m, 21, 100)), nil},
		{"a 16-bit field that wraps (65530 to 5) is a clear, not 65,011 errors",
			cat(do("peer2"), []op{{dt: m, v: 65530}, {dt: m, v: 5}, {dt: m, v: 10}}), nil},
		{"an 8-bit LinkDownedCounter 254 to 255: one link down, and the field saturated",
			[]op{{dt: m, v: 254, field: "LinkDownedCounter"}, {dt: m, v: 255, field: "LinkDownedCounter"}},
			[]string{"read 1: peer:link_downed", "read 2: peer-saturated:LinkDownedCounter"}},
		{"a 4-bit LocalLinkIntegrityErrors stuck at 15",
			[]op{{dt: m, v: 15, field: "LocalLinkIntegrityErrors"}, {dt: m, v: 15, field: "LocalLinkIntegrityErrors"}},
			[]string{"read 1: peer:local_link_integrity_errors", "read 1: peer-saturated:LocalLinkIntegrityErrors"}},
		{"64-bit extended counters near their end, then cleared: no breach, no saturation",
			cat(do("wide"), []op{{dt: m, v: 1<<64 - 10}, {dt: m, v: 1<<64 - 10}, {dt: m, v: 3}, {dt: m, v: 3}}), nil},
		{"extended offered then not, mid-hour: each width is a new baseline, never a difference across widths",
			cat(do("wide"), spread(30, m, 70000, 70030), do("narrow"), spread(30, m, 30, 60), do("wide"), spread(30, m, 70100, 70130)), nil},
		{"recabled 30 min into an hour: the old peer's 100 errors are not the new peer's",
			cat(spread(30, m, 0, 100), do("peer2"), spread(60, m, 5000, 5100)), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "")
			h.read(0, leaf1, nil)
			peer, wide := leaf1, false
			var got []string
			n := 0
			for _, o := range tc.ops {
				switch o.what {
				case "restart":
					h.restart()
					continue
				case "wide", "narrow":
					wide = o.what == "wide"
					continue
				case "peer2":
					peer.NodeGUID, peer.Port, peer.Name = "0xb83fd20300a02000", 3, "ibsw-leaf2"
					continue
				}
				n++
				field := o.field
				if field == "" {
					field = "SymbolErrorCounter"
				}
				for _, s := range h.readAs(o.dt, peer, wide, setField(t, field, o.v)) {
					if !s.IsHealthy {
						got = append(got, fmt.Sprintf("read %d: %s", n, s.ErrorCode[0]))
					}
				}
			}
			if strings.Join(got, "; ") != strings.Join(tc.want, "; ") {
				t.Fatalf("raised %q, want %q", got, tc.want)
			}
		})
	}
}

// A hostile or corrupt state file never crashes the check, never holds
// more than its bounds, and leaves a check that judges the next reads:
// ten times MaxPorts ports, a window of a thousand starts, times in year
// 0 and 9999, NaN (not JSON: the section starts fresh, listed).
func TestMemory_HostileStateFileBoundedAndStillJudging(t *testing.T) {
	ports := map[string]any{}
	for i := range 10 * MaxPorts {
		ports[fmt.Sprintf("ib%d/1", i)] = map[string]any{"peerGUID": "0xb83fd20300a01000", "peerPort": 17}
	}
	var starts []map[string]any
	for i := range 1000 {
		starts = append(starts, map[string]any{"value": i, "timestamp": time.Unix(int64(i), 0).UTC()})
	}
	ports["mlx5_0/1"] = map[string]any{"peerGUID": "0xb83fd20300a01000", "peerPort": 17, "at": "9999-12-31T23:59:59Z",
		"latched": map[string]any{"symbol_error_fatal": "0000-01-01T00:00:00Z"},
		"windows": map[string]any{"symbol_error_fatal": map[string]any{"starts": starts}, "symbol_error": map[string]any{"starts": []map[string]any{
			{"value": 5, "timestamp": "9999-12-31T23:59:59Z"}}, "judgedTo": "0000-01-01T00:00:00Z"}},
		"peers":       []map[string]any{{"guid": "0xb83fd20300a01000", "port": 17, "at": "0000-01-01T00:00:00Z"}},
		"stableSince": "0000-01-01T00:00:00Z"}
	raw, _ := json.Marshal(map[string]any{"version": 1, "ports": ports})
	h := newHarness(t, "")
	dropped := h.c.Restore(raw)
	if n := len(h.c.Memory().Ports); n > MaxPorts {
		t.Fatalf("%d ports restored, bound %d", n, MaxPorts)
	}
	if w := h.c.Memory().Ports[latch.PortOf("mlx5_0", 1)]; w == nil || w.Windows["symbol_error_fatal"] != nil {
		t.Fatalf("a window of 1000 starts kept (dropped %d entries)", len(dropped))
	}
	h.c.Resume()
	// It judges: a per-second burst is raised at once, the clock of the
	// file notwithstanding.
	h.read(time.Minute, leaf1, nil)
	if got := codes(h.read(time.Minute, leaf1, sym(700))); strings.Join(got, " ") != "peer-breach peer:symbol_error" {
		t.Fatalf("after a hostile file: %v", got)
	}
	if dropped := NewCheck().Restore([]byte(`{"version":1,"ports":{"mlx5_0/1":{"peerGUID":"0xb83fd20300a01000","peerPort":17,"values":[NaN]}}}`)); len(dropped) != 1 ||
		!strings.Contains(dropped[0], "unreadable") {
		t.Fatalf("NaN: %v", dropped)
	}
}
