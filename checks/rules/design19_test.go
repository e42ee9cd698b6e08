package rules

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/config"
	"github.com/nichealth/nichealthd/config/countertable"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/observe"
	"github.com/nichealth/nichealthd/topology"
)

// roceObservation is an ACTIVE RoCE port (mlx5_8 port 1) whose counter
// tick read link_downed, carrier_changes and link_down_events_phy.
func roceObservation(now time.Time, linkDowned, carrier, phy uint64) *observe.Observation {
	dev := &topology.Device{Name: "mlx5_8", Mellanox: true}
	port := &topology.Port{Num: 1, LinkLayer: topology.LinkLayerEthernet}
	sample := func(row int, v uint64) observe.Sample {
		return observe.Sample{Rows: []int{row}, Value: v, At: now}
	}
	return &observe.Observation{Now: now, CounterTick: true,
		Counters: []observe.Counter{{Name: "link_downed"}, {Name: "carrier_changes"}, {Name: PHYLinkDownEvents}},
		Ports: []*observe.Port{{Device: dev, Port: port, Observed: true, Readable: true, Link: linkOf("ACTIVE"),
			Samples: []observe.Sample{sample(0, linkDowned), sample(1, carrier), sample(2, phy)}}}}
}

// DESIGN.md difference 19 (issue 31 row 3): carrier_changes 2 → 4 → 7 on
// an ACTIVE RoCE port (an MTU change, an ip link down/up, a
// NetworkManager restart) is a netdev event, not a link flap: it is no
// link-down episode and raises no RepeatedNICLinkFlap, while the link-down
// witnesses (link_downed, link_down_events_phy, the state) still count.
func TestDesign_19_CarrierChangesAreNoLinkDownEpisodes(t *testing.T) {
	c := NewCheck(observe.BootSame, "boot", health.NewModel())
	c.Configure(config.DefaultRules(), map[string]bool{event.FlapCheck: true, event.DropCheck: true, event.DegradationCheck: true})
	e := c.Engine()
	now := time.Unix(1_700_000_000, 0)
	for i, cc := range []uint64{2, 4, 7, 11, 40, 4_000_000_000} {
		at := now.Add(time.Duration(i) * 10 * time.Second)
		if ch := e.Cycle(at, c.Readings(roceObservation(at, 0, cc, 0)), nil); len(ch) != 0 {
			t.Fatalf("carrier_changes %d: rule changes %+v", cc, ch)
		}
		if n, _ := e.Episodes("mlx5_8", 1); n != 0 {
			t.Fatalf("carrier_changes %d: %d link-down episodes, want 0", cc, n)
		}
	}
	// The same port's real link-downs, seen only by the PHY's 64-bit
	// counter, still flap: 3 within 10 minutes (seed state 6.3).
	var raised []Change
	for i, phy := range []uint64{1, 2, 3} {
		at := now.Add(time.Minute + time.Duration(i)*time.Minute)
		raised = append(raised, e.Cycle(at, c.Readings(roceObservation(at, 0, 4_000_000_000, phy)), nil)...)
	}
	if len(raised) != 1 || !raised[0].Raise || raised[0].Condition.Check != event.FlapCheck || !raised[0].Condition.Fatal {
		t.Fatalf("three link_down_events_phy steps: %+v, want one fatal %s", raised, event.FlapCheck)
	}
}

// DESIGN.md difference 19: a carrier_changes breach stays non-fatal (its
// default row, counter seed 4.5: "> 2/interval", IsFatal no) and counts
// toward RepeatedNICDegradation: five of the port's non-fatal events in
// the window escalate it, as any other non-fatal counter breach does.
func TestDesign_19_CarrierChangesBreachesCountTowardDegradationOnly(t *testing.T) {
	for _, d := range countertable.Defaults() {
		if d.Name == "carrier_changes" && (d.IsFatal || d.Threshold != 2 || d.ThresholdType != countertable.TypeDelta) {
			t.Fatalf("default carrier_changes row %+v, want non-fatal delta > 2", d)
		}
	}
	c := NewCheck(observe.BootSame, "boot", health.NewModel())
	c.Configure(config.DefaultRules(), map[string]bool{event.FlapCheck: true, event.DropCheck: true, event.DegradationCheck: true})
	e := c.Engine()
	now := time.Unix(1_700_000_000, 0)
	var got []Change
	for i := 0; i < 5; i++ {
		at := now.Add(time.Duration(i) * time.Hour)
		// Each breach latched, acknowledged, and breached again: a new
		// raise of the same condition each time.
		deg := []Degraded{{Key: event.EthernetDegradationCheck + "|mlx5_8/1 carrier_changes", Device: "mlx5_8", Port: 1, Since: at}}
		got = append(got, e.Cycle(at, c.Readings(roceObservation(at, 0, uint64(2+7*i), 0)), deg)...)
	}
	if len(got) != 1 || got[0].Condition.Check != event.DegradationCheck || !got[0].Condition.Fatal {
		t.Fatalf("five carrier_changes breaches: %+v, want %s alone", got, event.DegradationCheck)
	}
	if n, _ := e.Episodes("mlx5_8", 1); n != 0 {
		t.Fatalf("%d link-down episodes", n)
	}
}

