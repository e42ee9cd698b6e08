package main

import (
	"strconv"
	"strings"

	"github.com/nichealth/nichealthd/topology/sim"
)

// phy sets (VALUE) or adds to (+DELTA) one driver statistic of an mlx5
// Ethernet netdev, as `ethtool -S` would show it.
func phy(h *sim.Host, netdev, stat, arg string) error {
	num, add := strings.CutPrefix(arg, "+")
	v, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return usageErr("bad phy value %q: want a non-negative integer, or +N to add N", arg)
	}
	if add {
		return h.AddPHYStat(netdev, stat, v)
	}
	return h.SetPHYStat(netdev, stat, v)
}
