package roce

import (
	"github.com/nichealth/nichealthd/checks/latch"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/event"
)

// Each class from the counters the kernel's mlx5 counters documentation
// names, judged over [roce]'s default one-minute window (DESIGN.md
// section 16): nothing before the window is full, the class at its end.
func TestDesign16_ClassPerCountersDocumentationEntry(t *testing.T) {
	for _, tc := range []struct {
		name   string
		per    map[Signal]uint64 // added every second
		class  string            // "" none
		event  bool              // an unhealthy event (not information only)
		inText []string          // in the raise message
	}{
		{"np_ecn_marked_roce_packets and rp_cnp_handled rising without loss is roce-congested, information only",
			map[Signal]uint64{ECNMarked: 900, CNPSent: 150, CNPHandled: 200}, Congested, false, nil},
		{"np_cnp_sent alone at 1000/s is not congestion (at the threshold, not above)",
			map[Signal]uint64{CNPSent: 1000}, "", false, nil},
		{"out_of_sequence with no congestion signal is roce-lossy",
			map[Signal]uint64{OutOfSequence: 11}, Lossy, true, []string{"out_of_sequence 11.0/s", "no congestion signal", "PFC", "ECN", "trust mode", "buffer"}},
		{"packet_seq_err is roce-lossy",
			map[Signal]uint64{PacketSeqErr: 11}, Lossy, true, []string{"packet_seq_err 11.0/s"}},
		{"implied_nak_seq_err is roce-lossy",
			map[Signal]uint64{ImpliedNakSeqErr: 11}, Lossy, true, []string{"implied_nak_seq_err 11.0/s"}},
		{"local_ack_timeout_err is roce-lossy",
			map[Signal]uint64{LocalAckTimeoutErr: 11}, Lossy, true, []string{"local_ack_timeout_err 11.0/s"}},
		{"duplicate_request is roce-lossy",
			map[Signal]uint64{DuplicateRequest: 11}, Lossy, true, []string{"duplicate_request 11.0/s"}},
		{"sequence errors add up across counters",
			map[Signal]uint64{OutOfSequence: 4, PacketSeqErr: 4, LocalAckTimeoutErr: 3}, Lossy, true, []string{"11.0/s"}},
		{"10 sequence errors a second is at the threshold, not above",
			map[Signal]uint64{OutOfSequence: 10}, "", false, nil},
		{"loss under ECN marks is roce-lossy, not congested",
			map[Signal]uint64{ECNMarked: 5000, CNPHandled: 5000, OutOfSequence: 20}, Lossy, true, []string{"while ECN and CNPs are active"}},
		{"out_of_buffer is roce-rx-starved: the host",
			map[Signal]uint64{OutOfBuffer: 11}, RxStarved, true, []string{"out_of_buffer 11.0/s", "not the network", "IRQ affinity", "receive WQE"}},
		{"rx_discards_phy alone is no class (it counts every priority, lossy TCP too)",
			map[Signal]uint64{RxDiscardsPhy: 10000}, "", false, nil},
		{"tx_pause_storm_warning_events is roce-pause-storm on the priority this port paused, tx",
			map[Signal]uint64{StormWarning: 1, prio(txPauseDuration, 3): 200000, prio(txPause, 3): 50}, PauseStorm, true, []string{"priority 3", "(tx)", "stopped draining"}},
		{"tx_pause_storm_error_events is roce-pause-storm",
			map[Signal]uint64{StormError: 1}, PauseStorm, true, []string{"60 pause storm events (warning 0, error 60)"}},
		{"rx_prio3_pause_duration over half the window is roce-pause-storm, rx",
			map[Signal]uint64{prio(rxPauseDuration, 3): 600000}, PauseStorm, true, []string{"priority 3 rx paused 60.0%", "(rx)", "switch"}},
		{"rx_prio3_pause_duration for half the window exactly is no storm",
			map[Signal]uint64{prio(rxPauseDuration, 3): 500000}, "", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, defaults)
			r.tick(0)
			if got := r.run(59*time.Second, tc.per); len(got) != 0 {
				t.Fatalf("events before the window was full: %v", codes(got))
			}
			if cl := r.classes(); len(cl) != 0 {
				t.Fatalf("classes before the window was full: %v", cl)
			}
			got := r.run(time.Second, tc.per)
			var want []string
			if tc.class != "" {
				want = []string{tc.class}
			}
			if cl := r.classes(); !slices.Equal(cl, want) {
				t.Fatalf("classes = %v, want %v", cl, want)
			}
			if !tc.event {
				if len(got) != 0 {
					t.Fatalf("events = %v, want none", codes(got))
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("events = %v, want one %s", codes(got), tc.class)
			}
			e := got[0]
			if e.Kind != event.KindRoCE || e.CheckName != "EthernetDegradationCheck" || e.IsFatal || e.IsHealthy ||
				!slices.Equal(e.ErrorCode, []string{tc.class}) || e.Device != "mlx5_2" || e.Port != 1 {
				t.Fatalf("event = %+v", e)
			}
			if e.Condition.Kind == "" || e.Condition.Name != tc.class {
				t.Fatalf("condition = %+v, want the class as its name", e.Condition)
			}
			for _, w := range tc.inText {
				if !strings.Contains(e.Message, w) {
					t.Errorf("message %q lacks %q", e.Message, w)
				}
			}
			for _, k := range []string{"evidence", "reason", "fix", "class", "window", "threshold"} {
				if e.Metadata[k] == "" {
					t.Errorf("metadata %q empty: %v", k, e.Metadata)
				}
			}
		})
	}
}

