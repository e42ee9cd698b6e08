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

// roceSignal adds to one RoCE signal of a port (sim.Host.AddRoCESignal).
func roceSignal(h *sim.Host, dev, port, signal, arg string) error {
	num, ok := strings.CutPrefix(arg, "+")
	v, err := strconv.ParseUint(num, 10, 64)
	if !ok || err != nil {
		return usageErr("bad roce delta %q: want +N to add N", arg)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 {
		return usageErr("bad port %q", port)
	}
	return h.AddRoCESignal(dev, p, signal, v)
}
