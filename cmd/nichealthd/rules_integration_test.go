package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks/rules"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/persist"
)

func ruleEvent(dev, check string, healthy bool) func(e event.Event) bool {
	return func(e event.Event) bool {
		want := event.KindRuleRaised
		if healthy {
			want = event.KindRuleCleared
		}
		return e.Device() == dev && e.CheckName == check && e.Kind == want && e.IsHealthy == healthy
	}
}

// flapOnce takes a port down and back up, waiting for the daemon to report
// each edge, so each is one link-down episode.
func flapOnce(t *testing.T, n *node, dev string) {
	t.Helper()
	skip := len(n.read())
	n.h.SetPortState(dev, 1, "DOWN", "Disabled")
	n.waitEventAfter(skip, dev+" down", portEvent(dev, event.KindPortFatal))
	skip = len(n.read())
	n.h.SetPortState(dev, 1, "ACTIVE", "LinkUp")
	n.waitEventAfter(skip, dev+" up", portEvent(dev, event.KindPortRecovered))
}

// waitRuleEpisodes waits until the state file's rules section holds want
// episodes for port key ("<device>/<port>") and the port back up: the save
// of the poll that saw it recover.
func waitRuleEpisodes(t *testing.T, n *node, key string, want int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if st, _, err := persist.Load(n.state); err == nil {
			var rs rules.State
			if json.Unmarshal(st.Section("rules"), &rs) == nil && rs.Ports[key] != nil && rs.Ports[key].FlapWindow.Count() >= uint64(want) && rs.Ports[key].Up {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the state file never held %d episodes for %s", want, key)
}

// Seed state 6.3 (RepeatedNICLinkFlap) on the node: 3 link-down episodes
// within 10 minutes is fatal, REPLACE_VM, and holds until the port has
// been stable for the stabilization window (shortened here to 3 s). The
// window survives a SIGKILL between the second and third episode.
func TestRules_6_3_LinkFlapRaisedSurvivesCrashAndClearsAfterStabilization(t *testing.T) {
	t.Parallel()
	n := newNode(t, "dgx-h100", "[rules.flap]\nstabilization = \"3s\"\n")
	n.start()
	n.waitEvent("baseline", portEvent("mlx5_2", event.KindPortBaseline))
	flapOnce(t, n, "mlx5_2")
	flapOnce(t, n, "mlx5_2")
	if c := count(n.read(), ruleEvent("mlx5_2", "RepeatedNICLinkFlap", false)); c != 0 {
		t.Fatalf("flap raised after 2 episodes (the seed says 3)")
	}
	// The kill lands once the state file holds both episodes (an event
	// reaches the sinks a moment before the poll that made it saves).
	waitRuleEpisodes(t, n, "mlx5_2/1", 2)
	n.kill()
	n.start()
	flapOnce(t, n, "mlx5_2")
	e := n.waitEvent("flap rule", ruleEvent("mlx5_2", "RepeatedNICLinkFlap", false))
	if !e.IsFatal || e.RecommendedAction != event.ActionReplaceVM || !strings.Contains(e.Message, "flapping") {
		t.Fatalf("flap event %+v", e)
	}
	// Stable for the stabilization window: cleared.
	c := n.waitEvent("flap cleared", ruleEvent("mlx5_2", "RepeatedNICLinkFlap", true))
	if d := c.GeneratedTimestamp.Sub(e.GeneratedTimestamp); d < 2*time.Second {
		t.Fatalf("flap cleared %v after it was raised, before the 3 s stabilization", d)
	}
	n.stop()
}

// Seed state 6.2 (NICPortDrop): DOWN for the drop time (shortened to 2 s)
// with no link_downed change is fatal; the port coming back clears it.
func TestRules_6_2_PortDropRaisedAndCleared(t *testing.T) {
	t.Parallel()
	n := newNode(t, "dgx-h100", "[rules.drop]\nafter = \"2s\"\n")
	n.start()
	n.waitEvent("baseline", portEvent("mlx5_4", event.KindPortBaseline))
	start := time.Now()
	n.h.SetPortState("mlx5_4", 1, "DOWN", "Disabled")
	e := n.waitEvent("drop rule", ruleEvent("mlx5_4", "NICPortDrop", false))
	if !e.IsFatal || time.Since(start) < 2*time.Second {
		t.Fatalf("drop event %+v after %v", e, time.Since(start))
	}
	n.h.SetPortState("mlx5_4", 1, "ACTIVE", "LinkUp")
	n.waitEvent("drop cleared", ruleEvent("mlx5_4", "NICPortDrop", true))
	n.stop()
	// A port DOWN since the daemon's first sight is unprovisioned, not
	// dropped (DESIGN.md difference 4): the management-free simulator has
	// none, so no other port may have dropped.
	if c := count(n.read(), func(e event.Event) bool {
		return e.CheckName == "NICPortDrop" && e.Device() != "mlx5_4" && !e.IsHealthy
	}); c != 0 {
		t.Fatalf("%d unexpected drop events", c)
	}
}

// Seed counter 1.4 and 3.1 (RepeatedNICDegradation) on the node: 5
// non-fatal degradation events of one port within the window (24 h,
// shortened here to 10 s) are fatal, REPLACE_VM, and clear once the window
// has passed with the port healthy (DESIGN.md difference 15).
func TestRules_Counters_1_4_RepeatedNICDegradationIsFatal(t *testing.T) {
	t.Parallel()
	n := newNode(t, "dgx-h100", "[rules.degradation]\nwindow = \"10s\"\n")
	n.start()
	n.waitEvent("baseline", portEvent("mlx5_8", event.KindPortBaseline))
	for i := 0; i < 5; i++ {
		if i == 4 {
			if c := count(n.read(), ruleEvent("mlx5_8", "RepeatedNICDegradation", false)); c != 0 {
				t.Fatal("escalated after 4 events (the seed says 5)")
			}
		}
		skip := len(n.read())
		n.h.SetOperstate("enp65s0f0np0", "down")
		n.waitEventAfter(skip, "degraded", portEvent("mlx5_8", event.KindPortNonFatal))
		skip = len(n.read())
		n.h.SetOperstate("enp65s0f0np0", "up")
		n.waitEventAfter(skip, "healthy", portEvent("mlx5_8", event.KindPortRecovered))
	}
	e := n.waitEvent("escalation", ruleEvent("mlx5_8", "RepeatedNICDegradation", false))
	if !e.IsFatal || e.RecommendedAction != event.ActionReplaceVM || len(e.ErrorCode) != 1 || e.ErrorCode[0] != "RepeatedNICDegradation" {
		t.Fatalf("escalation %+v", e)
	}
	c := n.waitEvent("escalation cleared", ruleEvent("mlx5_8", "RepeatedNICDegradation", true))
	if len(c.ErrorCode) != 1 || c.ErrorCode[0] != "RepeatedNICDegradation" {
		t.Fatalf("clear %+v", c)
	}
	n.stop()
}

// DESIGN.md difference 19 (issue 31 row 3) on the built daemon:
// carrier_changes 2 → 4 → 7 and on on an ACTIVE RoCE port (an MTU change,
// an ip link down/up, a NetworkManager restart) is a netdev event. The
// daemon raises one non-fatal carrier_changes breach
// (EthernetDegradationCheck, no action), counts no link-down episode and
// raises no RepeatedNICLinkFlap; the port stays ACTIVE throughout.
func TestDesign_19_CarrierChangesOnActiveRoCEPortAreNoFlap(t *testing.T) {
	t.Parallel()
	const netdev = "enp65s0f0np0" // mlx5_8, RoCE, ACTIVE
	n := newNode(t, "dgx-h100", "")
	n.withMetrics()
	n.start()
	n.waitEvent("baseline", portEvent("mlx5_8", event.KindCounterBaseline))
	for _, v := range []uint64{2, 4, 7, 9, 13, 20} {
		if err := n.h.SetCarrierChanges(netdev, v); err != nil {
			t.Fatal(err)
		}
		n.waitCounterValue("mlx5_8", 1, "carrier_changes", float64(v))
	}
	b := n.waitEvent("carrier_changes breach", counterBreach("mlx5_8", "carrier_changes"))
	if b.IsFatal || b.CheckName != event.EthernetDegradationCheck || b.RecommendedAction != event.ActionNone ||
		len(b.ErrorCode) != 1 || b.ErrorCode[0] != "carrier_changes" {
		t.Fatalf("carrier_changes breach %+v, want non-fatal under %s with no action", b, event.EthernetDegradationCheck)
	}
	// The rules run after every poll that had events, and at least once a
	// second: whole polls after the last reading, they have judged it.
	n.waitPolls(12)
	const ep = `nichealth_port_link_down_episodes_total{device="mlx5_8",port="1",`
	n.waitMetric("mlx5_8's link-down episodes at 0", ep, func(m map[string]float64) bool {
		for k, v := range m {
			if strings.HasPrefix(k, ep) {
				return v == 0
			}
		}
		return false
	})
	n.stop()
	evs := n.read()
	if k := count(evs, func(e event.Event) bool { return e.CheckName == event.FlapCheck && !e.IsHealthy }); k != 0 {
		t.Fatalf("%d %s raises on carrier_changes alone: %s", k, event.FlapCheck, summary(evs))
	}
	if k := count(evs, func(e event.Event) bool { return e.Device() == "mlx5_8" && e.IsFatal }); k != 0 {
		t.Fatalf("%d fatal events on mlx5_8: %s", k, summary(evs))
	}
}
