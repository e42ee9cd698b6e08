package main

import (
	"strconv"

	"github.com/nichealth/nichealthd/topology/sim"
)

// moduleCommand is "module NETDEV install [osfp|dac|sfp28]|remove|
// temperature C|rx LANE DBM|bias LANE MA|los LANE on|off".
func moduleCommand(h *sim.Host, pos []string) error {
	if len(pos) < 2 {
		return usageErr("module wants NETDEV install|remove|temperature C|rx LANE DBM|bias LANE MA|los LANE on|off")
	}
	nd := pos[0]
	switch pos[1] {
	case "install":
		kind := "osfp"
		if len(pos) == 3 {
			kind = pos[2]
		}
		if len(pos) > 3 {
			return usageErr("module NETDEV install [osfp|dac|sfp28]")
		}
		return h.InstallModuleKind(nd, kind)
	case "remove":
		return h.RemoveModule(nd)
	case "temperature":
		if len(pos) != 3 {
			return usageErr("module NETDEV temperature C")
		}
		v, err := strconv.ParseFloat(pos[2], 64)
		if err != nil {
			return usageErr("temperature %q: %v", pos[2], err)
		}
		return h.SetModule(nd, "temperature", 0, v)
	case "rx", "bias", "los":
		if len(pos) != 4 {
			return usageErr("module NETDEV %s LANE VALUE", pos[1])
		}
		lane, err := strconv.Atoi(pos[2])
		if err != nil {
			return usageErr("lane %q: %v", pos[2], err)
		}
		var v float64
		switch {
		case pos[1] == "los" && pos[3] == "on":
			v = 1
		case pos[1] == "los" && pos[3] == "off":
		case pos[1] == "los":
			return usageErr("los wants on or off, not %q", pos[3])
		default:
			if v, err = strconv.ParseFloat(pos[3], 64); err != nil {
				return usageErr("power %q: %v", pos[3], err)
			}
		}
		return h.SetModule(nd, pos[1], lane, v)
	}
	return usageErr("module: unknown action %q", pos[1])
}

// devlinkCommand is "devlink DEV report|recover REPORTER" and "devlink DEV
// firmware RUNNING STORED".
func devlinkCommand(h *sim.Host, pos []string) error {
	if len(pos) < 3 {
		return usageErr("devlink wants DEV report|recover REPORTER or DEV firmware RUNNING STORED")
	}
	switch pos[1] {
	case "report", "recover":
		return h.DevlinkReport(pos[0], pos[2], pos[1] == "recover")
	case "firmware":
		if len(pos) != 4 {
			return usageErr("devlink DEV firmware RUNNING STORED")
		}
		return h.DevlinkFirmware(pos[0], pos[2], pos[3])
	}
	return usageErr("devlink: unknown action %q", pos[1])
}
