package sim

import (
	"testing"

	"github.com/nichealth/nichealthd/topology"
)

// Every mlx5 Ethernet netdev of every shape has PHY statistics: zeros and
// a non-zero corrected-bits baseline; IB netdevs have none.
func TestPHY_SimShapesCarryStats(t *testing.T) {
	for _, shape := range []string{"dgx-h100", "h100-oci", "gb200"} {
		h, err := Build(t.TempDir(), shape)
		if err != nil {
			t.Fatal(err)
		}
		eth := 0
		for _, d := range h.Devices() {
			for _, nd := range d.NetDevs {
				v, err := h.PHYStat(nd, "rx_corrected_bits_phy")
				if d.LinkLayer != topology.LinkLayerEthernet {
					if err == nil {
						t.Errorf("%s: IB netdev %s has PHY statistics", shape, nd)
					}
					continue
				}
				eth++
				if err != nil || v == 0 {
					t.Errorf("%s: %s rx_corrected_bits_phy = %d, %v; want a non-zero baseline", shape, nd, v, err)
				}
				if v, err := h.PHYStat(nd, "link_down_events_phy"); err != nil || v != 0 {
					t.Errorf("%s: %s link_down_events_phy = %d, %v", shape, nd, v, err)
				}
			}
		}
		if eth == 0 {
			t.Errorf("%s: no Ethernet netdev", shape)
		}
	}
}

func TestPHY_SimSetAndAdd(t *testing.T) {
	h, err := Build(t.TempDir(), "h100-oci")
	if err != nil {
		t.Fatal(err)
	}
	var nd string
	for _, d := range h.Devices() {
		if d.LinkLayer == topology.LinkLayerEthernet && !d.IsVF {
			nd = d.NetDevs[0]
			break
		}
	}
	if err := h.SetPHYStat(nd, "rx_symbol_err_phy", 5); err != nil {
		t.Fatal(err)
	}
	if err := h.AddPHYStat(nd, "rx_symbol_err_phy", 7); err != nil {
		t.Fatal(err)
	}
	if v, err := h.PHYStat(nd, "rx_symbol_err_phy"); err != nil || v != 12 {
		t.Fatalf("rx_symbol_err_phy = %d, %v; want 12", v, err)
	}
	if err := h.AddPHYStat(nd, "no_such_stat", 1); err == nil {
		t.Fatal("unknown statistic accepted")
	}
	f, err := PHYStatsOpener(h.Root)(nd, []string{"rx_symbol_err_phy"})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Read(); err != nil {
		t.Fatal(err)
	}
	if v, ok := f.Value(0); !ok || v != 12 {
		t.Fatalf("the daemon's reader sees %d, %v; want 12", v, ok)
	}
}
