package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/event"
)

func phyEvent(dev string, kind event.Kind, counter string) func(e event.Event) bool {
	return func(e event.Event) bool {
		if e.Device() != dev || e.Kind != kind {
			return false
		}
		if kind == event.KindCounterBaseline {
			// One baseline names all of a port's counters.
			return slices.Contains(e.ErrorCode, counter)
		}
		return len(e.ErrorCode) == 1 && e.ErrorCode[0] == counter
	}
}

// Corrected bits injected with nichealth-sim on a RoCE port of a DGX H100
// node: the JSON line carries the pre-FEC BER, the condition clears once
// a window passes without them, and /metrics shows the counter and its
// BER. The window is one second here so the test takes seconds; the
// default is a minute. The statistics reach the daemon through the
// simulate build's seam: no mlx5 driver answers the ioctl here.
func TestPHY_BlackBoxCorrectedBitsRaiseAndClear(t *testing.T) {
	t.Parallel()
	n := newNode(t, "dgx-h100", `[[counterDetection.counters]]
name = "rx_corrected_bits_phy"
velocityUnit = "second"
`)
	n.withMetrics()
	n.simulate() // the statistics come from nichealth-sim phy, not a driver
	const dev, netdev = "mlx5_8", "enp65s0f0np0"
	if err := n.h.SetRate(dev, 1, "400 Gb/sec (4X NDR)"); err != nil {
		t.Fatal(err)
	}
	n.start()
	n.waitEvent("PHY baseline", phyEvent(dev, event.KindCounterBaseline, "rx_corrected_bits_phy"))
	base, err := n.h.PHYStat(netdev, "rx_corrected_bits_phy")
	if err != nil {
		t.Fatal(err)
	}
	n.waitCounterValue(dev, 1, "rx_corrected_bits_phy", float64(base))

	// 4e7 bits in about a second at 400 Gb/s: a pre-FEC BER near 1e-4.
	out, err := exec.Command(simBinary(t), "phy", "--root", n.h.Root, netdev, "rx_corrected_bits_phy", "+40000000").CombinedOutput()
	if err != nil {
		t.Fatalf("nichealth-sim phy: %v: %s", err, out)
	}
	e := n.waitEvent("BER breach", phyEvent(dev, event.KindCounterBreach, "rx_corrected_bits_phy"))
	if e.IsFatal || e.CheckName != event.EthernetDegradationCheck || e.RecommendedAction != event.ActionNone ||
		!strings.Contains(e.Message, "pre-FEC BER=") || !strings.Contains(e.Message, "at 400 Gb/s") || e.Metadata["ber"] == "" {
		t.Fatalf("BER event %+v", e)
	}
	t.Logf("breach: %s", e.Message)
	r := n.waitEvent("BER recovery", phyEvent(dev, event.KindCounterRecovered, "rx_corrected_bits_phy"))
	if !r.IsHealthy || r.CheckName != event.EthernetDegradationCheck || r.Metadata["reason"] != "below-threshold" {
		t.Fatalf("recovery %+v", r)
	}
	t.Logf("recovery: %s", r.Message)
	n.waitCounterValue(dev, 1, "rx_corrected_bits_phy", float64(base+40_000_000))
	n.waitMetric("the BER gauge", "ber", func(m map[string]float64) bool {
		for k := range m {
			if strings.HasPrefix(k, "nichealth_hwcounter_rate{") && strings.Contains(k, `counter="rx_corrected_bits_phy"`) &&
				strings.Contains(k, `device="mlx5_8"`) && strings.Contains(k, `unit="ber"`) {
				return true
			}
		}
		return false
	})
	n.stop()
}
