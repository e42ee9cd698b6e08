// Package ethtool asks the kernel's ethtool interfaces about a network
// interface.
//
// Driver statistics (what `ethtool -S` prints) come from the SIOCETHTOOL
// ioctl: the statistic names once when a read plan is built
// (ETHTOOL_GSSET_INFO, ETHTOOL_GSTRINGS), then one ETHTOOL_GSTATS per read
// into a buffer allocated up front, so a steady read allocates nothing.
// mlx5 publishes its PHY error counters only there (rx_corrected_bits_phy,
// rx_symbol_err_phy, rx_pcs_symbol_err_phy, link_down_events_phy); sysfs has
// none of them.
//
// The link's own story comes from ethtool netlink (Netlink, over
// topology/genl): the extended link state, the driver's reason a link is
// down (ETHTOOL_MSG_LINKSTATE_GET, unprivileged), and the transceiver
// module's memory by page (ETHTOOL_MSG_MODULE_EEPROM_GET, CAP_NET_ADMIN),
// which topology/module decodes.
//
// A driver call can hang like a sysfs read (both end in a firmware command
// on mlx5), so the daemon runs them through topology/reader's worker under
// the same deadline and stuck accounting as its file reads
// (reader.NewSource, reader.Call).
//
// This is the only way the daemon reads driver statistics: a simulated
// host's statistics files (topology/sim.PHYStatsOpener) reach it only
// when a test, or nichealthd built with the simulate tag, passes that
// opener at construction.
package ethtool
