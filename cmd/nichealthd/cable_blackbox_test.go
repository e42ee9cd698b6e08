package main

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/event"
)

func cableVerdict(dev, direction, suspect string) string {
	return fmt.Sprintf(`nichealth_cable_verdict{device=%q,port="1",direction=%q,suspect=%q}`, dev, direction, suspect)
}

// DESIGN.md section 15 on the simulated node, every fault the simulator
// can make, in one daemon: symbol errors in our sysfs with the far end
// unread (to-host, the missing half said); a RoCE lane's Rx power low
// with PHY symbol errors rising (that lane's fibre); a Tx bias past the
// module's warning (our transceiver, by serial); LOS on one lane (that
// lane's fibre); a link-down reason (taken as it says), and the episode's
// length against the 34 s RDMA retry budget on the link-up event. A clean
// port says nothing. Each is on /metrics and in the events' metadata.
func TestCable_15_BlackBoxSimulatedNode(t *testing.T) {
	t.Parallel()
	n := newNode(t, "dgx-h100", "")
	n.withMetrics()
	n.simulate()                                                          // modules, PHY statistics and link-down reasons come from nichealth-sim
	simRun(t, n.h.Root, "module", "enp65s0f0np0", "rx", "3", "--", "-12") // mlx5_8: lane 3 below its low alarm
	simRun(t, n.h.Root, "module", "enp65s0f1np0", "bias", "2", "128")     // mlx5_9: lane 2 past its 125 mA high warning
	simRun(t, n.h.Root, "module", "enp193s0f0np0", "los", "2", "on")      // mlx5_10: lane 2 lost its signal
	simRun(t, n.h.Root, "module", "enp193s0f1np0", "install")             // mlx5_11: healthy
	biasSerial, err := n.h.ModuleSerial("enp65s0f1np0")
	if err != nil {
		t.Fatal(err)
	}
	n.start()
	n.waitEvent("IB baseline", portEvent("mlx5_0", event.KindPortBaseline))
	n.waitEvent("RoCE baseline", portEvent("mlx5_11", event.KindPortBaseline))

	// The module rules: our Tx bias names our transceiver, LOS on an ACTIVE
	// port that lane's fibre; low light alone is no verdict.
	n.waitMetric("the Tx bias verdict", cableVerdict("mlx5_9", "from-host", "host-transceiver"), func(m map[string]float64) bool {
		return m[cableVerdict("mlx5_9", "from-host", "host-transceiver")] == 1
	})
	n.waitMetric("the LOS verdict", cableVerdict("mlx5_10", "to-host", "cable"), func(m map[string]float64) bool {
		return m[cableVerdict("mlx5_10", "to-host", "cable")] == 1
	})
	n.waitMetric("clean ports", cableVerdict("mlx5_8", "none", ""), func(m map[string]float64) bool {
		return m[cableVerdict("mlx5_8", "none", "")] == 1 && m[cableVerdict("mlx5_1", "none", "")] == 1 && m[cableVerdict("mlx5_11", "none", "")] == 1
	})
	bias := n.waitEvent("the Tx bias finding", func(e event.Event) bool {
		return e.Device() == "mlx5_9" && e.Kind == event.KindTransceiver && e.Metadata["cableSuspect"] != ""
	})
	if bias.Metadata["cableSuspect"] != "host-transceiver" || bias.Metadata["cableDirection"] != "from-host" ||
		!strings.Contains(bias.Metadata["cableEvidence"], "lane 2 Tx laser bias 128.00 mA > 125.00 mA") {
		t.Errorf("Tx bias event metadata %v (serial %s)", bias.Metadata, biasSerial)
	}

	// Errors arriving with lane 3's light low: that lane's fibre.
	if err := n.h.AddPHYStat("enp65s0f0np0", "rx_symbol_err_phy", 40); err != nil {
		t.Fatal(err)
	}
	n.waitMetric("the low Rx verdict", cableVerdict("mlx5_8", "to-host", "cable"), func(m map[string]float64) bool {
		return m[cableVerdict("mlx5_8", "to-host", "cable")] == 1
	})

	// Symbol errors in our sysfs, the switch port unread (no umad device
	// here): to-host, and the event says which half is missing.
	if err := n.h.AddCounter("mlx5_0", 1, "counters/symbol_error", 100); err != nil {
		t.Fatal(err)
	}
	se := n.waitEvent("the symbol_error breach", func(e event.Event) bool {
		return e.Device() == "mlx5_0" && e.Kind == event.KindCounterBreach && e.Metadata["counter"] == "symbol_error"
	})
	if se.Metadata["cableDirection"] != "to-host" || se.Metadata["cableSuspect"] != "unknown" ||
		!strings.Contains(se.Metadata["cableEvidence"], "host symbol_error +100 in 2m0s") || !strings.Contains(se.Metadata["cableEvidence"], "switch port not") {
		t.Errorf("symbol_error breach metadata %v", se.Metadata)
	}
	n.waitMetric("the to-host verdict", cableVerdict("mlx5_0", "to-host", "unknown"), func(m map[string]float64) bool {
		return m[cableVerdict("mlx5_0", "to-host", "unknown")] == 1
	})

	// The kernel says the cable is gone: its port-down event says so, and
	// the link-up event measures the episode against the budget.
	simRun(t, n.h.Root, "link-down", "enp193s0f1np0", "no_cable")
	if err := n.h.SetPortState("mlx5_11", 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	down := n.waitEvent("mlx5_11 down", portEvent("mlx5_11", event.KindPortFatal))
	if down.Metadata["cableSuspect"] != "cable" || down.Metadata["cableDirection"] != "both" || down.Metadata["cableEvidence"] != "link down: no cable" {
		t.Errorf("port-down metadata %v", down.Metadata)
	}
	simRun(t, n.h.Root, "link-down", "enp193s0f1np0", "off")
	if err := n.h.SetPortState("mlx5_11", 1, "ACTIVE", "LinkUp"); err != nil {
		t.Fatal(err)
	}
	up := n.waitEvent("mlx5_11 up", portEvent("mlx5_11", event.KindPortRecovered))
	downFor, err := strconv.ParseFloat(strings.TrimSuffix(up.Metadata["downFor"], "s"), 64)
	if err != nil || downFor <= 0 || downFor > 34.36 || up.Metadata["retryBudget"] != "34.360s" ||
		!strings.Contains(up.Message, "within the 34 s RDMA retry budget") {
		t.Errorf("link-up event %q %v: the episode against the budget", up.Message, up.Metadata)
	}
	t.Logf("%s\n%s\n%s", se.Message+" "+se.Metadata["cableEvidence"], down.Metadata["cableEvidence"], up.Message)
	n.stop()
}