// A burst is averaged over the whole window, never extrapolated from one
// second (seed 10.4 step 5): 600 sequence errors in one second and none
// after are 10/s over the minute, not 600/s.
func TestDesign16_WindowHeldNotExtrapolated(t *testing.T) {
	r := newRig(t, defaults)
	r.tick(0)
	r.vals[OutOfSequence] += 600
	r.tick(time.Second)
	if got := r.run(59*time.Second, nil); len(got) != 0 {
		t.Fatalf("a one-second burst of 600 raised %v", codes(got))
	}
	r.vals[OutOfSequence] += 601
	r.tick(time.Second)
	if got := r.run(59*time.Second, nil); !slices.Equal(codes(got), []string{"roce:roce-lossy"}) {
		t.Fatalf("601 in a minute: events %v, want roce-lossy", codes(got))
	}
}

// Every raise has its clear: a class holds while a window stays at or
// above half of its threshold, and clears, with its error code, after a
// full window below half (as port_xmit_wait's congestion does).
func TestDesign16_HysteresisClearsBelowHalf(t *testing.T) {
	r := newRig(t, defaults)
	r.tick(0)
	if got := r.run(time.Minute, map[Signal]uint64{OutOfBuffer: 20}); !slices.Equal(codes(got), []string{"roce:roce-rx-starved"}) {
		t.Fatalf("raise: %v", codes(got))
	}
	if got := r.run(time.Minute, map[Signal]uint64{OutOfBuffer: 5}); len(got) != 0 {
		t.Fatalf("5/s is half of 10/s: the class holds, got %v", codes(got))
	}
	got := r.run(time.Minute, map[Signal]uint64{OutOfBuffer: 4})
	if !slices.Equal(codes(got), []string{"roce-cleared:roce-rx-starved"}) {
		t.Fatalf("4/s is below half: want the clear, got %v", codes(got))
	}
	if e := got[0]; !e.IsHealthy || e.Condition.Name != RxStarved || e.Metadata["since"] == "" {
		t.Fatalf("clear = %+v", e)
	}
	if cl := r.classes(); len(cl) != 0 {
		t.Fatalf("classes after the clear: %v", cl)
	}
}

