package runner

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology/sim"
)

// DESIGN.md section 16 on a simulated node: the RoCE signals are read by
// the counter plan from the port's hw_counters and its netdev's driver
// statistics (the priorities without PFC fail open), each class raises
// from its own signals after a full window with its evidence, and the
// views read it; a busy port handling congestion raises nothing.
func TestDesign16_RoCEClassesOnSimulatedNode(t *testing.T) {
	const dev, netdev = "mlx5_8", "enp65s0f0np0"
	for _, tc := range []struct {
		name  string
		per   map[string]uint64 // added every second
		class string
		event bool
		words []string
	}{
		{"np_ecn_marked_roce_packets and rp_cnp_handled: roce-congested, shown only",
			map[string]uint64{"np_ecn_marked_roce_packets": 3000, "rp_cnp_handled": 2000, "np_cnp_sent": 500, "rx_prio3_pause_duration": 10000}, "roce-congested", false, nil},
		{"out_of_sequence and packet_seq_err: roce-lossy",
			map[string]uint64{"out_of_sequence": 10, "packet_seq_err": 5}, "roce-lossy", true, []string{"out_of_sequence 10.0/s", "PFC"}},
		{"out_of_buffer: roce-rx-starved",
			map[string]uint64{"out_of_buffer": 50}, "roce-rx-starved", true, []string{"out_of_buffer 50.0/s", "not the network"}},
		{"tx_pause_storm_warning_events with tx_prio3_pause_duration: roce-pause-storm on priority 3, tx",
			map[string]uint64{"tx_pause_storm_warning_events": 1, "tx_prio3_pause_duration": 300000}, "roce-pause-storm", true, []string{"priority 3", "(tx)"}},
		{"rx_prio3_pause_duration most of the window: roce-pause-storm, rx",
			map[string]uint64{"rx_prio3_pause_duration": 800000}, "roce-pause-storm", true, []string{"priority 3 rx paused 80.0%"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, h := phyMonitor(t)
			t0 := time.Unix(1_700_000_000, 0)
			m.Cycle(t0)
			var got []event.Spec
			for s := 1; s <= 60; s++ {
				for sig, n := range tc.per {
					if err := h.AddRoCESignal(dev, 1, sig, n); err != nil {
						t.Fatal(err)
					}
				}
				specs, _ := m.Cycle(t0.Add(time.Duration(s) * time.Second))
				for _, sp := range specs {
					if sp.Kind == event.KindRoCE || sp.Kind == event.KindRoCECleared {
						if s < 60 {
							t.Fatalf("%s at %ds, before the window was full", sp.Kind, s)
						}
						got = append(got, sp)
					}
				}
			}
			var info *struct{ classes []string }
			for _, pi := range m.PortInfos() {
				if pi.Device == dev && pi.Port == 1 {
					if pi.RoCE == nil {
						t.Fatal("no RoCE view for the RoCE port")
					}
					info = &struct{ classes []string }{pi.RoCE.Classes}
					// PFC is on priority 3 only: 7 priorities × 4 statistics
					// are absent and fail open.
					if pi.RoCE.Signals != 45-28 {
						t.Errorf("%d signals read, want 17", pi.RoCE.Signals)
					}
				}
				if pi.LinkLayer == "InfiniBand" && pi.RoCE != nil {
					t.Errorf("InfiniBand port %s/%d has a RoCE view", pi.Device, pi.Port)
				}
			}
			if info == nil || !slices.Equal(info.classes, []string{tc.class}) {
				t.Fatalf("classes %+v, want [%s]", info, tc.class)
			}
			if !tc.event {
				if len(got) != 0 {
					t.Fatalf("events %+v, want none", got)
				}
				return
			}
			if len(got) != 1 || got[0].ErrorCode[0] != tc.class || got[0].Device != dev || got[0].Metadata["netdev"] != netdev {
				t.Fatalf("events %+v, want one %s", got, tc.class)
			}
			for _, w := range tc.words {
				if !strings.Contains(got[0].Message, w) {
					t.Errorf("message %q lacks %q", got[0].Message, w)
				}
			}
		})
	}
}

// BenchmarkCycle_dgxH100_KeepOpen_NoRoCE is BenchmarkCycle_dgxH100_KeepOpen
// with [roce] off: the difference is what the RoCE signals cost a poll
// (their hw_counters files, and their driver statistics in the GSTATS
// every RoCE netdev already pays for). Both allocate nothing.
func BenchmarkCycle_dgxH100_KeepOpen_NoRoCE(b *testing.B) {
	h, err := sim.Build(b.TempDir(), "dgx-h100")
	if err != nil {
		b.Fatal(err)
	}
	m := perfMonitorWith(b, h, true, "[linkSanity]\nenabled = false\n[inventory]\nenabled = false\n[roce]\nenabled = false\n")
	now := perfWarm(m, time.Unix(1_700_000_000, 0), perfWarmCycles)
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Second)
		m.Cycle(now)
	}
	perfReport(b, m)
}
