package sim

import (
	"fmt"
	"slices"
)

// RoCEHWCounters are the RoCE signals the RDMA port keeps in
// ports/<n>/hw_counters (checks/roce); the rest are its netdev's driver
// statistics.
var RoCEHWCounters = []string{"np_ecn_marked_roce_packets", "np_cnp_sent", "rp_cnp_handled", "rp_cnp_ignored",
	"out_of_sequence", "packet_seq_err", "implied_nak_seq_err", "duplicate_request", "local_ack_timeout_err", "out_of_buffer"}

// AddRoCESignal adds delta to one RoCE signal of a port where the driver
// keeps it: an hw_counters file of the RDMA port, or a driver statistic
// of the port's netdev (rx_discards_phy, rx_prio3_pause_duration,
// tx_pause_storm_warning_events, ...).
func (h *Host) AddRoCESignal(dev string, port int, signal string, delta uint64) error {
	if slices.Contains(RoCEHWCounters, signal) {
		return h.AddCounter(dev, port, "hw_counters/"+signal, delta)
	}
	d, ok := h.Device(dev)
	if !ok {
		return fmt.Errorf("no device %s", dev)
	}
	if port < 1 || port > len(d.NetDevs) || d.NetDevs[port-1] == "" {
		return fmt.Errorf("%s port %d has no netdev for driver statistics", dev, port)
	}
	return h.AddPHYStat(d.NetDevs[port-1], signal, delta)
}
