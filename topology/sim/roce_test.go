package sim

import (
	"os"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/topology"
)

// Each RoCE signal lands where mlx5 keeps it: hw_counters files of the
// RDMA port, driver statistics of its netdev (PFC on priority 3 only, as
// a port with PFC on the RoCE priority publishes them).
func TestRoCE_SignalsWrittenWhereTheDriverKeepsThem(t *testing.T) {
	h, err := Build(t.TempDir(), "dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	var dev DeviceInfo
	for _, d := range h.Devices() {
		if d.LinkLayer == topology.LinkLayerEthernet && !d.IsVF && d.NetDev != "" {
			dev = d
			break
		}
	}
	if dev.Name == "" {
		t.Fatal("no RoCE device")
	}
	for _, s := range RoCEHWCounters {
		if err := h.AddRoCESignal(dev.Name, 1, s, 7); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		p, _ := h.PortPath(dev.Name, 1, "hw_counters/"+s)
		if b, err := os.ReadFile(p); err != nil || string(b) != "7\n" {
			t.Errorf("hw_counters/%s = %q, %v", s, b, err)
		}
	}
	for _, s := range []string{"rx_discards_phy", "rx_prio3_pause", "rx_prio3_pause_duration", "tx_prio3_pause", "tx_prio3_pause_duration",
		"tx_pause_storm_warning_events", "tx_pause_storm_error_events"} {
		if err := h.AddRoCESignal(dev.Name, 1, s, 9); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if v, err := h.PHYStat(dev.NetDev, s); err != nil || v != 9 {
			t.Errorf("%s %s = %d, %v", dev.NetDev, s, v, err)
		}
	}
	if err := h.AddRoCESignal(dev.Name, 1, "rx_prio0_pause_duration", 1); err == nil || !strings.Contains(err.Error(), "no statistic") {
		t.Errorf("a priority without PFC has no pause statistics: err %v", err)
	}
}
