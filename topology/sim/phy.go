package sim

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nichealth/nichealthd/topology"
)

// mlx5PHYStats is the part of what `ethtool -S` prints for an mlx5
// Ethernet netdev that the daemon or an operator looks at, in the driver's
// order: the vport and PHY counters, the four PHY error counters of the
// counter table among them.
var mlx5PHYStats = []string{
	"rx_packets", "rx_bytes", "tx_packets", "tx_bytes",
	"rx_out_of_buffer", "rx_vport_unicast_packets", "tx_vport_unicast_packets",
	"rx_packets_phy", "rx_bytes_phy", "tx_packets_phy", "tx_bytes_phy",
	"rx_crc_errors_phy", "rx_in_range_len_errors_phy", "rx_symbol_err_phy",
	"rx_discards_phy", "tx_discards_phy", "rx_undersize_pkts_phy",
	"rx_pcs_symbol_err_phy", "rx_corrected_bits_phy",
	"rx_err_lane_0_phy", "rx_err_lane_1_phy", "rx_err_lane_2_phy", "rx_err_lane_3_phy",
	"link_down_events_phy",
	// PFC on priority 3, the usual RoCE priority: mlx5 publishes a
	// priority's pause counters only while PFC is enabled on it, so the
	// other priorities' are absent (they fail open, as on a real port).
	"rx_prio3_pause", "rx_prio3_pause_duration", "tx_prio3_pause", "tx_prio3_pause_duration", "rx_prio3_pause_transition",
	"tx_pause_storm_warning_events", "tx_pause_storm_error_events",
}

// phyBaselineBits is rx_corrected_bits_phy on a freshly built host: a
// healthy 400 Gb/s PAM4 link at a pre-FEC BER around 1e-8 corrects about
// 4,000 bits a second, so a link up for a few hours has corrected tens of
// millions. Non-zero on purpose: a reader taking a baseline of 0 for
// "nothing yet" would be caught.
const phyBaselineBits = 48_213_377

// writePHYStats gives every mlx5 Ethernet netdev (PFs and VFs, every
// shape) its statistics file: zeros, a plausible rx_corrected_bits_phy and
// traffic counters.
func (h *Host) writePHYStats() error {
	for _, d := range h.m.Devices {
		if d.LinkLayer != topology.LinkLayerEthernet || d.Driver != "mlx5_core" {
			continue
		}
		for i, nd := range d.NetDevs {
			vals := make([]uint64, len(mlx5PHYStats))
			for j, name := range mlx5PHYStats {
				switch name {
				case "rx_corrected_bits_phy":
					vals[j] = phyBaselineBits + uint64(i)*1_000
				case "rx_packets", "tx_packets", "rx_packets_phy", "tx_packets_phy":
					vals[j] = 9_000_000
				case "rx_bytes", "tx_bytes", "rx_bytes_phy", "tx_bytes_phy":
					vals[j] = 9_000_000 * 4096
				}
			}
			if err := h.writePHY(nd, mlx5PHYStats, vals); err != nil {
				return err
			}
		}
	}
	return nil
}

func (h *Host) writePHY(netdev string, names []string, vals []uint64) error {
	p := PHYStatsPath(h.Root, netdev)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return writeAtomic(h.Root, p, FormatPHYStats(names, vals))
}

// PHYStatsFile is netdev's driver statistics file on this host, what
// PHYStatsOpener reads.
func (h *Host) PHYStatsFile(netdev string) string { return PHYStatsPath(h.Root, netdev) }

// readPHY parses netdev's statistics file; h.mu must be held.
func (h *Host) readPHY(netdev string) (names []string, vals []uint64, err error) {
	if netdev == "" || strings.ContainsAny(netdev, "/\n") || netdev == "." || netdev == ".." {
		return nil, nil, fmt.Errorf("bad netdev name %q", netdev)
	}
	b, err := os.ReadFile(PHYStatsPath(h.Root, netdev))
	if err != nil {
		return nil, nil, fmt.Errorf("netdev %s has no driver statistics on simulated host %s (only mlx5 Ethernet netdevs do): %w", netdev, h.Root, err)
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		name, val, ok := strings.Cut(string(line), ":")
		if !ok || strings.TrimSpace(val) == "" {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSpace(val), 10, 64)
		if err != nil {
			return nil, nil, fmt.Errorf("netdev %s: statistic %s: %w", netdev, name, err)
		}
		names, vals = append(names, strings.TrimSpace(name)), append(vals, v)
	}
	if vals == nil {
		return nil, nil, fmt.Errorf("netdev %s: %s lists no statistic", netdev, PHYStatsPath(h.Root, netdev))
	}
	return names, vals, nil
}

// PHYStat returns one driver statistic of netdev.
func (h *Host) PHYStat(netdev, stat string) (uint64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	names, vals, err := h.readPHY(netdev)
	if err != nil {
		return 0, err
	}
	for i, n := range names {
		if n == stat {
			return vals[i], nil
		}
	}
	return 0, fmt.Errorf("netdev %s has no statistic %q", netdev, stat)
}

// SetPHYStat sets one driver statistic of netdev (a value below the
// current one is what a driver reload shows).
func (h *Host) SetPHYStat(netdev, stat string, v uint64) error {
	return h.updatePHY(netdev, stat, func(uint64) uint64 { return v })
}

// AddPHYStat adds delta to one driver statistic of netdev, e.g. corrected
// bits for a link losing FEC margin.
func (h *Host) AddPHYStat(netdev, stat string, delta uint64) error {
	return h.updatePHY(netdev, stat, func(old uint64) uint64 { return old + delta })
}

func (h *Host) updatePHY(netdev, stat string, f func(uint64) uint64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	names, vals, err := h.readPHY(netdev)
	if err != nil {
		return err
	}
	for i, n := range names {
		if n == stat {
			vals[i] = f(vals[i])
			return h.writePHY(netdev, names, vals)
		}
	}
	return fmt.Errorf("netdev %s has no statistic %q (known: %s)", netdev, stat, strings.Join(names, ", "))
}
