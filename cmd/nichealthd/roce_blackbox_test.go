package main

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/event"
)

// roceLoad keeps adding RoCE signals to a simulated port every 100 ms,
// as a port under traffic counts them, until stopped.
type roceLoad struct {
	mu   sync.Mutex
	per  map[string]uint64 // added every 100 ms
	stop chan struct{}
	done chan struct{}
}

func (v *viewNode) roceLoad(dev string) *roceLoad {
	l := &roceLoad{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		tk := time.NewTicker(100 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-tk.C:
				l.mu.Lock()
				for s, n := range l.per {
					if err := v.h.AddRoCESignal(dev, 1, s, n); err != nil {
						v.t.Errorf("%s: %v", s, err)
					}
				}
				l.mu.Unlock()
			}
		}
	}()
	v.t.Cleanup(l.end)
	return l
}

func (l *roceLoad) set(per map[string]uint64) {
	l.mu.Lock()
	l.per = per
	l.mu.Unlock()
}

func (l *roceLoad) end() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	<-l.done
}

// DESIGN.md section 16 on the simulated node, in every view: a busy port
// whose congestion control handles ECN marks shows roce-congested on
// D-Bus, nichealthctl and /metrics and stays healthy with no event; loss
// with no congestion signal is a non-fatal roce-lossy event with its
// evidence, fix and the GPUs behind the NIC, and degrades the port in
// every view until a quiet window clears it; out_of_buffer and a pause
// storm are their own classes, the storm naming its priority and
// direction.
func TestRoCE_BlackBox_ClassesInEveryView(t *testing.T) {
	t.Parallel()
	v := newShapeViewNode(t, "dgx-h100", "[roce]\nwindow = \"2s\"\n")
	v.simulate() // the driver statistics come from nichealth-sim, not a driver
	const dev = "mlx5_8"
	v.start()
	v.waitReady()
	// PFC is on priority 3 only: the other priorities' pause statistics
	// fail open, named once in the device's counter availability log.
	missingLogged := func() int {
		n := 0
		for _, l := range strings.Split(v.stderr.String(), "\n") {
			if strings.Contains(l, "device="+dev) && strings.Contains(l, "roce:rx_prio0_pause_duration") {
				n++
			}
		}
		return n
	}
	if n := missingLogged(); n != 1 {
		t.Errorf("the missing RoCE statistics of %s are logged %d times at start, want once:\n%s", dev, n, v.stderr.Tail())
	}
	classOf := func(class string) string {
		return `nichealth_roce_class{device="` + dev + `",port="1",class="` + class + `"}`
	}
	v.waitScrape(classOf("roce-lossy") + " 0")
	skip := len(v.read())
	load := v.roceLoad(dev)

	// A healthy busy port: ECN marks and CNPs at thousands a second, PFC
	// pausing priority 3 for 2% of the time, nothing lost.
	load.set(map[string]uint64{"np_ecn_marked_roce_packets": 300, "np_cnp_sent": 50, "rp_cnp_handled": 200,
		"rx_prio3_pause": 40, "rx_prio3_pause_duration": 2000, "rx_discards_phy": 1})
	v.waitScrape(classOf("roce-congested") + " 1")
	p := v.waitPort(dev, 1, "roce-congested on D-Bus", func(p dbusapi.PortView) bool { return p.RoCEClass == "roce-congested" })
	if !strings.Contains(p.RoCEEvidence, "np_ecn_marked_roce_packets") || p.RoCEPauseLostGbps <= 0 {
		t.Errorf("busy port on D-Bus: %+v", p)
	}
	out, code := v.ctl("port", dev, "1")
	if code != 0 || !strings.Contains(out, "RoCE class: roce-congested (information: congestion control working)") {
		t.Errorf("nichealthctl port on the busy port (exit %d):\n%s", code, out)
	}
	v.agree(verdictWant{dev, 1, "healthy"})

	// Quiet until a whole window without marks has been judged, so the
	// next window sees loss alone; roce-congested goes without an event.
	load.set(nil)
	v.waitScrape(classOf("roce-congested") + " 0")
	if n := count(v.read()[skip:], portEvent(dev, event.KindRoCE)); n != 0 {
		t.Fatalf("a busy port raised %d RoCE events: %s", n, summary(v.read()[skip:]))
	}

	// Loss with no congestion signal: the lossless configuration.
	load.set(map[string]uint64{"out_of_sequence": 3, "packet_seq_err": 1})
	e := v.waitEventAfter(skip, "roce-lossy", portEvent(dev, event.KindRoCE))
	if e.IsFatal || e.IsHealthy || e.RecommendedAction != event.ActionNone || e.CheckName != event.EthernetDegradationCheck ||
		!slices.Equal(e.ErrorCode, []string{"roce-lossy"}) || e.Metadata["gpus"] == "" || e.Metadata["fix"] == "" ||
		!strings.Contains(e.Message, "no congestion signal") || !strings.Contains(e.Message, "out_of_sequence") || !strings.Contains(e.Message, "PFC") {
		t.Fatalf("roce-lossy event %+v", e)
	}
	v.agree(verdictWant{dev, 1, "degraded"})
	v.waitScrape(classOf("roce-lossy") + " 1")
	out, _ = v.ctl("port", dev, "1")
	if !strings.Contains(out, "RoCE class: roce-lossy") || !strings.Contains(out, "RoCE evidence: roce-lossy: sequence errors") {
		t.Errorf("nichealthctl port on the lossy port:\n%s", out)
	}

	// Quiet: the clear carries the class.
	load.set(nil)
	c := v.waitEventAfter(skip, "roce-lossy cleared", portEvent(dev, event.KindRoCECleared))
	if !c.IsHealthy || !slices.Equal(c.ErrorCode, []string{"roce-lossy"}) {
		t.Fatalf("clear %+v", c)
	}
	v.agree(verdictWant{dev, 1, "healthy"})

	// The host not posting receive buffers, and a receiver that stopped
	// draining on priority 3 (the CLI writes the storm event).
	skip = len(v.read())
	load.set(map[string]uint64{"out_of_buffer": 5, "tx_prio3_pause_duration": 60000, "tx_prio3_pause": 100})
	netdev := simDevice(t, v.h, dev).NetDev
	deadline := time.Now().Add(waitDeadline)
	for d, _ := v.h.PHYStat(netdev, "tx_prio3_pause_duration"); d == 0; d, _ = v.h.PHYStat(netdev, "tx_prio3_pause_duration") {
		if time.Now().After(deadline) {
			t.Fatal("the load never paused priority 3")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The CLI writes the storm event, the load held meanwhile: both
	// rewrite the statistics file, and must not race.
	load.mu.Lock()
	v.sim("roce", dev, "1", "tx_pause_storm_warning_events", "+1")
	load.mu.Unlock()
	seen := map[string]event.Event{}
	for len(seen) < 2 {
		e := v.waitEventAfter(skip, "roce-rx-starved and roce-pause-storm", portEvent(dev, event.KindRoCE))
		seen[e.ErrorCode[0]] = e
		skip = slices.IndexFunc(v.read(), func(x event.Event) bool { return x.ID == e.ID }) + 1
	}
	if s := seen["roce-rx-starved"]; !strings.Contains(s.Message, "out_of_buffer ") || !strings.Contains(s.Message, "not the network") {
		t.Errorf("roce-rx-starved %+v", s)
	}
	if s := seen["roce-pause-storm"]; s.Metadata["priority"] != "3" || s.Metadata["direction"] != "tx" {
		t.Errorf("roce-pause-storm %+v", s)
	}
	v.waitPort(dev, 1, "both classes on D-Bus", func(p dbusapi.PortView) bool { return p.RoCEClass == "roce-rx-starved,roce-pause-storm" })
	v.agree(verdictWant{dev, 1, "degraded"})
	load.end()
	if n := missingLogged(); n != 1 {
		t.Errorf("the missing RoCE statistics of %s are logged %d times, want once", dev, n)
	}
	v.stop()
}
