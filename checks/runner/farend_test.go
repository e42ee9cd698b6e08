package runner

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/config"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/mad"
	"github.com/nichealth/nichealthd/mad/farend"
	"github.com/nichealth/nichealthd/mad/wire"
	"github.com/nichealth/nichealthd/observe"
)

// fixedFarEnd is a far end's reader that publishes what the test sets.
type fixedFarEnd struct {
	rd      atomic.Pointer[farend.PeerReading]
	targets atomic.Int64 // SetTargets calls
	last    atomic.Pointer[[]farend.Target]
}

func (f *fixedFarEnd) SetTargets(ts []farend.Target) {
	f.targets.Add(1)
	c := append([]farend.Target(nil), ts...)
	f.last.Store(&c)
}
func (f *fixedFarEnd) Latest() *farend.PeerReading { return f.rd.Load() }

// reading is one far-end reading of every IB port of ts with n symbol
// errors on each peer port, taken at at.
func reading(gen uint64, ts []farend.Target, n uint64, at time.Time) *farend.PeerReading {
	rd := &farend.PeerReading{Gen: gen, At: at, Helper: mad.State{Health: mad.Running}}
	for i, t := range ts {
		rd.Ports = append(rd.Ports, farend.PeerPort{Device: t.Device, Port: t.Port, GUID: t.GUID, Found: true, Read: true, Seq: gen, ReadAt: at,
			Peer: farend.Peer{Peer: wire.Peer{NodeGUID: fmt.Sprintf("0xb83fd20300a0%04x", i), PortGUID: "0xb83fd20300a01000", NodeType: 2, NumPorts: 41,
				Port: 1 + i, LID: 1, Description: "leaf", State: 4, PhysState: 5}, Name: fmt.Sprintf("ibsw-leaf%d", i)},
			Counters: wire.PortCounters{SymbolErrorCounter: n}})
	}
	return rd
}

// The cycle hands the far end's reader the InfiniBand ports once, and
// again only when one changes state; a steady cycle with the far end
// open allocates nothing; a new reading is judged once into conditions
// on the right ports, with the peer in every port's view.
func TestFarEnd_TargetsReadingsAndSteadyCycle(t *testing.T) {
	m, h := perfMonitor(t, "dgx-h100", false)
	fe := &fixedFarEnd{}
	fe.rd.Store(&farend.PeerReading{})
	m.UseFarEnd(fe)
	now := perfWarm(m, time.Unix(1_700_000_000, 0), perfWarmCycles)
	if n := fe.targets.Load(); n != 1 {
		t.Fatalf("targets handed %d times over %d steady cycles, want once", n, perfWarmCycles)
	}
	ts := *fe.last.Load()
	if len(ts) != 8 {
		t.Fatalf("%d targets: the dgx-h100 has 8 InfiniBand ports", len(ts))
	}
	for _, tg := range ts {
		if !tg.Up || !strings.HasPrefix(tg.GUID, "0x") || len(tg.GUID) != 18 {
			t.Fatalf("target %+v", tg)
		}
	}
	allocs := testing.AllocsPerRun(50, func() {
		now = now.Add(time.Second)
		m.Cycle(now)
	})
	if allocs != 0 {
		t.Fatalf("a steady dgx-h100 poll with the far end open allocates %.1f objects", allocs)
	}
	if err := h.SetPortState(ts[3].Device, ts[3].Port, "DOWN", "Polling"); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	m.Cycle(now)
	if n := fe.targets.Load(); n != 2 {
		t.Fatalf("a port state change handed the targets %d times in all, want 2", n)
	}
	if got := (*fe.last.Load())[3]; got.Up || got.Epoch == ts[3].Epoch {
		t.Fatalf("the downed port's target %+v (was %+v)", got, ts[3])
	}
	// A baseline reading, then one with errors a minute later.
	fe.rd.Store(reading(1, ts, 0, now))
	now = now.Add(time.Second)
	m.Cycle(now)
	fe.rd.Store(reading(2, ts, 655, now.Add(time.Minute)))
	now = now.Add(time.Second)
	specs, _ := m.Cycle(now)
	breaches := 0
	for _, s := range specs {
		if s.Kind == event.KindPeerBreach {
			breaches++
			if s.CheckName != event.FarEndCheck || s.IsFatal || !strings.HasPrefix(s.Message, "Direct-attached ibsw-leaf") {
				t.Fatalf("%+v", s)
			}
		}
	}
	if breaches != len(ts) {
		t.Fatalf("%d breaches for %d ports", breaches, len(ts))
	}
	if specs, _ := m.Cycle(now.Add(time.Second)); len(specs) != 0 {
		t.Fatalf("the same reading judged twice: %d events", len(specs))
	}
	for _, pi := range m.PortInfos() {
		if pi.LinkLayer != "InfiniBand" {
			if pi.Peer != nil {
				t.Fatalf("%s/%d (Ethernet) has a peer", pi.Device, pi.Port)
			}
			continue
		}
		if pi.Peer == nil || !pi.Peer.Found || pi.Peer.Counters[0].Value != 655 || len(pi.Peer.Counters[0].Latched) != 1 {
			t.Fatalf("%s/%d view %+v", pi.Device, pi.Port, pi.Peer)
		}
	}
	specs, err := m.Acknowledge(ts[0].Device, ts[0].Port, "peer:symbol_error", now, "uid 0")
	if err != nil || len(specs) != 1 || !specs[0].IsHealthy {
		t.Fatalf("ack: %v %v", specs, err)
	}
	if _, err := m.Acknowledge(ts[0].Device, ts[0].Port, "peer:symbol_error", now, "uid 0"); !IsNotLatched(err) {
		t.Fatalf("second ack: %v", err)
	}
	// A saturated far-end field is acknowledged through the same door
	// (nichealthctl ack DEV PORT peer-saturated:FIELD).
	if _, err := m.Acknowledge(ts[0].Device, ts[0].Port, "peer-saturated:SymbolErrorCounter", now, "uid 0"); !IsNotLatched(err) {
		t.Fatalf("ack of a field not saturated: %v", err)
	}
	fe.rd.Store(reading(3, ts, 65535, now.Add(2*time.Minute)))
	m.Cycle(now.Add(2 * time.Second))
	specs, err = m.Acknowledge(ts[0].Device, ts[0].Port, "peer-saturated:SymbolErrorCounter", now, "uid 0")
	if err != nil || len(specs) != 1 || specs[0].Kind != event.KindPeerUnsaturated || !specs[0].IsHealthy {
		t.Fatalf("ack of a saturated field: %v %v", specs, err)
	}
}

