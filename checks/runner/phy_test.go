package runner

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks/roce"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/sim"
)

// On a simulated RoCE port the PHY rows are read through one driver
// statistics entry per netdev (one GSTATS per counter tick however many
// rows read it) and judged: pre-FEC BER over the minute against the port
// rate, link_down_events_phy fatal on any step.
func TestPHY_MonitorJudgesPHYStatsOnSimRoCE(t *testing.T) {
	for _, tc := range []struct {
		rate   string
		bits   uint64 // corrected in one minute
		breach bool
		ber    string
	}{
		{"400 Gb/sec (4X NDR)", 300_000_000, true, "1.25e-05"},
		{"400 Gb/sec (4X NDR)", 200_000_000, false, ""},
		{"200 Gb/sec (4X HDR)", 150_000_000, true, "1.25e-05"},
		{"200 Gb/sec (4X HDR)", 100_000_000, false, ""},
	} {
		t.Run(tc.rate+"/"+tc.ber, func(t *testing.T) {
			m, h := phyMonitor(t)
			const dev, netdev = "mlx5_8", "enp65s0f0np0"
			if err := h.SetRate(dev, 1, tc.rate); err != nil {
				t.Fatal(err)
			}
			sources, eth := 0, 0
			for _, f := range m.obs.PlanFiles() {
				if strings.HasPrefix(f, "ethtool:") {
					sources++
				}
			}
			for _, p := range m.obs.Ports() {
				if p.Port.LinkLayer == topology.LinkLayerEthernet {
					eth++
				}
			}
			if sources != eth || eth == 0 {
				t.Fatalf("%d driver-statistics entries for %d Ethernet ports; want one each", sources, eth)
			}
			t0 := time.Unix(1_700_000_000, 0)
			if specs, _ := m.Cycle(t0); len(breachesOf(specs, "rx_corrected_bits_phy")) != 0 {
				t.Fatal("breach at the baseline")
			}
			if err := h.AddPHYStat(netdev, "rx_corrected_bits_phy", tc.bits); err != nil {
				t.Fatal(err)
			}
			specs, _ := m.Cycle(t0.Add(time.Minute))
			b := breachesOf(specs, "rx_corrected_bits_phy")
			if !tc.breach {
				if len(b) != 0 {
					t.Fatalf("breach below the threshold: %+v", b)
				}
				return
			}
			if len(b) != 1 || b[0].Device != dev || b[0].CheckName != event.EthernetDegradationCheck || b[0].IsFatal ||
				!strings.Contains(b[0].Message, "pre-FEC BER="+tc.ber) {
				t.Fatalf("breaches %+v; want one non-fatal on %s with BER %s", b, dev, tc.ber)
			}
		})
	}
}

func TestPHY_MonitorLinkDownEventsFatal(t *testing.T) {
	m, h := phyMonitor(t)
	t0 := time.Unix(1_700_000_000, 0)
	m.Cycle(t0)
	if err := h.AddPHYStat("enp65s0f0np0", "link_down_events_phy", 1); err != nil {
		t.Fatal(err)
	}
	specs, _ := m.Cycle(t0.Add(time.Second))
	b := breachesOf(specs, "link_down_events_phy")
	if len(b) != 1 || !b[0].IsFatal || b[0].Device != "mlx5_8" {
		t.Fatalf("breaches %+v; want one fatal on mlx5_8", b)
	}
	// The driver's counters reset (mlx5 reload): the latch clears.
	if err := h.SetPHYStat("enp65s0f0np0", "link_down_events_phy", 0); err != nil {
		t.Fatal(err)
	}
	specs, _ = m.Cycle(t0.Add(2 * time.Second))
	var recovered bool
	for _, s := range specs {
		recovered = recovered || (s.Kind == event.KindCounterRecovered && s.Metadata["counter"] == "link_down_events_phy")
	}
	if !recovered {
		t.Fatalf("no recovery after the reset: %+v", specs)
	}
}

// With link_downed saturated at 255, the rules still get a moving link-down
// witness on a RoCE port: link_down_events_phy.
func TestPHY_LinkDownEventsWitnessReachesTheRules(t *testing.T) {
	m, h := phyMonitor(t)
	if err := h.SetCounter("mlx5_8", 1, "counters/link_downed", 255); err != nil {
		t.Fatal(err)
	}
	if err := h.SetPHYStat("enp65s0f0np0", "link_down_events_phy", 300); err != nil {
		t.Fatal(err)
	}
	m.Cycle(time.Unix(1_700_000_000, 0))
	for _, rp := range m.set.rules.Readings(m.last) {
		if rp.Device != "mlx5_8" || rp.Port != 1 {
			continue
		}
		if !rp.LinkDowned.OK || rp.LinkDowned.Value != 255 || !rp.LinkDownEvents.OK || rp.LinkDownEvents.Value != 300 {
			t.Fatalf("readings %+v; want link_downed 255 and link_down_events_phy 300", rp)
		}
		return
	}
	t.Fatal("mlx5_8 port 1 not among the rules' readings")
}

// Statistics the driver does not have are not planned (no failed reading
// every tick), and a netdev without statistics costs no driver call.
func TestPHY_AbsentStatisticsAreNotPlanned(t *testing.T) {
	m, h := phyMonitor(t)
	const netdev = "enp65s0f0np0"
	phyRows := func() (rows, sources int) {
		for _, p := range m.obs.Ports() {
			if p.NetDev != netdev {
				continue
			}
			for _, s := range p.Samples {
				// The counter table's PHY rows; the RoCE classes' driver
				// statistics (rx_discards_phy, ...) share the source.
				if s.Path == "ethtool:"+netdev && !strings.HasPrefix(m.obs.Counters()[s.Rows[0]].Name, roce.RowPrefix) {
					rows++
				}
			}
		}
		for _, f := range m.obs.PlanFiles() {
			if f == "ethtool:"+netdev {
				sources++
			}
		}
		return rows, sources
	}
	if rows, sources := phyRows(); rows != 4 || sources != 1 {
		t.Fatalf("%d PHY rows, %d sources on %s; want 4 and 1", rows, sources, netdev)
	}
	if err := os.WriteFile(h.PHYStatsFile(netdev), sim.FormatPHYStats([]string{"rx_packets", "link_down_events_phy"}, []uint64{1, 2}), 0o644); err != nil {
		t.Fatal(err)
	}
	m.Reconfigure(m.cfg, time.Unix(1_700_000_000, 0)) // the plan is built again
	if rows, sources := phyRows(); rows != 1 || sources != 1 {
		t.Fatalf("%d PHY rows, %d sources with one statistic present; want 1 and 1", rows, sources)
	}
	if err := os.WriteFile(h.PHYStatsFile(netdev), sim.FormatPHYStats([]string{"rx_packets"}, []uint64{1}), 0o644); err != nil {
		t.Fatal(err)
	}
	m.Reconfigure(m.cfg, time.Unix(1_700_000_000, 0)) // the plan is built again
	if rows, sources := phyRows(); rows != 0 || sources != 0 {
		t.Fatalf("%d PHY rows, %d sources with none present; want 0 and 0", rows, sources)
	}
	if err := os.Remove(h.PHYStatsFile(netdev)); err != nil {
		t.Fatal(err)
	}
	m.Reconfigure(m.cfg, time.Unix(1_700_000_000, 0)) // the plan is built again
	if rows, sources := phyRows(); rows != 0 || sources != 0 {
		t.Fatalf("%d PHY rows, %d sources without statistics; want 0 and 0", rows, sources)
	}
	m.Cycle(time.Unix(1_700_000_000, 0)) // and the tick runs without them
}
