package metrics

import (
	"testing"

	"github.com/nichealth/nichealthd/dbusapi"
)

// ibView is an InfiniBand port with its link_downed reading.
func ibView(state string, linkDowned uint64) dbusapi.PortView {
	return dbusapi.PortView{Device: "mlx5_0", Port: 1, LinkLayer: "InfiniBand", Role: "Compute", State: state, Healthy: state == "ACTIVE",
		Counters: []dbusapi.CounterView{{Name: "link_downed", Value: linkDowned, ThresholdType: "delta"}}}
}

// The endpoint serves the episode total of each port as the snapshot
// carries it (counted by checks/rules, tested there).
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
	src.episodes = map[string]uint64{"mlx5_0/1": 3}
	_, page, _ = scrape(t, h)
	if v := mustParse(t, page)["nichealth_port_link_down_episodes_total"].value(t, "device", "mlx5_0", "port", "1", "role", "Compute", "link_layer", "InfiniBand"); v != 3 {
		t.Fatalf("total after three flaps %v, want 3", v)
	}
}
