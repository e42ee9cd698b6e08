// Package ethtool reads a network interface's driver statistics (what
// `ethtool -S` prints) with the SIOCETHTOOL ioctl: the statistic names once
// when a read plan is built (ETHTOOL_GSSET_INFO, ETHTOOL_GSTRINGS), then one
// ETHTOOL_GSTATS per read into a buffer allocated up front, so a steady read
// allocates nothing. mlx5 publishes its PHY error counters only there
// (rx_corrected_bits_phy, rx_symbol_err_phy, rx_pcs_symbol_err_phy,
// link_down_events_phy); sysfs has none of them.
//
// A driver call can hang like a sysfs read (the ioctl ends in a firmware
// command on mlx5), so the daemon runs Read through topology/reader's worker
// under the same deadline and stuck accounting as its file reads
// (reader.NewSource).
//
// This is the only way the daemon reads driver statistics: a simulated
// host's statistics files (topology/sim.PHYStatsOpener) reach it only
// when a test, or nichealthd built with the simulate tag, passes that
// opener at construction.
package ethtool