// BenchmarkFarEnd_CycleWithNewReading is a steady dgx-h100 poll cycle
// that also judges a new reading of its 8 InfiniBand ports' far ends (what
// happens once a [farEnd] interval, 60 s by default); compare with
// BenchmarkCycle_dgxH100.
func BenchmarkFarEnd_CycleWithNewReading(b *testing.B) {
	m, _ := perfMonitor(b, "dgx-h100", false)
	fe := &fixedFarEnd{}
	fe.rd.Store(&farend.PeerReading{})
	m.UseFarEnd(fe)
	now := perfWarm(m, time.Unix(1_700_000_000, 0), perfWarmCycles)
	rd := reading(1, *fe.last.Load(), 0, now)
	fe.rd.Store(rd)
	b.ReportAllocs()
	for b.Loop() {
		// The same counters a minute later (the steady case, no breach):
		// the reading's generation and sequence move, as the reader's do.
		rd.Gen++
		for i := range rd.Ports {
			rd.Ports[i].Seq, rd.Ports[i].ReadAt = rd.Gen, rd.Ports[i].ReadAt.Add(time.Minute)
		}
		now = now.Add(time.Second)
		m.Cycle(now)
	}
}

// DESIGN.md section 13: the far end's memory restored at a start is
// reconciled with the configuration as a reload's is. A far-end field
// switched off (or the far end as a whole) while the daemon was stopped
// clears its latch, its saturation and the helper's condition with the
// first cycle; nothing would judge them again to clear them.
func TestFarEnd_StartReconcilesRestoredMemoryWithTheConfiguration(t *testing.T) {
	section := `{"version":1,"ports":{"mlx5_0/1":{"peerGUID":"0xb83fd20300a01000","peerPort":17,"peerName":"ibsw-leaf1",` +
		`"latched":{"link_downed":"2026-01-01T00:00:00Z","symbol_error":"2026-01-01T00:00:00Z"},"saturated":{"LinkDownedCounter":"2026-01-01T00:00:00Z"}}},` +
		`"lost":{"since":"2026-01-01T00:00:00Z","reason":"nichealth-mad exited"}}`
	for _, tc := range []struct{ name, toml, want string }{
		{"LinkDownedCounter switched off", "[farEnd.counters]\nLinkDownedCounter = false\n",
			"peer-recovered peer:link_downed; peer-unsaturated peer-saturated:LinkDownedCounter"},
		{"the far end switched off", "[farEnd]\nenabled = false\n",
			"peer-recovered peer:link_downed; peer-recovered peer:symbol_error; peer-unsaturated peer-saturated:LinkDownedCounter; far-end-restored far-end-lost"},
		{"nothing changed", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse(filepath.Join(t.TempDir(), "config.toml"), []byte("nodeName = \"t\"\n"+tc.toml))
			if err != nil {
				t.Fatal(err)
			}
			model := health.NewModel()
			r := New(cfg, observe.BootSame, "boot", slog.New(slog.DiscardHandler), Seams{}, model)
			t.Cleanup(r.Close)
			if dropped := r.Restore(func(s string) []byte {
				if s == "farEnd" {
					return []byte(section)
				}
				return nil
			}); len(dropped) != 0 {
				t.Fatal(dropped)
			}
			r.Resume(model)
			var got []string
			for _, s := range r.pending {
				if s.CheckName == event.FarEndCheck {
					got = append(got, string(s.Kind)+" "+strings.Join(s.ErrorCode, ","))
				}
			}
			if strings.Join(got, "; ") != tc.want {
				t.Fatalf("the first cycle says %q, want %q", got, tc.want)
			}
		})
	}
}
