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