// roce-congested is information: it shows in the views and clears there,
// never as an event, and it gives way to roce-lossy when loss appears.
func TestDesign16_CongestedIsInformationOnly(t *testing.T) {
	r := newRig(t, defaults)
	r.tick(0)
	if got := r.run(time.Minute, map[Signal]uint64{ECNMarked: 2000, CNPHandled: 2000}); len(got) != 0 {
		t.Fatalf("congestion handled raised %v", codes(got))
	}
	v, _ := r.c.PortView("mlx5_2", 1)
	if !slices.Equal(v.Classes, []string{Congested}) || !strings.Contains(v.Evidence[0], "np_ecn_marked_roce_packets 2000.0/s") || v.Congestion != 4000 {
		t.Fatalf("view = %+v", v)
	}
	got := r.run(time.Minute, map[Signal]uint64{ECNMarked: 2000, CNPHandled: 2000, PacketSeqErr: 30})
	if !slices.Equal(codes(got), []string{"roce:roce-lossy"}) || !slices.Equal(r.classes(), []string{Lossy}) {
		t.Fatalf("loss under congestion: events %v classes %v", codes(got), r.classes())
	}
	if got := r.run(time.Minute, nil); !slices.Equal(codes(got), []string{"roce-cleared:roce-lossy"}) {
		t.Fatalf("quiet minute: %v", codes(got))
	}
}

// A healthy busy port: heavy traffic with ECN marks and CNPs handled,
// brief pauses, a few sequence errors a minute, and nothing unhealthy.
func TestDesign16_HealthyBusyPortRaisesNothing(t *testing.T) {
	r := newRig(t, defaults)
	r.tick(0)
	busy := map[Signal]uint64{ECNMarked: 50000, CNPSent: 20000, CNPHandled: 40000, CNPIgnored: 10,
		prio(rxPause, 3): 400, prio(rxPauseDuration, 3): 20000, prio(txPause, 3): 100, prio(txPauseDuration, 3): 5000,
		RxDiscardsPhy: 2}
	for m := 0; m < 10; m++ {
		if got := r.run(time.Minute, busy); len(got) != 0 {
			t.Fatalf("minute %d: %v", m, codes(got))
		}
		r.vals[OutOfSequence] += 30 // half a sequence error a second
	}
	v, _ := r.c.PortView("mlx5_2", 1)
	if !slices.Equal(v.Classes, []string{Congested}) {
		t.Fatalf("classes = %v, want roce-congested only", v.Classes)
	}
	// 2% of the time paused on priority 3 at 400 Gb/s: 8 Gb/s lost.
	if v.PausePriority != 3 || v.PauseLostGbps != 8 || v.PauseLostPercent != 2 {
		t.Fatalf("lost bandwidth = %v Gb/s %v%% prio %d, want 8 Gb/s 2%% prio 3", v.PauseLostGbps, v.PauseLostPercent, v.PausePriority)
	}
}

// Pause time is bandwidth the port could not send, as port_xmit_wait's
// ticks are: 30 s paused in a minute on a 400 Gb/s port is 200 Gb/s, 50%.
func TestDesign16_PauseDurationIsLostBandwidth(t *testing.T) {
	r := newRig(t, defaults)
	r.tick(0)
	r.run(time.Minute, map[Signal]uint64{prio(rxPauseDuration, 5): 500000, prio(rxPauseDuration, 1): 100000})
	v, _ := r.c.PortView("mlx5_2", 1)
	if v.PausePriority != 5 || v.PauseLostGbps != 200 || v.PauseLostPercent != 50 {
		t.Fatalf("lost = %v Gb/s %v%% prio %d, want 200 Gb/s 50%% prio 5", v.PauseLostGbps, v.PauseLostPercent, v.PausePriority)
	}
}

// Missing counters fail open (seed 7.1): an inbox driver without the ECN
// and CNP counters still judges loss from what it has, and a port with
// none of the signals judges nothing.
func TestSeed7_1_MissingSignalsFailOpen(t *testing.T) {
	r := newRig(t, defaults)
	r.present = 0
	for _, s := range []Signal{OutOfSequence, PacketSeqErr, LocalAckTimeoutErr} {
		r.present.add(s)
	}
	r.tick(0)
	got := r.run(time.Minute, map[Signal]uint64{OutOfSequence: 20, ECNMarked: 1e6})
	if !slices.Equal(codes(got), []string{"roce:roce-lossy"}) {
		t.Fatalf("events %v", codes(got))
	}
	if !strings.Contains(got[0].Message, "not read on this port: implied_nak_seq_err, duplicate_request") {
		t.Errorf("message does not say what is not read: %q", got[0].Message)
	}
	r2 := newRig(t, defaults)
	r2.present = 0
	r2.tick(0)
	if got := r2.run(2*time.Minute, map[Signal]uint64{OutOfSequence: 100}); len(got) != 0 || r2.changed {
		t.Fatalf("a port without signals: events %v, memory changed %v", codes(got), r2.changed)
	}
}

