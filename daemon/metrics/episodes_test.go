package metrics

import (
	"testing"

	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/dbusapi"
)

// ibPort is an InfiniBand port with its link_downed reading.
func ibPort(state string, linkDowned uint64) health.Port {
	return health.Port{PortInfo: health.PortInfo{Device: "mlx5_0", Port: 1, LinkLayer: "InfiniBand", Role: "Compute", State: state,
		Counters: []health.Counter{{Name: "link_downed", Value: linkDowned, ThresholdType: "delta"}}}}
}

// rocePort is a RoCE port with its carrier_changes reading.
func rocePort(state string, carrier uint64) health.Port {
	return health.Port{PortInfo: health.PortInfo{Device: "mlx5_9", Port: 1, LinkLayer: "Ethernet", Role: "Compute", State: state,
		Counters: []health.Counter{{Name: "carrier_changes", Value: carrier, ThresholdType: "delta"}}}}
}

// ibView is ibPort as the test source's view.
func ibView(state string, linkDowned uint64) dbusapi.PortView {
	return dbusapi.PortView{Device: "mlx5_0", Port: 1, LinkLayer: "InfiniBand", Role: "Compute", State: state, Healthy: state == "ACTIVE",
		Counters: []dbusapi.CounterView{{Name: "link_downed", Value: linkDowned, ThresholdType: "delta"}}}
}

// Seed state 6.3 counts link_downed events per NICPort; issue 16 widens the
// witness to a DOWN→ACTIVE cycle or a carrier_changes step, each episode
// counted once.
func TestEpisodes_6_3_OneEpisodePerLinkLoss(t *testing.T) {
	type step struct {
		view health.Port
		want uint64
	}
	stateOnly := func(s string) health.Port {
		return health.Port{PortInfo: health.PortInfo{Device: "mlx5_1", Port: 2, State: s}}
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"link_downed and the state cycle are one episode", []step{
			{ibPort("ACTIVE", 7), 0}, // baseline: earlier link-downs are not this process's episodes
			{ibPort("DOWN", 8), 1},
			{ibPort("ACTIVE", 8), 1},
			{ibPort("ACTIVE", 9), 2}, // down and up again between two looks
			{ibPort("DOWN", 12), 5},  // three in one interval
			{ibPort("DOWN", 12), 5},  // staying down is not another episode
			{ibPort("ACTIVE", 2), 7}, // counter reset: the value is what happened since
		}},
		{"state cycles when there is no counter", []step{
			{stateOnly("DOWN"), 0}, // down at the baseline: NICPortDrop's case, not a flap
			{stateOnly("ACTIVE"), 0},
			{stateOnly("DOWN"), 1},
			{stateOnly("INIT"), 1},
			{stateOnly("DOWN"), 1}, // training fails before the link is up: no new episode
			{stateOnly("ARMED"), 1},
			{stateOnly("ACTIVE"), 1},
			{stateOnly("INIT"), 1}, // logical re-init with the link up is no link loss
			{stateOnly("ACTIVE"), 1},
			{stateOnly(""), 1}, // unreadable: no change known
			{stateOnly("DOWN"), 2},
		}},
		{"saturated link_downed: the state witness still counts", []step{
			{ibPort("ACTIVE", 255), 0},
			{ibPort("DOWN", 255), 1},
			{ibPort("ACTIVE", 255), 1},
			{ibPort("DOWN", 255), 2},
		}},
		{"carrier_changes counts down+up pairs at their first half", []step{
			{rocePort("ACTIVE", 4), 0},
			{rocePort("ACTIVE", 5), 1}, // carrier lost
			{rocePort("ACTIVE", 6), 1}, // back: same episode
			{rocePort("ACTIVE", 10), 3},
			{rocePort("ACTIVE", 11), 4},
			{rocePort("ACTIVE", 11), 4},
			{rocePort("ACTIVE", 12), 4},
		}},
		{"carrier down at the baseline", []step{
			{rocePort("DOWN", 3), 0},
			{rocePort("ACTIVE", 4), 0}, // coming back completes an unseen episode
			{rocePort("ACTIVE", 5), 1},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var tr episodeTracker
			for i, s := range c.steps {
				got := tr.observe([]health.Port{s.view}, nil)
				if len(got) != 1 || got[0] != s.want {
					t.Fatalf("step %d (%s): total %v, want %d", i, s.view.State, got, s.want)
				}
			}
		})
	}
}

func TestEpisodes_6_3_PortsAreSeparateAndForgottenWhenGone(t *testing.T) {
	var tr episodeTracker
	a, b := ibPort("ACTIVE", 0), ibPort("ACTIVE", 0)
	b.Port = 2
	tr.observe([]health.Port{a, b}, nil)
	a.Counters[0].Value = 3
	a.State = "DOWN"
	// A view listing port 1 twice (an inconsistent view) counts it once.
	if got := tr.observe([]health.Port{a, b, a}, nil); got[0] != 3 || got[1] != 0 || got[2] != 3 {
		t.Fatalf("totals %v, want [3 0 3]", got)
	}
	// Port 1 vanishes, then returns: it starts again from 0 (a counter
	// reset to Prometheus), with its current reading as the baseline.
	tr.observe([]health.Port{b}, nil)
	if got := tr.observe([]health.Port{a, b}, nil); got[0] != 0 {
		t.Fatalf("returned port total %d, want 0", got[0])
	}
}

func TestMetrics_6_3_EpisodesOnThePage(t *testing.T) {
	src := &fakeSource{ports: []dbusapi.PortView{ibView("ACTIVE", 10)}}
	src.mgr.Ready = true
	h := New().Handler(src)
	_, page, _ := scrape(t, h)
	ep := mustParse(t, page)["nichealth_port_link_down_episodes_total"]
	if ep == nil || ep.typ != "counter" {
		t.Fatalf("no episode counter family in\n%s", page)
	}
	if v := ep.value(t, "device", "mlx5_0", "port", "1", "role", "Compute", "link_layer", "InfiniBand"); v != 0 {
		t.Fatalf("baseline total %v, want 0", v)
	}
	// The seed's flow: three link_downed events on mlx5_0 port 1.
	for _, ld := range []uint64{11, 12, 13} {
		src.ports = []dbusapi.PortView{ibView("DOWN", ld)}
		scrape(t, h)
		src.ports = []dbusapi.PortView{ibView("ACTIVE", ld)}
		scrape(t, h)
	}
	_, page, _ = scrape(t, h)
	if v := mustParse(t, page)["nichealth_port_link_down_episodes_total"].value(t, "device", "mlx5_0", "port", "1", "role", "Compute", "link_layer", "InfiniBand"); v != 3 {
		t.Fatalf("total after three flaps %v, want 3", v)
	}
}
