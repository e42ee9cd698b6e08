package metrics

import (
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks/health"
)

// roceSource is a source whose snapshot holds RoCE classes (DESIGN.md
// section 16), which the D-Bus-shaped fake does not carry.
type roceSource struct {
	*fakeSource
	snap *health.Snapshot
}

func (r roceSource) Snapshot() *health.Snapshot { return r.snap }

// /metrics shows every class of every judged RoCE port as 0 or 1 (so a
// rule counts a rail's ports in a class), roce-congested included though
// it is no condition, with the last window's rates and pause cost; an
// InfiniBand port has none of these series.
func TestMetrics_7_RoCEClasses(t *testing.T) {
	node := health.Node{Version: "1", Ready: true, PollInterval: time.Second}
	snap := health.Build(node, []health.PortInfo{
		{Device: "mlx5_0", Port: 1, LinkLayer: "InfiniBand"},
		{Device: "mlx5_2", Port: 1, LinkLayer: "Ethernet", RoCE: &health.RoCE{Classes: []string{"roce-lossy"}, Evidence: []string{"x"},
			Judged: true, Window: time.Minute, CongestionPerSecond: 0, LossPerSecond: 12.5, OutOfBufferPerSecond: 1, RxDiscardsPerSecond: 3,
			StormEvents: 2, PauseLostGbps: 100, PauseLostPercent: 25, PausePriority: 3}},
		{Device: "mlx5_3", Port: 1, LinkLayer: "Ethernet", RoCE: &health.RoCE{Classes: []string{"roce-congested"}, PausePriority: -1}},
	}, nil)
	_, page, _ := scrape(t, New().Handler(roceSource{fakeSource: unhealthySource(), snap: snap}))
	fams := mustParse(t, page)
	for _, tc := range []struct {
		family string
		labels []string
		want   float64
	}{
		{"nichealth_roce_class", []string{"device", "mlx5_2", "class", "roce-lossy"}, 1},
		{"nichealth_roce_class", []string{"device", "mlx5_2", "class", "roce-congested"}, 0},
		{"nichealth_roce_class", []string{"device", "mlx5_2", "class", "roce-rx-starved"}, 0},
		{"nichealth_roce_class", []string{"device", "mlx5_2", "class", "roce-pause-storm"}, 0},
		{"nichealth_roce_class", []string{"device", "mlx5_3", "class", "roce-congested"}, 1},
		{"nichealth_roce_signal_rate", []string{"device", "mlx5_2", "signal", "loss"}, 12.5},
		{"nichealth_roce_signal_rate", []string{"device", "mlx5_2", "signal", "rx_discards_phy"}, 3},
		{"nichealth_roce_pause_storm_events", []string{"device", "mlx5_2"}, 2},
		{"nichealth_roce_pause_lost_gbps", []string{"device", "mlx5_2", "priority", "3"}, 100},
		{"nichealth_roce_pause_lost_percent", []string{"device", "mlx5_2", "priority", "3"}, 25},
	} {
		f := fams[tc.family]
		if f == nil {
			t.Fatalf("no family %s", tc.family)
		}
		if got := f.value(t, tc.labels...); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.family, tc.labels, got, tc.want)
		}
	}
	for _, s := range fams["nichealth_roce_class"].samples {
		if s.labels["device"] == "mlx5_0" {
			t.Errorf("an InfiniBand port has a RoCE class series: %v", s.labels)
		}
	}
	if n := len(fams["nichealth_roce_signal_rate"].samples); n != 4 {
		t.Errorf("%d rate series, want mlx5_2's 4 (mlx5_3 has no judged window)", n)
	}
}