// DESIGN.md difference 19 after an upgrade: a state file of a build that
// counted carrier_changes pairs as link-downs holds a flap raised on them
// alone. Restored, the episodes only carrier_changes saw are taken out,
// the flap is cleared with the first cycle (saying why), and the port's
// real link-downs stay counted.
func TestDesign_19_FlapRaisedOnCarrierChangesByAnOlderBuildClears(t *testing.T) {
	at := time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC)
	// As the older build wrote it: three carrier episodes, none other,
	// and mlx5_0 flapping on three real link_downed steps.
	old := `{"bootId":"boot","ports":{
	  "mlx5_8/1":{"carrier":7,"hasCarrier":true,"carrierChanges":5,"byCarrier":3,"byLinkDowned":0,"byState":0,"total":3,"up":true,"known":true,
	    "flapWindow":[{"at":"2026-01-05T07:58:00Z","n":1},{"at":"2026-01-05T07:59:00Z","n":2}],"lastEpisode":"2026-01-05T07:59:00Z","flapping":true},
	  "mlx5_9/1":{"carrier":9,"hasCarrier":true,"carrierChanges":9,"byCarrier":5,"byLinkDowned":1,"linkDowned":1,"hasLinkDowned":true,"total":5,"up":true,"known":true,
	    "flapWindow":[{"at":"2026-01-05T07:58:00Z","n":5}],"lastEpisode":"2026-01-05T07:58:00Z","flapping":true},
	  "mlx5_0/1":{"linkDowned":3,"hasLinkDowned":true,"byLinkDowned":3,"byCarrier":0,"total":3,"up":true,"known":true,
	    "flapWindow":[{"at":"2026-01-05T07:57:00Z","n":1},{"at":"2026-01-05T07:58:00Z","n":1},{"at":"2026-01-05T07:59:00Z","n":1}],"lastEpisode":"2026-01-05T07:59:00Z","flapping":true}}}`
	var st State
	if err := json.Unmarshal([]byte(old), &st); err != nil {
		t.Fatal(err)
	}
	e := New(config.DefaultRules(), st, "boot")
	ports := []Port{
		{Device: "mlx5_0", Port: 1, Link: linkOf("ACTIVE"), LinkDowned: Reading{3, true}},
		{Device: "mlx5_8", Port: 1, Link: linkOf("ACTIVE")},
		{Device: "mlx5_9", Port: 1, Link: linkOf("ACTIVE"), LinkDowned: Reading{1, true}},
	}
	cs := e.Cycle(at, ports, nil)
	if len(cs) != 2 {
		t.Fatalf("first cycle after the upgrade: %+v, want the flaps of mlx5_8 and mlx5_9 cleared", cs)
	}
	for i, dev := range []string{"mlx5_8", "mlx5_9"} {
		c := cs[i]
		if c.Raise || c.Condition.Check != event.FlapCheck || c.Condition.Device != dev || !strings.Contains(c.Condition.Message, "carrier_changes is a netdev event") {
			t.Fatalf("change %d: %+v", i, c)
		}
	}
	spec := Specs(cs[:1])[0]
	if !spec.IsHealthy || spec.Kind != event.KindRuleCleared || len(spec.ErrorCode) != 1 || spec.ErrorCode[0] != event.FlapCheck {
		t.Fatalf("clear event %+v", spec)
	}
	for dev, want := range map[string]uint64{"mlx5_0": 3, "mlx5_8": 0, "mlx5_9": 1} {
		if n, _ := e.Episodes(dev, 1); n != want {
			t.Fatalf("%s: %d episodes after the upgrade, want %d", dev, n, want)
		}
	}
	p := e.State().Ports["mlx5_9/1"]
	if p.FlapWindow.Count() != 1 || p.LegacyByCarrier != 0 {
		t.Fatalf("mlx5_9 window %+v, legacy %d: want its one real link-down kept", p.FlapWindow, p.LegacyByCarrier)
	}
	if !e.State().Ports["mlx5_0/1"].Flapping {
		t.Fatal("mlx5_0's flap on three real link-downs was cleared")
	}
	// Two more real link-downs on mlx5_9 within the window: flapping again.
	ports[2].LinkDowned = Reading{3, true}
	if cs := e.Cycle(at.Add(time.Minute), ports, nil); len(cs) != 1 || !cs[0].Raise || cs[0].Condition.Device != "mlx5_9" {
		t.Fatalf("mlx5_9 after two more link-downs: %+v", cs)
	}
	b, err := json.Marshal(e.State())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "arrier") {
		t.Fatalf("the saved state still speaks of carrier_changes: %s", b)
	}
}