// A counter that goes back (driver reload, an administrator's reset)
// restarts the window: no wrapped delta, no event.
func TestDesign16_CounterResetRestartsWindow(t *testing.T) {
	r := newRig(t, defaults)
	r.vals[OutOfSequence] = 1 << 40
	r.tick(0)
	r.run(30*time.Second, nil)
	r.vals[OutOfSequence] = 0
	if got := r.run(2*time.Minute, nil); len(got) != 0 {
		t.Fatalf("reset raised %v", codes(got))
	}
}

// Restart-safe: the window in progress and the classes raised survive a
// restart through the state file, and the clear after it carries the
// class.
func TestDesign16_RestartKeepsWindowAndClasses(t *testing.T) {
	r := newRig(t, defaults)
	r.tick(0)
	r.run(time.Minute, map[Signal]uint64{StormWarning: 1})
	if !slices.Equal(r.classes(), []string{PauseStorm}) {
		t.Fatalf("classes %v", r.classes())
	}
	r.run(30*time.Second, nil)
	raw, err := r.c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	c := NewCheck()
	if dropped := c.Restore(raw); len(dropped) != 0 {
		t.Fatalf("dropped %v", dropped)
	}
	c.Configure(Config{On: true, Thresholds: defaults})
	if rs := c.Restate(); len(rs) != 1 || rs[0].Spec.ErrorCode[0] != PauseStorm {
		t.Fatalf("restated %+v", rs)
	}
	r.c = c
	if got := r.run(29*time.Second, nil); len(got) != 0 {
		t.Fatalf("before the restored window is full: %v", codes(got))
	}
	if got := r.run(time.Second, nil); !slices.Equal(codes(got), []string{"roce-cleared:roce-pause-storm"}) {
		t.Fatalf("the restored window's end: %v", codes(got))
	}
}

// Switching [roce] off clears what it raised, with events; the
// information-only class goes without one.
func TestDesign16_SwitchedOffClears(t *testing.T) {
	r := newRig(t, defaults)
	r.tick(0)
	r.run(time.Minute, map[Signal]uint64{OutOfBuffer: 50})
	specs := r.c.Configure(Config{On: false, Thresholds: defaults})
	if !slices.Equal(codes(specs), []string{"roce-cleared:roce-rx-starved"}) {
		t.Fatalf("switched off: %v", codes(specs))
	}
}

// The memory stays bounded whatever a state file claims.
func TestDesign16_MemoryBounded(t *testing.T) {
	m := NewMemory()
	for i := range MaxPorts + 10 {
		m.Ports[latch.PortOf("mlx5_"+strings.Repeat("x", i%7)+string(rune('a'+i%26)), 1+i%200)] = &PortMemory{Classes: map[string]Raised{"bogus": {}}}
	}
	m.Validate()
	if len(m.Ports) > MaxPorts {
		t.Fatalf("%d ports kept, bound %d", len(m.Ports), MaxPorts)
	}
	for _, pm := range m.Ports {
		if len(pm.Classes) != 0 {
			t.Fatal("a class no build writes was kept")
		}
	}
}

// Switched off while the daemon was down: the restored classes clear at
// the start, with their events.
func TestDesign16_SwitchedOffWhileDownClearsOnResume(t *testing.T) {
	r := newRig(t, defaults)
	r.tick(0)
	r.run(time.Minute, map[Signal]uint64{OutOfBuffer: 50})
	raw, err := r.c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	c := NewCheck()
	c.Configure(Config{On: false, Thresholds: defaults})
	c.Restore(raw)
	if got := c.Resume(); !slices.Equal(codes(got), []string{"roce-cleared:roce-rx-starved"}) {
		t.Fatalf("resume: %v", codes(got))
	}
	if rs := c.Restate(); len(rs) != 0 {
		t.Fatalf("restated after the clear: %+v", rs)
	}
}
