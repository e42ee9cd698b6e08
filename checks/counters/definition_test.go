package counters

import (
	"testing"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology"
)

func TestCounters_6_6_Key(t *testing.T) {
	k := Key("mlx5_0", 1, "link_downed")
	if k != "mlx5_0:1:link_downed" {
		t.Fatalf("Key = %q", k)
	}
	dev, port, name, ok := ParseKey(k)
	if !ok || dev != "mlx5_0" || port != 1 || name != "link_downed" {
		t.Fatalf("ParseKey = %q %d %q %v", dev, port, name, ok)
	}
	for _, bad := range []string{"", "mlx5_0", "mlx5_0:1", "mlx5_0:x:c", ":1:c", "mlx5_0:1:"} {
		if _, _, _, ok := ParseKey(bad); ok {
			t.Errorf("ParseKey(%q) accepted", bad)
		}
	}
}

func TestCounters_DESIGN2_CheckNames(t *testing.T) {
	if event.DegradationCheckFor(topology.LinkLayerInfiniBand) != event.InfiniBandDegradationCheck ||
		event.DegradationCheckFor(topology.LinkLayerEthernet) != event.EthernetDegradationCheck {
		t.Fatal("wrong degradation check names")
	}
}

// How messages say a rule (the far end's breaches and restatements name
// theirs, DESIGN.md section 13): the seed's units, a delta per read, and
// congestion as a share of the link over its window, never per read.
func TestThresholdText_SaysEachRuleAsItIsJudged(t *testing.T) {
	for name, want := range map[string]string{
		"symbol_error":        "> 10/sec",
		"symbol_error_fatal":  "> 120/hour",
		"link_error_recovery": "> 5/min",
		"link_downed":         "> 0 per read",
		"port_xmit_wait":      "> 10% of the link lost over a minute",
	} {
		if got := ThresholdText(def(name)); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}
